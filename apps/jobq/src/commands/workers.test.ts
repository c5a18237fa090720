import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Coordinator } from '@jobq/coordinator';
import type { WorkerRecord } from '@jobq/ports';
import { configFromFlags } from '../flags';
import { openDeployment, type Deployment } from '../deployment';
import { createCoordinator } from '../services';
import { CLI, runCli } from '../test-helpers/cli';
import { schemaErrors } from '../test-helpers/json-schema';
import { startTestStorage, uniquePrefix, type TestStorage } from '../test-helpers/storage';

// The new user's case (docs/design.md#placement): a task on queue `cpu` while only a `default`
// worker runs. Workers beat every second here so the test takes a few seconds.

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
let coordinator: Coordinator;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Hb');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  coordinator = createCoordinator(deployment, {
    receiveWaitInMs: 100,
    idleSleepInMs: 50,
    cancelPollIntervalInMs: 200,
    statsIntervalInMs: 500,
    log: () => {},
  });
  await coordinator.start();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await coordinator?.stop();
  await storage.stop();
});

function startWorker(queue: string): { child: ChildProcessWithoutNullStreams; exited: Promise<number | null>; output: () => string } {
  const child = spawn(process.execPath, [CLI, 'worker', '--queue', queue, '--heartbeat-interval', '1s', '--max-idle-backoff', '500ms'], {
    env: storage.env(prefix),
    cwd: storage.dir,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stdin.end();
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exited, output: () => output };
}

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined>, deadlineInMs = 60_000): Promise<T> {
  const end = Date.now() + deadlineInMs;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== null && value !== undefined) return value;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const workerOn = (queue: string) => async (): Promise<WorkerRecord | undefined> =>
  (await deployment.workers.list()).find((w) => w.queues.some((q) => q.queue === queue));

interface DoctorDoc {
  ok: boolean;
  checks: Array<{ name: string; status: string; message: string; hint: string | null }>;
}

describe('worker heartbeats, jobq workers, placement and doctor (Azurite)', () => {
  it('a cpu task with only a default worker: doctor fails at once, passes once a cpu worker runs; workers and status show where the task runs', async () => {
    const idle = startWorker('default');
    await waitFor('the default worker heartbeat', workerOn('default'));
    const { workflowId } = await deployment.client.submit({
      text: 'name: hb\ntasks:\n  - name: work\n    queue: cpu\n    kwargs: {cmd: "sleep 60"}\n',
      filename: 'hb.yaml',
    });
    await waitFor('the dispatch', async () => ((await deployment.client.status(workflowId))?.counts.running === 1 ? true : null));

    const failing = await runCli(['workflow', 'doctor', '--json'], { env: storage.env(prefix) });
    expect(failing.code).toBe(1);
    const failed = JSON.parse(failing.stdout) as DoctorDoc;
    expect(failed.checks.find((c) => c.name === 'workers')).toMatchObject({
      status: 'fail',
      message: 'no worker has read queue cpu in the last 2 min',
    });
    expect(failed.checks.filter((c) => c.status === 'fail').map((c) => c.name)).toEqual(['workers']);

    const busy = startWorker('cpu');
    const row = await waitFor('the cpu worker running the task', async () => {
      const w = await workerOn('cpu')();
      return w !== undefined && w.running.length > 0 ? w : null;
    });
    expect(row.running.map((r) => r.id)).toEqual([`${workflowId}/work/1`]);

    const passing = await runCli(['workflow', 'doctor', '--json'], { env: storage.env(prefix) });
    const passed = JSON.parse(passing.stdout) as DoctorDoc;
    expect(passed.checks.find((c) => c.name === 'workers')).toMatchObject({
      status: 'ok',
      message: expect.stringContaining('cpu (1 worker, 1 slot)'),
    });
    expect(passing.code).toBe(0);

    const listed = await runCli(['workers', '--queue', 'cpu', '--json'], { env: storage.env(prefix) });
    expect(listed.code).toBe(0);
    const doc = JSON.parse(listed.stdout) as {
      workers: Array<{ worker_id: string; state: string; queues: unknown[]; running: Array<{ id: string }> }>;
    };
    expect(schemaErrors('workers', doc)).toEqual([]);
    expect(doc.workers).toHaveLength(1);
    expect(doc.workers[0]).toMatchObject({
      worker_id: row.workerId,
      state: 'ok',
      queues: [{ queue: 'cpu', slots: 1, busy: 1, last_receive_at: expect.any(String) }],
    });
    const text = await runCli(['workers'], { env: storage.env(prefix) });
    expect(text.stdout).toMatch(/Worker\s+Host\s+State\s+Age\s+Queues \(busy\/slots\)\s+Running/);
    expect(text.stdout).toMatch(new RegExp(`${row.workerId}\\s+\\S+\\s+ok\\s+\\d+s\\s+cpu 1/1\\s+${workflowId}/work/1`));
    expect(text.stdout).toMatch(/default 0\/1\s+-/);

    const status = await runCli(['workflow', 'status', workflowId], { env: storage.env(prefix) });
    expect(status.stdout).toMatch(
      new RegExp(`Placement\\n  work: running on ${row.workerId} \\(${row.host.replace(/\./g, '\\.')}\\) for \\d+s`),
    );
    const statusJson = JSON.parse((await runCli(['workflow', 'status', workflowId, '--json'], { env: storage.env(prefix) })).stdout) as {
      tasks: Array<{ placement: unknown }>;
    };
    expect(statusJson.tasks[0]?.placement).toMatchObject({ state: 'on_worker', worker_id: row.workerId, host: row.host, queue: 'cpu' });
    expect(schemaErrors('workflow-status', statusJson)).toEqual([]);

    // SIGINT twice: stop, and abort the running task (its message goes back to the queue).
    busy.child.kill('SIGINT');
    await sleep(300);
    busy.child.kill('SIGINT');
    idle.child.kill('SIGTERM');
    expect(await busy.exited).toBe(0);
    expect(await idle.exited).toBe(0);
    // A clean stop deletes the rows.
    expect(await deployment.workers.list()).toEqual([]);
  });

  it('the local workers of `jobq workflow run` write heartbeats: `jobq workers` lists them during the run, their rows go at the end', async () => {
    const marker = join(storage.dir, 'run-hb-go');
    const file = join(storage.dir, 'run-hb.yaml');
    writeFileSync(
      file,
      `name: run-hb\ntasks:\n  - name: wait\n    queue: runhb\n    kwargs: {cmd: "while [ ! -f '${marker}' ]; do sleep 0.1; done"}\n`,
    );
    const child = spawn(process.execPath, [CLI, 'workflow', 'run', file, '--workers', '1'], {
      env: storage.env(prefix),
      cwd: storage.dir,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stdin.end();
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      // The first beat goes out as the worker starts (the next one in 30 s).
      const row = await waitFor('the run worker heartbeat', workerOn('runhb'));
      expect(row.queues).toEqual([expect.objectContaining({ queue: 'runhb', slots: 1 })]);
      const listed = await runCli(['workers', '--queue', 'runhb', '--json'], { env: storage.env(prefix) });
      expect(listed.code).toBe(0);
      const doc = JSON.parse(listed.stdout) as { workers: Array<{ worker_id: string; state: string; version: string }> };
      expect(doc.workers).toEqual([expect.objectContaining({ worker_id: row.workerId, state: 'ok' })]);
      expect(row.version).not.toBe('unknown');
    } finally {
      writeFileSync(marker, '');
    }
    expect(await exited).toBe(0);
    expect(output).toMatch(/completed/);
    expect(await workerOn('runhb')()).toBeUndefined();
  });
});
