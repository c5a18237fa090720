import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Worker } from '@jobq/worker';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { createWorker } from '../../services';
import { exitOf, pollUntil, runCli, startCli, type RunningCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
const started: RunningCli[] = [];
let worker: Worker | null = null;

beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Coord');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
});
afterAll(async () => {
  await worker?.stop({ gracePeriodInMs: 0 });
  for (const running of started) running.child.kill('SIGKILL');
  await storage.stop();
});

describe('jobq workflow coordinator', () => {
  it('runs a submitted workflow to completion with a worker, refuses a second coordinator, stops cleanly on SIGTERM', async () => {
    const env = storage.env(prefix);
    const coordinator = startCli(
      ['workflow', 'coordinator', '--idle-sleep', '0.2', '--cancel-poll-interval-s', '0.2', '--retention', '30d'],
      env,
    );
    started.push(coordinator);
    await pollUntil('the coordinator to start', () => coordinator.stderr().includes('Coordinator running'));
    expect(coordinator.stderr()).toContain(`Coordinator for devstoreaccount1/${prefix}`);
    expect(coordinator.stderr()).toContain('batch-size=32 (default)');
    expect(coordinator.stderr()).toContain('idle-sleep=0.2 (flag --idle-sleep)');
    expect(coordinator.stderr()).toContain('retention=30d (flag --retention)');
    // The old spelling of --cancel-poll-interval (seconds) still works, with one warning line.
    expect(coordinator.stderr()).toContain(
      'jobq: warning: --cancel-poll-interval-s (seconds) is deprecated and goes in the next minor version: use --cancel-poll-interval 0.2s\n',
    );
    expect(coordinator.stderr()).toContain('cancel-poll-interval=0.2 (flag --cancel-poll-interval)');

    const second = await runCli(['workflow', 'coordinator'], { env });
    expect(second.code).toBe(1);
    const errorLines = second.stderr.split('\n').filter((l) => l.startsWith('jobq:'));
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]).toContain('lease-held');

    const submitted = await runCli(['workflow', 'submit', await storage.file('two.yaml', TWO_TASKS)], { env });
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();

    worker = await createWorker(await openDeployment(configFromFlags({}, env)), {
      queue: 'default',
      numWorkers: 2,
      maxIdleBackoffInMs: 200,
      log: () => {},
    });
    const workerRun = worker.run();
    await pollUntil(
      'the workflow to complete',
      async () => (await deployment.client.status(id, { detail: true }))?.runtime?.status === 'completed',
    );
    await worker.stop();
    await workerRun;
    worker = null;

    const status = await runCli(['workflow', 'status', id, '--json'], { env });
    expect(JSON.parse(status.stdout)).toMatchObject({ status: 'completed', counts: { completed: 2 } });

    coordinator.child.kill('SIGTERM');
    expect(await exitOf(coordinator)).toBe(0);
    const stopped = /Coordinator stopped — (\d+) completions, (\d+) tasks pushed, (\d+) batches/.exec(coordinator.stderr());
    expect(stopped).not.toBeNull();
    expect(Number(stopped?.[1])).toBeGreaterThanOrEqual(2);
    expect(Number(stopped?.[2])).toBeGreaterThanOrEqual(2);
    expect(Number(stopped?.[3])).toBeGreaterThanOrEqual(1);
  });

  it('break-lease needs --yes without a terminal, and a coordinator whose lease is broken exits 1', async () => {
    const env = storage.env(prefix);
    const refused = await runCli(['workflow', 'break-lease'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');

    const coordinator = startCli(['workflow', 'coordinator'], env);
    started.push(coordinator);
    await pollUntil('the coordinator to start', () => coordinator.stderr().includes('Coordinator running'));
    const broken = await runCli(['workflow', 'break-lease', '-y'], { env });
    expect(broken.code).toBe(0);
    expect(broken.stdout).toBe(`Lease broken for devstoreaccount1/${prefix}.\n`);
    expect(await exitOf(coordinator)).toBe(1);
    expect(coordinator.stderr()).toContain('lease-lost');
  });
});
