import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Coordinator } from '@jobq/coordinator';
import { createRuntime, reduce, taskState, validateWorkflow, type WorkflowRuntime } from '@jobq/dag-core';
import type { Worker } from '@jobq/worker';
import { resolveConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { coordinatorOptions, createCoordinator, createWorker } from '../../services';
import { cleanEnv, runCli } from '../../test-helpers/cli';
import { startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';
import type { RunReport } from './run';

// `jobq workflow retry ID --task NAME [--downstream]` end to end: a workflow run to completion by
// `jobq workflow run`, one task re-run with what depends on it through the CLI, then applied by a
// coordinator and run by a worker of the deployment (in this process, on Azurite).

/** Every task writes `{"attempt": N}`; e runs only while b's output says attempt 1. */
const ATTEMPT = 'echo "{\\"attempt\\": $JOBQ_WORKFLOW_ATTEMPT}" > "$JOBQ_OUTPUT_FILE"';
const FLOW = JSON.stringify({
  name: 'rerun',
  tasks: [
    { name: 'a', kwargs: { cmd: ATTEMPT } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: ATTEMPT } },
    { name: 'c', depends_on: ['a'], kwargs: { cmd: ATTEMPT } },
    { name: 'd', depends_on: ['b'], kwargs: { cmd: ATTEMPT } },
    { name: 'e', depends_on: ['d', 'b'], condition: 'inputs.b.attempt == 1', kwargs: { cmd: ATTEMPT } },
  ],
});

let storage: TestStorage;
let prefix: string;
let env: NodeJS.ProcessEnv;
let deployment: Deployment;
let coordinator: Coordinator;
let worker: Worker;
let working: Promise<unknown>;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Rerun');
  env = storage.env(prefix);
  const config = resolveConfig({}, env, storage.dir);
  deployment = await openDeployment(config);
  coordinator = createCoordinator(deployment, { ...coordinatorOptions(config), log: () => undefined });
  await coordinator.start();
  worker = await createWorker(deployment, {
    queue: 'default',
    numWorkers: 2,
    maxIdleBackoffInMs: 200,
    gracePeriodInMs: 0,
    env: cleanEnv(),
    log: () => undefined,
  });
  working = worker.run();
});
afterAll(async () => {
  await worker?.stop({ gracePeriodInMs: 0 });
  await working;
  await coordinator?.stop();
  await deployment?.close();
  await storage?.stop();
});

/** The runtime once `until` holds (polled; a safety limit, not an assertion on time). */
async function waitFor(workflowId: string, until: (runtime: WorkflowRuntime) => boolean): Promise<WorkflowRuntime> {
  const limit = Date.now() + 60_000;
  for (;;) {
    const runtime = (await deployment.store.load(workflowId))?.runtime;
    if (runtime !== undefined && until(runtime)) return runtime;
    if (Date.now() > limit) throw new Error(`workflow ${workflowId} did not get there: ${JSON.stringify(runtime?.tasks)}`);
    await sleep(100);
  }
}

function summary(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(
    ['a', 'b', 'c', 'd', 'e'].map((t) => [t, `${taskState(runtime, t)!.status}#${taskState(runtime, t)!.attemptNo}`]),
  );
}

describe('jobq workflow retry --task', () => {
  it('re-runs a completed task and everything below it: next attempts, new outputs, conditions evaluated afresh; the workflow completes again', async () => {
    const file = await storage.file('rerun.yaml', FLOW);
    const ran = await runCli(['workflow', 'run', file, '--json'], { env });
    expect(ran.code).toBe(0);
    const report = JSON.parse(ran.stdout) as RunReport;
    const workflowId = report.workflow_id;
    const first = await waitFor(workflowId, (r) => r.status === 'completed');
    expect(summary(first)).toEqual({ a: 'completed#1', b: 'completed#1', c: 'completed#1', d: 'completed#1', e: 'completed#1' });

    const result = await runCli(['workflow', 'retry', workflowId, '--task', 'b', '--downstream', '--json'], { env });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(doc).toEqual({
      workflow_id: workflowId,
      target: `devstoreaccount1/${prefix}`,
      requested: true,
      task: 'b',
      downstream: true,
      tasks: ['b', 'd', 'e'],
      request_id: expect.stringMatching(/^[a-z0-9]+-[0-9a-f]{16}$/),
      requested_at: expect.any(String),
      message: `Re-run of task "b" and what depends on it requested for workflow ${workflowId} in devstoreaccount1/${prefix}: the coordinator runs b, d, e again.`,
    });

    const again = await waitFor(workflowId, (r) => r.status === 'completed' && r.finishedAt !== first.finishedAt);
    // a and c untouched; b and d ran again with attempt 2 and wrote new outputs; e, whose
    // condition read b's attempt 1, is skipped now that b's output says 2.
    expect(summary(again)).toEqual({ a: 'completed#1', b: 'completed#2', c: 'completed#1', d: 'completed#2', e: 'skipped#1' });
    expect(taskState(again, 'a')!.outputRef).toBe(taskState(first, 'a')!.outputRef);
    expect(JSON.parse(taskState(again, 'b')!.outputRef!)).toEqual({ attempt: 2 });
    expect(JSON.parse(taskState(again, 'd')!.outputRef!)).toEqual({ attempt: 2 });
    expect(taskState(again, 'e')!.error).toBe('condition false: inputs.b.attempt = 2, not == 1');
    expect(again.rerunsApplied?.map((r) => r.id)).toEqual([doc.request_id]);
    expect((await deployment.store.listReruns({ workflowId })).items).toEqual([]);

    // Without --downstream only the task itself runs again.
    const single = await runCli(['workflow', 'retry', workflowId, '--task', 'c'], { env });
    expect(single.code).toBe(0);
    expect(single.stdout).toBe(
      `Re-run of task "c" requested for workflow ${workflowId} in devstoreaccount1/${prefix}: the coordinator runs c again.\n`,
    );
    const third = await waitFor(workflowId, (r) => r.status === 'completed' && taskState(r, 'c')!.attemptNo === 2);
    expect(summary(third)).toEqual({ a: 'completed#1', b: 'completed#2', c: 'completed#2', d: 'completed#2', e: 'skipped#1' });
  });

  it('refuses an unknown task, a task running now and --downstream without --task: one line, exit 2, nothing written', async () => {
    // A workflow whose task `slow` is running (dispatched, as the coordinator records it; no message is sent).
    const parsed = validateWorkflow({
      name: 'busy',
      tasks: [
        { name: 'slow', kwargs: { cmd: 'true' } },
        { name: 'next', depends_on: ['slow'], kwargs: { cmd: 'true' } },
      ],
    });
    if (!parsed.ok) throw new Error('invalid test workflow');
    const now = new Date().toISOString();
    const running = reduce(createRuntime(parsed.value, { workflowId: 'busy-1', now }), { type: 'activate', now }).runtime;
    expect(taskState(running, 'slow')?.status).toBe('running');
    await deployment.store.create(running, 'hash-busy');

    const cases: Array<[string[], string]> = [
      [['--task', 'nope'], 'jobq: --task nope: workflow "busy-1" has no task "nope" (its tasks: slow, next)'],
      [['--task', 'slow', '--downstream'], 'jobq: --task slow: task "slow" is running now (attempt 1): wait until it has finished'],
    ];
    for (const [flags, line] of cases) {
      const result = await runCli(['workflow', 'retry', 'busy-1', ...flags, '--json'], { env });
      const error = { code: 'usage', message: line.replace(/^jobq: /, '') };
      expect({ flags, code: result.code, stdout: JSON.parse(result.stdout) as unknown, stderr: result.stderr.trim().split('\n') }).toEqual({
        flags,
        code: 2,
        stdout: { error },
        stderr: [line],
      });
    }
    const alone = await runCli(['workflow', 'retry', 'busy-1', '--downstream'], { env });
    expect(alone.code).toBe(2);
    expect(alone.stderr.trim().split('\n')).toHaveLength(1);
    expect(alone.stderr).toContain('--task');
    // Nothing was recorded, and the workflow is as it was.
    expect((await deployment.store.listReruns({ workflowId: 'busy-1' })).items).toEqual([]);
    expect(await deployment.store.getWorkflow('busy-1')).toMatchObject({ cancelRequestedAt: null, retryRequestedAt: null });
    expect((await deployment.store.load('busy-1'))?.runtime.updatedAt).toBe(running.updatedAt);
  });
});
