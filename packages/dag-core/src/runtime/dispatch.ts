import { taskQueue, taskTimeoutS } from '../definition/types';
import { compactUpstreamRefs, type CompactUpstreamRefs } from '../wire/upstream-refs';
import { taskMessageId, type TaskMessageInput } from '../wire/task-message';
import { M_DELAYED_RUNNING, S_READY, isDelayedRunning } from './core';
import { transition, type Step } from './step';
import { addMs, epochMs } from './time';
import type { DispatchEffect, TaskRuntime } from './types';

/**
 * docs/design.md#how-a-workflow-moves: each `ready` task, in definition order, that may run (no cancel requested, within
 * `max_parallelism`) becomes `running` with the next attempt number and yields a dispatch effect.
 * A retry still waiting for its delay holds no `max_parallelism` slot (see {@link dispatchDelayed}).
 * Nothing is dispatched before the coordinator has activated the workflow. The walk starts at the
 * draft's `readyFrom` (no ready task lies before it) and skips chunks without ready tasks, so a
 * `max_parallelism` backlog costs O(1) per dispatch, not a walk from position 0.
 */
export function dispatchRound(step: Step): void {
  const d = step.d;
  const rt = d.runtime;
  if (!rt.activated || rt.cancelRequested || rt.corruptReason !== null || rt.counts.ready === 0) return;
  const limit = rt.definition.maxParallelism;
  let budget = limit === null ? Number.POSITIVE_INFINITY : limit - (rt.counts.running - waitingRetries(step));
  let remaining = rt.counts.ready;
  const size = step.index.size;
  const shift = step.index.chunkShift;
  let position = d.readyFrom;
  while (budget > 0 && remaining > 0 && position < size) {
    const c = position >> shift;
    const end = Math.min(size, (c + 1) << shift);
    if (d.chunkCount(c, S_READY) === 0) {
      position = end;
      continue;
    }
    for (; position < end && budget > 0 && remaining > 0; position++) {
      const task = d.task(position);
      if (task.status !== 'ready') continue;
      remaining--;
      budget--;
      const attemptNo = task.attemptNo + 1;
      transition(step, position, {
        status: 'running',
        attemptNo,
        dispatchedAt: step.now,
        startedAt: null,
        completedAt: null,
        retryDueAt: null,
      });
      step.effects.push(dispatchEffect(step, position, attemptNo));
    }
  }
  // Every task before `position` was looked at and is not ready (or is running now).
  d.readyFrom = position;
}

/**
 * The running tasks whose attempt was sent with a delay that has not ended at `step.now`: their
 * queue still holds them back, so they take no `max_parallelism` slot. Walks only the chunks that
 * hold delayed retries.
 */
export function waitingRetries(step: Step): number {
  if (step.d.delayed === 0) return 0;
  const now = epochMs(step.now);
  let waiting = 0;
  step.d.positions(
    (counts) => counts[M_DELAYED_RUNNING]! > 0,
    (task) => {
      if (isDelayedRunning(task) && epochMs(task.retryDueAt!) > now) waiting++;
      return false;
    },
  );
  return waiting;
}

/**
 * A retry that must wait `delayInMs` (`retry_delay_s`, `retry_backoff`): its message is sent now,
 * with the queue's own delayed delivery, and the task is `running` from now with `retryDueAt` set,
 * whatever the `max_parallelism` budget (a waiting retry holds no slot; once due it runs, and the
 * dispatch round sends nothing new while the workflow is at its limit). `patch`: what the failed
 * attempt left (its error). Returns false, doing nothing, when the due time cannot be written
 * (a `now` that does not parse): the caller makes the task ready instead.
 */
export function dispatchDelayed(step: Step, position: number, patch: Partial<TaskRuntime>, attemptNo: number, delayInMs: number): boolean {
  const dueAt = addMs(step.now, delayInMs);
  if (dueAt === null) return false;
  transition(step, position, {
    ...patch,
    status: 'running',
    attemptNo,
    dispatchedAt: step.now,
    startedAt: null,
    completedAt: null,
    retryDueAt: dueAt,
  });
  step.effects.push({ ...dispatchEffect(step, position, attemptNo), delayInMs });
  return true;
}

/** The dispatch effect of attempt `attemptNo` of the task at `position`. */
function dispatchEffect(step: Step, position: number, attemptNo: number): DispatchEffect {
  const rt = step.d.runtime;
  const def = step.index.tasks[position]!;
  return {
    type: 'dispatch',
    taskName: def.name,
    queue: taskQueue(rt.definition, def),
    attemptNo,
    message: taskMessage(step, position, attemptNo),
    messageId: taskMessageId(rt.workflowId, def.name, attemptNo),
  };
}

/** The task message of docs/design.md#task-message, with the outputs of the real parents that completed or were skipped. */
export function taskMessage(step: Step, position: number, attemptNo: number): TaskMessageInput {
  const rt = step.d.runtime;
  const def = step.index.tasks[position]!;
  const parents = step.index.realParents(position);
  let upstream: CompactUpstreamRefs | undefined;
  if (parents.length > 0) {
    const finished: Array<{ name: string; outputRef: string | null }> = [];
    for (const at of parents) {
      const parent = step.d.task(at);
      if (parent.status === 'completed') finished.push({ name: step.index.tasks[at]!.name, outputRef: parent.outputRef });
      else if (parent.status === 'skipped') finished.push({ name: step.index.tasks[at]!.name, outputRef: null });
    }
    upstream = rt.outputsContainer !== null ? compactUpstreamRefs(rt.workflowId, finished, rt.outputsContainer) : keepRefs(finished);
  }
  return {
    workflowId: rt.workflowId,
    taskName: def.name,
    attemptNo,
    kwargs: def.kwargs,
    timeoutS: taskTimeoutS(rt.definition, def),
    ...(upstream === undefined ? {} : { upstream }),
  };
}

/** Without a known outputs container no ref can be shortened: every ref travels as written. */
function keepRefs(parents: ReadonlyArray<{ name: string; outputRef: string | null }>): CompactUpstreamRefs {
  const out: CompactUpstreamRefs = {};
  const inline = parents.filter((p) => p.outputRef !== null);
  const none = parents.filter((p) => p.outputRef === null).map((p) => p.name);
  if (inline.length > 0) out.i = Object.fromEntries(inline.map((p) => [p.name, p.outputRef as string]));
  if (none.length > 0) out.n = none;
  return out;
}
