import { formatElapsed, listSome } from '@jobq/ports';
import {
  taskStatus,
  type PendingRequests,
  type RunningTaskExplanation,
  type TaskExplanation,
  type TaskStatus,
  type WorkflowExplanation,
  type WorkflowRuntime,
} from '@jobq/dag-core';

/**
 * The words of `jobq workflow explain` for an explanation of `explainRuntime` (`@jobq/dag-core`),
 * which decides every rule; here only what the index row adds (requests not yet applied) and the
 * thresholds of the caller.
 */

const MAX_NAMES_SHOWN = 5;

/** What the index row says of the workflow's requests; null without an index row. */
export type IndexRequests = (PendingRequests & { cancelRequestedAt: string | null; retryRequestedAt: string | null }) | null;

/** Why the workflow as a whole is where it is. */
export function workflowReasons(w: WorkflowExplanation, index: IndexRequests): string[] {
  const reasons: string[] = [];
  if (w.cancelReason !== null) reasons.push(`cancelled by the coordinator: ${w.cancelReason}`);
  else if (w.deadline !== null) {
    reasons.push(
      `deadline at ${w.deadline.at} (timeout_s ${w.deadline.timeoutS}): the coordinator cancels the workflow if it is still running then`,
    );
  }
  if (index === null) reasons.push('no index row: the submit did not finish (resubmit with the same --id to repair)');
  if (index !== null && index.retry) {
    reasons.push(`retry requested at ${index.retryRequestedAt} and not yet applied by the coordinator (is a coordinator running?)`);
  }
  if (index !== null && index.cancel)
    reasons.push(`cancel requested at ${index.cancelRequestedAt} and not yet applied by the coordinator (is a coordinator running?)`);
  if (w.corruptReason !== null) {
    reasons.push(
      `workflow is corrupt: ${w.corruptReason}; the coordinator set it aside (its messages go to the dead-letter queue) until it is purged`,
    );
  } else if (w.terminal) reasons.push(`workflow is ${w.status}: nothing is waiting`);
  else if (!w.activated) reasons.push('not yet activated: the coordinator has not processed its wake-up (is a coordinator running?)');
  const limit = w.maxParallelism;
  if (limit !== null) {
    const delayed =
      limit.waitingRetries > 0 ? ` (${limit.waitingRetries} of them retries waiting for their delay, which hold no slot)` : '';
    reasons.push(`max_parallelism ${limit.limit}: ${limit.running} running${delayed}, ${limit.ready} ready`);
  }
  return reasons;
}

/** What the wording of a task needs besides its explanation. */
export interface TaskReasonContext {
  runtime: WorkflowRuntime;
  w: WorkflowExplanation;
  /** A cancel recorded on the index row and not yet applied. */
  cancelNotApplied: boolean;
  /** A running task older than this is flagged stale. */
  staleAfterMs: number;
}

/** Why one unfinished task is where it is. */
export function taskReasons(t: TaskExplanation, ctx: TaskReasonContext): string[] {
  const reasons: string[] = [];
  const statusOf = (name: string): TaskStatus => taskStatus(ctx.runtime, name);
  if (t.status === 'pending') {
    if (t.cancelRequested) reasons.push('cancel requested: it will be cancelled, not run');
    if (t.unmetGates.length > 0) {
      reasons.push(
        `waiting for gate${t.unmetGates.length > 1 ? 's' : ''} ${names(t.unmetGates, statusOf)} (the previous batch of a split fan-in)`,
      );
    }
    const d = t.dependencies;
    const policy = `dep_policy ${d.policy}`;
    switch (t.cause) {
      case 'dependencies':
        reasons.push(
          `${policy}: ${d.satisfied} of ${d.total} dependencies satisfied${d.blocking.length > 0 ? `, ${d.blocking.length} failed` : ''}; waiting for ${names(d.unmet, statusOf)}`,
        );
        break;
      case 'blocked':
        reasons.push(
          `${policy}: blocked by ${names(d.blocking, statusOf)}; it becomes upstream_failed when the coordinator next settles it`,
        );
        break;
      case 'inputs':
        reasons.push('dependencies met; its condition waits for parent outputs being read from blobs');
        break;
      case 'activation':
        reasons.push('workflow not yet activated by the coordinator (is a coordinator running?)');
        break;
      case 'condition':
        reasons.push('dependencies met; its condition is not evaluated yet (the coordinator has not processed the last completion)');
        break;
      case 'settle':
        reasons.push('dependencies met; the coordinator has not settled it yet (a completion or wake-up not yet processed?)');
        break;
      case 'gates':
        break;
    }
  } else if (t.status === 'ready') {
    if (t.heldBy === 'cancel') reasons.push('cancel requested: it will not be dispatched');
    else if (ctx.cancelNotApplied) reasons.push('cancel requested (not yet applied by the coordinator): it will not be dispatched');
    else if (t.heldBy === 'activation')
      reasons.push('workflow not yet activated: the coordinator dispatches it when it processes the wake-up (is a coordinator running?)');
    else if (t.heldBy === 'max_parallelism') {
      const holding = ctx.w.maxParallelism!.holding;
      reasons.push(
        `held by max_parallelism ${ctx.w.maxParallelism!.limit}: ${holding} task${holding === 1 ? '' : 's'} running; ${t.readyAhead} ready task${t.readyAhead === 1 ? '' : 's'} ahead of it`,
      );
    } else {
      reasons.push(
        'ready and not held back: it should be dispatched with the next coordinator step (ready-repair dispatches it if the runtime stays unchanged)',
      );
    }
  } else {
    reasons.push(...runningReasons(t, ctx.staleAfterMs));
    if (ctx.w.cancelRequested || ctx.cancelNotApplied) reasons.push('cancel requested: its worker should stop it');
  }
  return reasons;
}

function runningReasons(t: RunningTaskExplanation, staleAfterMs: number): string[] {
  const attempt = `attempt ${t.attemptNo} (num_retries ${t.numRetries}) on queue "${t.queue}"`;
  if (t.waitingUntil !== null) {
    return [
      `retry ${t.retryNo} of ${t.numRetries} due at ${t.waitingUntil} (in ${formatElapsed(t.dueInMs ?? 0)}; attempt ${t.attemptNo}): ` +
        `its message waits in queue "${t.queue}" until then, holding no max_parallelism slot; last error: ${t.lastError ?? 'none recorded'}`,
    ];
  }
  if (t.since === null || t.ageMs === null) return [`${attempt}, dispatch time unknown`];
  const sent = t.sinceIsDue ? `a retry due at ${t.since}` : `dispatched at ${t.since}`;
  const reasons = [`${attempt}, ${sent} (${formatElapsed(t.ageMs)} ago; waiting in its queue or running on a worker)`];
  if (t.ageMs > staleAfterMs) {
    reasons.push(
      `stale: dispatched longer than ${formatElapsed(staleAfterMs)} ago; its message may be lost or its worker gone` +
        (t.timeoutS === null
          ? ' — set timeout_s on the task (or default_task_timeout_s): workers stop it after that long, and the coordinator recovers a lost one'
          : ` — with timeout_s ${t.timeoutS}s the coordinator declares it lost once its message has expired`),
    );
  }
  return reasons;
}

function names(list: readonly string[], statusOf: (name: string) => TaskStatus): string {
  return listSome(list, MAX_NAMES_SHOWN, (n) => `"${n}" (${statusOf(n)})`);
}
