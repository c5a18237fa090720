import type { Step } from './step';
import { isBlocking, isTerminalWorkflowStatus, type WorkflowRuntime, type WorkflowStatus } from './types';

/** The workflow status, from the counts and, once every task is terminal, the sinks. */
export function workflowStatus(rt: WorkflowRuntime, sinks: readonly string[]): WorkflowStatus {
  const c = rt.counts;
  if (rt.corruptReason !== null) return 'corrupt';
  if (rt.cancelRequested) return c.ready + c.running > 0 ? 'cancelling' : 'cancelled';
  if (!rt.activated) return 'pending';
  if (c.pending + c.ready + c.running > 0) return 'running';
  if (c.completed === 0) return 'failed';
  if (rt.definition.resultPolicy === 'all_tasks_succeed') {
    return c.failed + c.upstream_failed + c.cancelled > 0 ? 'failed' : 'completed';
  }
  return sinks.some((name) => isBlocking(rt.tasks[name]?.status ?? 'pending')) ? 'failed' : 'completed';
}

/** Recomputes the workflow status; reports a move into a terminal status. */
export function updateStatus(step: Step): void {
  const rt = step.d.runtime;
  const before = rt.status;
  const after = workflowStatus(rt, step.index.sinks);
  if (after === before) return;
  step.d.set('status', after);
  const finished = isTerminalWorkflowStatus(after);
  step.d.set('finishedAt', finished ? step.now : null);
  if (finished && !isTerminalWorkflowStatus(before)) step.effects.push({ type: 'workflow-finished', status: after });
}
