import { describe, expect, it } from '@jest/globals';
import {
  createRuntime,
  reduce,
  taskState,
  validateWorkflow,
  withTaskStates,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import type { Deployment } from '../../deployment';
import { readActiveWork, type DoctorSettings } from './doctor';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number): string => new Date(T0 + ms).toISOString();

function runtimeOf(tasks: Array<Record<string, unknown>>, events: WorkflowEvent[]): WorkflowRuntime {
  const checked = validateWorkflow({ name: 'w', max_parallelism: 1, tasks: tasks.map((t) => ({ kwargs: { cmd: 'x' }, ...t })) });
  if (!checked.ok) throw new Error('invalid test definition');
  let runtime = createRuntime(checked.value, { workflowId: 'wf', now: iso(0), outputsContainer: null });
  for (const event of events) runtime = reduce(runtime, event).runtime;
  return runtime;
}

/** A deployment that lists and loads these runtimes, and nothing else. */
function deploymentOf(runtimes: WorkflowRuntime[]): Deployment {
  const summaries = runtimes.map((r) => ({ workflowId: r.workflowId, status: r.status, updatedAt: r.updatedAt }));
  return {
    client: { list: () => Promise.resolve({ items: summaries, continuationToken: null }) },
    store: { load: (id: string) => Promise.resolve({ runtime: runtimes.find((r) => r.workflowId === id)! }) },
  } as unknown as Deployment;
}

const settings: DoctorSettings = {
  stalePendingMs: MINUTE,
  staleRunningMs: 30 * MINUTE,
  staleReadyMs: 10 * MINUTE,
  staleStatsMs: MINUTE,
  staleQueueMs: MINUTE,
  maxWorkflows: 50,
};

describe('doctor: running and ready tasks of the active workflows (explainRuntime)', () => {
  it('flags a long-running task and a ready task nothing holds back, not one max_parallelism holds', async () => {
    // a runs; b is ready behind max_parallelism 1.
    const held = runtimeOf([{ name: 'a' }, { name: 'b' }], [{ type: 'activate', now: iso(0) }]);
    const work = await readActiveWork(deploymentOf([held]), settings, 1, T0 + 40 * MINUTE);
    expect(work).toMatchObject({ ok: true, scope: 'in 1 active workflow', longRunning: ['wf/a (40m)'], stuckReady: [] });
    if (work.ok) expect([...work.dispatched]).toEqual([['default', 2]]);
  });

  it('counts a ready task as stuck when only a retry waiting for its delay fills max_parallelism (it holds no slot)', async () => {
    const ran = runtimeOf(
      [{ name: 'a', num_retries: 1, retry_delay_s: 3600 }, { name: 'b' }],
      [
        { type: 'activate', now: iso(0) },
        { type: 'completion', taskName: 'a', attemptNo: 1, success: false, outputRef: null, error: 'boom', now: iso(1000) },
      ],
    );
    // b was dispatched into the free slot; as if that step was lost, b is ready again.
    const lost = withTaskStates(ran, [['b', { ...taskState(ran, 'b')!, status: 'ready', attemptNo: 0, dispatchedAt: null }]]);
    const work = await readActiveWork(deploymentOf([lost]), settings, 1, T0 + 20 * MINUTE);
    expect(work).toMatchObject({ ok: true, longRunning: [], stuckReady: ['wf/b (19m)'] });
  });
});
