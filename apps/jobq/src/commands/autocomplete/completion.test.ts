import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { AZURITE_ACCOUNT_KEY } from '@jobq/local';
import { configFromFlags } from '../../flags';
import { openDeployment } from '../../deployment';
import { cleanEnv, runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

// Shell completion (docs/cli.md#shell-completion): @oclif/plugin-autocomplete writes the bash and zsh
// functions of the commands and flags; jobq adds workflow ids (`jobq autocomplete workflow-ids`).

let dir: string;
let storage: TestStorage;
let prefix: string;
let id: string;
/** A TCP server standing in for a storage account: it counts connections and never answers. */
let silent: Server;
let silentPort: number;
const accepted: Socket[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'jobq-completion-'));
  storage = await startTestStorage();
  prefix = uniquePrefix('Complete');
  const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  id = (await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'complete-me-1' })).workflowId;
  silent = createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentPort = (silent.address() as { port: number }).port;
});

afterAll(async () => {
  for (const socket of accepted) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
  await storage.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A connection string whose every endpoint is the silent server. */
function silentConnectionString(): string {
  const endpoint = (kind: string): string => `${kind}Endpoint=http://127.0.0.1:${silentPort}/devstoreaccount1`;
  return `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_ACCOUNT_KEY};${endpoint('Blob')};${endpoint('Queue')};${endpoint('Table')};`;
}

describe('jobq autocomplete SHELL', () => {
  it('writes a bash function that completes commands, flags and the workflow ids of the id commands', async () => {
    const cache = join(dir, 'cache-bash');
    const result = await runCli(['autocomplete', 'bash'], { env: cleanEnv({ JOBQ_CACHE_DIR: cache }), cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('jobq autocomplete script bash');
    const script = readFileSync(join(cache, 'autocomplete', 'functions', 'bash', 'jobq.bash'), 'utf8');
    expect(script).toMatch(/\nworkflow:status --debug --prefix .*--json/);
    expect(script).toMatch(/\nworkflow:run --debug .*--params-file/);
    expect(script).toContain('\n      cancel|explain|logs|outputs|retry|status|tasks|watch)\n');
    expect(script).toContain('complete -F _jobq_autocomplete_with_ids jobq');

    // The function in bash, with a jobq on the PATH that prints two ids.
    const bin = join(dir, 'fake-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'jobq'), '#!/bin/sh\n[ "$1 $2" = "autocomplete workflow-ids" ] && printf "run-1\\nrun-2\\nother\\n"\n');
    chmodSync(join(bin, 'jobq'), 0o755);
    const complete = (words: string[]): string => {
      const line = `source ${JSON.stringify(join(cache, 'autocomplete', 'functions', 'bash', 'jobq.bash'))}; COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')}); COMP_CWORD=${words.length - 1}; _jobq_autocomplete_with_ids; echo "\${COMPREPLY[*]}"`;
      return spawnSync('bash', ['-c', line], { encoding: 'utf8', env: { PATH: [bin, '/usr/bin', '/bin'].join(delimiter) } }).stdout.trim();
    };
    expect(complete(['jobq', 'workflow', 'status', 'run'])).toBe('run-1 run-2');
    expect(complete(['jobq', 'workflow', 'sta'])).toBe('status');
    expect(complete(['jobq', 'workflow', 'status', '--js'])).toBe('--json');
  });

  it('writes a zsh function with the topics, commands and flags, ids for the id commands', async () => {
    const cache = join(dir, 'cache-zsh');
    const result = await runCli(['autocomplete', 'zsh'], { env: cleanEnv({ JOBQ_CACHE_DIR: cache }), cwd: dir });
    expect(result.code).toBe(0);
    const script = readFileSync(join(cache, 'autocomplete', 'functions', 'zsh', '_jobq'), 'utf8');
    expect(script.startsWith('#compdef jobq\n')).toBe(true);
    expect(script).toContain('"workflow[Submit, run, watch and operate workflow DAGs]"');
    expect(script).toContain('"status[Show the status of one workflow]"');
    // The case of a workflow command: from its name to the ";;" that ends it.
    const block = (command: string): string => {
      const start = script.indexOf(`\n        "${command}")\n`);
      return start < 0 ? '' : script.slice(start, script.indexOf('\n        ;;', start));
    };
    expect(block('status')).toContain('--json"[');
    expect(block('status')).toMatch(/"\*: :_jobq_workflow_ids"$/);
    expect(block('run')).toMatch(/"\*: :_files"$/);
    expect(script).toContain('_jobq_workflow_ids() {');
  });
});

describe('jobq autocomplete workflow-ids', () => {
  it('prints the ids of the configured deployment', async () => {
    // A long limit: a loaded machine may take seconds to load the SDKs (the default 1.5 s is for a shell).
    const result = await runCli(['autocomplete', 'workflow-ids', '--timeout', '60s'], { env: storage.env(prefix), cwd: dir });
    expect(result).toEqual({ code: 0, stdout: `${id}\n`, stderr: '' });
  });

  it('touches no storage when no deployment is configured', async () => {
    const before = accepted.length;
    const env = cleanEnv({
      JOBQ_STORAGE_CONNECTION_STRING: silentConnectionString(),
      AZURE_STORAGE_CONNECTION_STRING: silentConnectionString(),
    });
    const result = await runCli(['autocomplete', 'workflow-ids'], { env, cwd: dir });
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
    // The old spelling of --timeout (milliseconds) still works, with one warning line.
    const old = await runCli(['autocomplete', 'workflow-ids', '--timeout-ms', '300'], { env, cwd: dir });
    expect(old).toEqual({
      code: 0,
      stdout: '',
      stderr: 'jobq: warning: --timeout-ms (milliseconds) is deprecated and goes in the next minor version: use --timeout 300ms\n',
    });
    expect(accepted.length).toBe(before);
    // The same storage with a prefix configured is asked, and its silence ends in nothing printed, exit 0.
    const configured = await runCli(['autocomplete', 'workflow-ids', '--timeout', '300ms'], {
      env: { ...env, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Silent' },
      cwd: dir,
    });
    expect(configured).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(accepted.length).toBeGreaterThan(before);
  });
});
