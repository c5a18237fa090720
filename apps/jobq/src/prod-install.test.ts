import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, type CliResult } from './test-helpers/cli';

// The production install of the container image (deploy/README.md): `pnpm --filter @jobq/cli
// --prod deploy --legacy --no-optional OUT` (scripts/prod-deploy.js). One deploy per run; the
// package's test script has built the CLI and turbo its dependencies.

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { deployCli, measureDeploy } = require('../../../scripts/prod-deploy.js') as {
  deployCli: (out: string, options?: { optional?: boolean }) => void;
  measureDeploy: (out: string) => { bytes: number; packages: number; names: string[] };
};

/** The install budget: everything the image needs (Storage and Service Bus adapters, metrics). */
const BUDGET_BYTES = 90_000_000;

// NODE_ENV as in the image (jest sets `test`, which makes oclif look for TypeScript sources); no
// NODE_PATH (pnpm's bin shims point it into the workspace's node_modules, where @jobq/local is).
function imageEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv({ NODE_ENV: 'production' });
  delete env.NODE_PATH;
  return env;
}

function run(args: readonly string[], cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(out, 'bin', 'run.js'), ...args], {
      env: imageEnv(),
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

let dir: string;
let out: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'jobq-prod-'));
  out = join(dir, 'app');
  deployCli(out);
}, 180_000);
// Thousands of files: a detached rm deletes them after jest moves on.
afterAll(() => spawn('rm', ['-rf', dir], { detached: true, stdio: 'ignore' }).unref());

describe('the production install (--prod --no-optional)', () => {
  it('stays within 90 MB and holds no Azurite, jest or babel', () => {
    const size = measureDeploy(out);
    expect(size.bytes).toBeLessThanOrEqual(BUDGET_BYTES);
    expect(size.names.filter((name) => /^(azurite|jest|@jest\/.*|@babel\/.*|@jobq\/local|@jobq\/servicebus-emulator)$/.test(name))).toEqual(
      [],
    );
    for (const folder of ['azurite', 'jest', '@jest', '@babel', '@jobq/local'])
      expect(existsSync(join(out, 'node_modules', folder))).toBe(false);
    // What the image runs is there: both queue backends, the store, metrics.
    expect(size.names).toEqual(
      expect.arrayContaining(['@azure/identity', '@azure/service-bus', '@azure/storage-queue', '@azure/data-tables', 'prom-client']),
    );
    // The task helpers (`jobq task …`), and the worker's deprecated `@jobq/worker/task` finds them.
    expect(existsSync(join(out, 'node_modules', '@jobq', 'task', 'dist', 'index.js'))).toBe(true);
    // Loaded by plain Node (jest would map the names onto the sources).
    const shim = execFileSync(process.execPath, ['-e', "process.stdout.write(typeof require('@jobq/worker/task').setOutput)"], {
      cwd: out,
    }).toString();
    expect(shim).toBe('function');
  });

  it('runs --version and the worker help', async () => {
    expect(await run(['--version'], dir)).toMatchObject({ code: 0, stdout: expect.stringMatching(/^@jobq\/cli\/0\.1\.0 /) });
    expect(await run(['worker', '--help'], dir)).toMatchObject({ code: 0, stdout: expect.stringContaining('--queue') });
  });

  it('refuses the embedded stack in one line, exit 1: workflow run without storage, and jobq dev', async () => {
    const file = join(dir, 'one.yaml');
    writeFileSync(file, 'name: one\ntasks:\n  - name: a\n    kwargs:\n      cmd: "true"\n');
    const runResult = await run(['workflow', 'run', file], dir);
    expect(runResult.code).toBe(1);
    expect(runResult.stderr).toContain('the embedded stack is not installed in this image');
    expect(runResult.stderr.trim().split('\n')).toHaveLength(1);
    const dev = await run(['dev'], dir);
    expect(dev.code).toBe(1);
    expect(dev.stderr).toContain('the embedded stack is not installed in this image');
  });
});
