import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Coordinator } from '@jobq/coordinator';
import type { Worker } from '@jobq/worker';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { createCoordinator, createWorker } from '../../services';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

const FAILING =
  'name: failing\ntasks:\n  - name: ok\n    kwargs: {cmd: echo ok}\n  - name: bad\n    depends_on: [ok]\n    kwargs: {cmd: exit 3}\n  - name: after\n    depends_on: [bad]\n    kwargs: {cmd: echo never}\n';
const CONDITIONAL =
  'name: conditional\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    condition: inputs.a == 1\n    kwargs: {cmd: echo b}\n';
/** `inputs.a.acc` against an output `{"accuracy": 0.95, "loss": 0.1}`: a misspelled field. */
const MISSPELLED =
  'name: misspelled\ntasks:\n  - name: a\n    kwargs: {cmd: "echo \'{\\"accuracy\\": 0.95, \\"loss\\": 0.1}\' > \\"$JOBQ_OUTPUT_FILE\\""}\n' +
  '  - name: b\n    depends_on: [a]\n    condition: inputs.a.acc > 0.9\n    kwargs: {cmd: echo b}\n';
const MISSING_REASON = 'condition false: output of "a" has no field "acc"; it has: accuracy, loss';

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
let coordinator: Coordinator;
let worker: Worker;
let working: Promise<unknown>;

beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Watch');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  coordinator = createCoordinator(deployment, {
    receiveWaitInMs: 100,
    idleSleepInMs: 50,
    cancelPollIntervalInMs: 200,
    statsIntervalInMs: 500,
    log: () => {},
  });
  await coordinator.start();
  worker = await createWorker(deployment, { queue: 'default', numWorkers: 2, maxIdleBackoffInMs: 200, log: () => {} });
  working = worker.run();
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'two-ok' });
  await deployment.client.submit({ text: FAILING, filename: 'failing.yaml' }, { id: 'two-bad' });
  await deployment.client.submit({ text: CONDITIONAL, filename: 'conditional.yaml' }, { id: 'cond-1' });
  await deployment.client.submit({ text: MISSPELLED, filename: 'misspelled.yaml' }, { id: 'cond-missing' });
});
afterAll(async () => {
  await worker?.stop({ gracePeriodInMs: 0 });
  await working?.catch(() => undefined);
  await coordinator?.stop();
  await storage.stop();
});

describe('jobq workflow watch', () => {
  it('follows a workflow to completion and exits 0', async () => {
    const result = await runCli(['workflow', 'watch', 'two-ok', '--interval', '200ms'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/completed\s+\[#+\] 100%/);
    expect(result.stdout).toContain('two (two-ok)  completed');
    expect(result.stdout).toMatch(/2\/2/);
  });

  it('exits 1 when the workflow fails, naming the failed task', async () => {
    const result = await runCli(['workflow', 'watch', 'two-bad', '--interval', '200ms', '--by-layer'], { env: storage.env(prefix) });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/failing \(two-bad\)\s+failed/);
    expect(result.stdout).toMatch(/Layer\s+Total/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^jobq: workflow "two-bad" failed: task "bad" failed/);
  });

  it('prints only the final status as one JSON document with --json', async () => {
    const done = await runCli(['workflow', 'watch', 'two-ok', '--json', '--interval', '200ms'], { env: storage.env(prefix) });
    expect(done.code).toBe(0);
    const doc = JSON.parse(done.stdout) as {
      workflow_id: string;
      status: string;
      total: number;
      counts: Record<string, number>;
      failed_tasks: unknown[];
    };
    expect(doc).toMatchObject({ workflow_id: 'two-ok', status: 'completed', total: 2, failed_tasks: [] });
    expect(doc.counts).toMatchObject({ completed: 2, failed: 0 });

    const failed = await runCli(['workflow', 'watch', 'two-bad', '--json', '--interval', '200ms'], { env: storage.env(prefix) });
    expect(failed.code).toBe(1);
    const failedDoc = JSON.parse(failed.stdout) as { status: string; failed_tasks: Array<{ name: string; status: string }> };
    expect(failedDoc.status).toBe('failed');
    expect(failedDoc.failed_tasks.map((t) => [t.name, t.status])).toEqual([
      ['bad', 'failed'],
      ['after', 'upstream_failed'],
    ]);
  });

  it('rejects a bad interval (exit 2) and an unknown workflow (exit 1)', async () => {
    const interval = await runCli(['workflow', 'watch', 'two-ok', '--interval', 'soon'], { env: storage.env(prefix) });
    expect(interval.code).toBe(2);
    expect(interval.stderr.trim().split('\n')).toHaveLength(1);
    const unknown = await runCli(['workflow', 'watch', 'no-such-workflow'], { env: storage.env(prefix) });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('workflow "no-such-workflow" does not exist');
  });
});

describe('jobq workflow explain of finished tasks', () => {
  it('shows a false condition and the inputs it read', async () => {
    const watched = await runCli(['workflow', 'watch', 'cond-1', '--json', '--interval', '200ms'], { env: storage.env(prefix) });
    expect(watched.code).toBe(0);
    const result = await runCli(['workflow', 'explain', 'cond-1', '--task', 'b'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/b\s+skipped/);
    expect(result.stdout).toContain('- skipped: condition false: inputs.a is null (a completed without an output)');
    expect(result.stdout).toContain('condition: inputs.a == 1');
    expect(result.stdout).toMatch(/a \(completed\) = /);
  });
});

describe('skip reasons in the human output of watch, status and explain', () => {
  it('name the missing field and the fields the output has', async () => {
    const watched = await runCli(['workflow', 'watch', 'cond-missing', '--interval', '200ms'], { env: storage.env(prefix) });
    expect(watched.code).toBe(0);
    expect(watched.stdout).toContain(`skipped: b: ${MISSING_REASON}\n`);

    const status = await runCli(['workflow', 'status', 'cond-missing'], { env: storage.env(prefix) });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Skipped tasks (1)\n  b: ${MISSING_REASON}\n`);
    const json = await runCli(['workflow', 'status', 'cond-missing', '--json'], { env: storage.env(prefix) });
    const doc = JSON.parse(json.stdout) as { tasks: Array<{ task_name: string; skip_reason: string | null }> };
    expect(doc.tasks.map((t) => [t.task_name, t.skip_reason])).toEqual([
      ['a', null],
      ['b', MISSING_REASON],
    ]);

    const explained = await runCli(['workflow', 'explain', 'cond-missing'], { env: storage.env(prefix) });
    expect(explained.code).toBe(0);
    expect(explained.stdout).toContain(`Skipped tasks (1)\n  b: ${MISSING_REASON}\n`);
    const task = await runCli(['workflow', 'explain', 'cond-missing', '--task', 'b'], { env: storage.env(prefix) });
    expect(task.code).toBe(0);
    expect(task.stdout).toContain(`  - skipped: ${MISSING_REASON}\n`);
  });
});
