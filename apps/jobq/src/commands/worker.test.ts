import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Coordinator } from '@jobq/coordinator';
import { type WorkflowRuntime } from '@jobq/dag-core';
import { encodeEnvelope } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { resolveConfig, type CliConfig } from '../config';
import { openDeployment, type Deployment } from '../deployment';
import { openPlainQueue } from '../plain-queue';
import { coordinatorOptions, createCoordinator } from '../services';
import { CLI, cleanEnv, runCli } from '../test-helpers/cli';

let storage: LocalStorage;
let dir: string;
let config: CliConfig;
let deployment: Deployment;
let coordinator: Coordinator;

beforeAll(async () => {
  storage = await startAzurite();
  dir = await mkdtemp(join(tmpdir(), 'jobq-worker-'));
  config = resolveConfig({ prefix: 'devstoreaccount1/WorkerTest' }, { JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }, dir);
  deployment = await openDeployment(config);
  coordinator = createCoordinator(deployment, { ...coordinatorOptions(config), idleSleepInMs: 100, log: () => undefined });
  await coordinator.start();
});

afterAll(async () => {
  await coordinator?.stop();
  await storage?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exited: Promise<number | null>;
}

/** `node bin/run.js ARGS…` kept running (runCli waits for the end). */
function startCli(args: readonly string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stdin.end();
  const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve(code);
    }),
  );
  return { child, output: () => output, exited };
}

async function waitFor<T>(what: string, probe: () => Promise<T | null>, deadlineInMs = 60_000): Promise<T> {
  const end = Date.now() + deadlineInMs;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== null) return value;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('jobq worker', () => {
  it('runs workflow tasks from its queue (positional ACCOUNT/QUEUE), with its own jobq on their PATH, and stops on SIGTERM with exit 0', async () => {
    const submitted = await deployment.client.submit({
      text: [
        'name: via-worker',
        'default_queue: devstoreaccount1/work',
        'tasks:',
        '  - name: a',
        // `jobq` comes from the worker: the PATH below holds none.
        '    kwargs: {cmd: "jobq task set-output --json \'{\\"n\\": 1}\'"}',
        '  - name: b',
        '    depends_on: [a]',
        '    kwargs: {cmd: "test -s \\"$JOBQ_WORKFLOW_UPSTREAM_REFS\\" && echo 2 > \\"$JOBQ_OUTPUT_FILE\\""}',
        '',
      ].join('\n'),
    });
    const worker = startCli(['devstoreaccount1/work', 'worker', '--num-workers', '2', '--max-idle-backoff', '500ms'], {
      JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/WorkerTest',
      JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString,
      PATH: '/usr/bin:/bin',
    });
    let runtime: WorkflowRuntime;
    try {
      runtime = await waitFor('the workflow to finish', async () => {
        const loaded = await deployment.store.load(submitted.workflowId);
        return loaded !== null && ['completed', 'failed', 'cancelled'].includes(loaded.runtime.status) ? loaded.runtime : null;
      });
    } finally {
      worker.child.kill('SIGTERM');
    }
    const code = await worker.exited;
    expect(runtime.status).toBe('completed');
    expect(await deployment.outputs.getOutput(runtime.tasks.a?.outputRef ?? null)).toEqual({ n: 1 });
    expect(await deployment.outputs.getOutput(runtime.tasks.b?.outputRef ?? null)).toBe(2);
    expect(code).toBe(0);
    expect(worker.output()).toContain('SIGTERM');
  });

  it('runs plain shell tasks with no workflow prefix and exits after --idle-timeout', async () => {
    const marker = join(dir, 'plain-done');
    const plainConfig = resolveConfig({}, { JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }, dir);
    const queue = await openPlainQueue(plainConfig, 'devstoreaccount1/plain');
    await queue.send({ body: encodeEnvelope({ id: 'plain-1', kwargs: { cmd: `echo hello > "${marker}"` }, numRetries: 0 }) });
    const result = await runCli(['worker', '--queue', 'devstoreaccount1/plain', '--idle-timeout', '2s', '--max-idle-backoff', '0.5'], {
      env: cleanEnv({ JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }),
      cwd: dir,
    });
    expect(result.code).toBe(0);
    expect(existsSync(marker)).toBe(true);
    expect((await readFile(marker, 'utf8')).trim()).toBe('hello');
    expect(result.stderr).toContain('1 succeeded');
  });

  it('stops with a clear error when a workflow task reaches a worker with no prefix, leaving the message', async () => {
    const plainConfig = resolveConfig({}, { JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }, dir);
    const queue = await openPlainQueue(plainConfig, 'devstoreaccount1/unconfigured');
    await queue.send({
      body: encodeEnvelope({ id: 'wf-1', kwargs: { __workflow_id: 'w1', __workflow_task: 'a', cmd: 'true' }, numRetries: 0 }),
    });
    const result = await runCli(['devstoreaccount1/unconfigured', 'worker', '--max-idle-backoff', '0.5'], {
      env: cleanEnv({ JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }),
      cwd: dir,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/jobq: invalid-config: .*JOBQ_WORKFLOW_PREFIX/);
    expect(await queue.approximateMessageCount()).toBe(1);
  });

  it('refuses a malformed JOBQ_MAX_DELIVERIES with a clear configuration error', async () => {
    const result = await runCli(['worker', '--queue', 'work'], { env: cleanEnv({ JOBQ_MAX_DELIVERIES: 'lots' }), cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/invalid-config: JOBQ_MAX_DELIVERIES must be an integer from 1 to 999999999, got "lots"/);
  });

  it('refuses a malformed duration with a usage error (exit 2, one line)', async () => {
    const result = await runCli(['worker', '--queue', 'work', '--idle-timeout', 'soon']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--idle-timeout');
  });
});
