import { taskStatus } from './access';
import type { Step } from './step';
import { isBlocking, isTerminalWorkflowStatus, type TaskCounts, type WorkflowRuntime, type WorkflowStatus } from './types';

type StatusFields = Pick<WorkflowRuntime, 'corruptReason' | 'cancelRequested' | 'activated' | 'definition'> & { counts: TaskCounts };

/** The workflow status, from the counts and, once every task is terminal, whether a sink is blocking. */
function decide(rt: StatusFields, sinkBlocking: () => boolean): WorkflowStatus {
  const c = rt.counts;
  if (rt.corruptReason !== null) return 'corrupt';
  if (rt.cancelRequested) return c.ready + c.running > 0 ? 'cancelling' : 'cancelled';
  if (!rt.activated) return 'pending';
  if (c.pending + c.ready + c.running > 0) return 'running';
  if (c.completed === 0) return 'failed';
  if (rt.definition.resultPolicy === 'all_tasks_succeed') {
    return c.failed + c.upstream_failed + c.cancelled > 0 ? 'failed' : 'completed';
  }
  return sinkBlocking() ? 'failed' : 'completed';
}

/** The workflow status, from the counts and, once every task is terminal, the sinks. */
export function workflowStatus(rt: WorkflowRuntime, sinks: readonly string[]): WorkflowStatus {
  return decide(rt, () => sinks.some((name) => isBlocking(taskStatus(rt, name))));
}

/** Recomputes the workflow status; reports a move into a terminal status. */
export function updateStatus(step: Step): void {
  const rt = step.d.runtime;
  const before = rt.status;
  const after = decide(rt, () => step.index.sinks.some((at) => isBlocking(step.d.task(at).status)));
  if (after === before) return;
  step.d.set('status', after);
  const finished = isTerminalWorkflowStatus(after);
  step.d.set('finishedAt', finished ? step.now : null);
  if (finished && !isTerminalWorkflowStatus(before)) step.effects.push({ type: 'workflow-finished', status: after });
}
