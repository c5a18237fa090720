import { taskQueue, taskTimeoutS, type TaskDefinition } from '../../../definition/types';
import { compactUpstreamRefs, type CompactUpstreamRefs } from '../../../wire/upstream-refs';
import { taskMessageId, type TaskMessageInput } from '../../../wire/task-message';
import { epochMs } from '../../time';
import { transition, type Step } from './step';
import type { DispatchEffect } from './types';

/**
 * Each `ready` task, in definition order, that may run (no cancel requested, within
 * `max_parallelism`) becomes `running` with the next attempt number and yields a dispatch effect.
 * Nothing is dispatched before the coordinator has activated the workflow.
 */
export function dispatchRound(step: Step): void {
  const rt = step.d.runtime;
  if (!rt.activated || rt.cancelRequested || rt.corruptReason !== null || rt.counts.ready === 0) return;
  const limit = rt.definition.maxParallelism;
  // Retries waiting for their delay hold no slot.
  const waiting = Object.values(rt.tasks).filter(
    (t) => t.status === 'running' && t.retryDueAt !== null && epochMs(t.retryDueAt) > epochMs(step.now),
  ).length;
  let budget = limit === null ? Number.POSITIVE_INFINITY : limit - (rt.counts.running - waiting);
  let remaining = rt.counts.ready;
  for (const def of step.index.tasks) {
    if (budget <= 0 || remaining <= 0) break;
    const task = step.d.task(def.name);
    if (task?.status !== 'ready') continue;
    remaining--;
    budget--;
    const attemptNo = task.attemptNo + 1;
    transition(step, def.name, {
      status: 'running',
      attemptNo,
      dispatchedAt: step.now,
      startedAt: null,
      completedAt: null,
      retryDueAt: null,
    });
    step.effects.push(dispatchEffect(step, def, attemptNo));
  }
}

/** The dispatch effect of one attempt. */
export function dispatchEffect(step: Step, def: TaskDefinition, attemptNo: number): DispatchEffect {
  const rt = step.d.runtime;
  return {
    type: 'dispatch',
    taskName: def.name,
    queue: taskQueue(rt.definition, def),
    attemptNo,
    message: taskMessage(step, def, attemptNo),
    messageId: taskMessageId(rt.workflowId, def.name, attemptNo),
  };
}

/** The task message, with the outputs of the real parents that completed or were skipped. */
export function taskMessage(step: Step, def: TaskDefinition, attemptNo: number): TaskMessageInput {
  const rt = step.d.runtime;
  const parents = step.index.realParents(def.name);
  let upstream: CompactUpstreamRefs | undefined;
  if (parents.length > 0) {
    const finished: Array<{ name: string; outputRef: string | null }> = [];
    for (const name of parents) {
      const parent = step.d.task(name);
      if (parent?.status === 'completed') finished.push({ name, outputRef: parent.outputRef });
      else if (parent?.status === 'skipped') finished.push({ name, outputRef: null });
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
