import { boundSkipReason } from '../condition';
import { retryDelayS, taskTimeoutS } from '../definition/types';
import { Draft } from './draft';
import { dispatchDelayed, dispatchRound } from './dispatch';
import {
  M_AWAITING,
  M_DELAYED_RUNNING,
  M_TIMED_RUNNING,
  S_CANCELLED,
  S_FAILED,
  S_PENDING,
  S_READY,
  S_UPSTREAM_FAILED,
  isDelayedRunning,
} from './core';
import { rerunPositions, rerunRefusal } from './rerun';
import { freshTask } from './create';
import { drain, finishCondition, pendingFetch } from './settle';
import { updateStatus } from './status';
import { transition, type Step } from './step';
import { addMs, epochMs, isNewer } from './time';
import {
  isTerminalWorkflowStatus,
  type ActivateEvent,
  type CancelEvent,
  type CompletionEvent,
  type ConditionInputsEvent,
  type CorruptEvent,
  DEFAULT_LOST_TASK_GRACE_MS,
  DEFAULT_TASK_MESSAGE_TTL_MS,
  type Effect,
  RERUN_FORGET_AFTER_MS,
  type ReduceResult,
  type RerunEvent,
  type RetryEvent,
  type TaskRuntime,
  type TaskStatus,
  type TimeoutSweepEvent,
  type WorkflowEvent,
  type WorkflowRuntime,
} from './types';

/**
 * True when `runtime` has a deadline (`timeout_s`) that has passed at `now` and nothing has ended
 * it yet: not finished, no cancel standing. A `timeout-sweep` event then cancels the workflow.
 */
export function deadlinePassed(
  runtime: Pick<WorkflowRuntime, 'deadlineAt' | 'cancelRequested' | 'corruptReason' | 'status' | 'activated'>,
  now: string,
): boolean {
  if (runtime.deadlineAt === null || runtime.cancelRequested || runtime.corruptReason !== null || !runtime.activated) return false;
  if (isTerminalWorkflowStatus(runtime.status)) return false;
  return epochMs(now) >= epochMs(runtime.deadlineAt);
}

/** Thrown inside a handler to leave the runtime untouched; turned into an `ignored` effect. */
class Ignored extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * Applies one event to a runtime (docs/design.md#how-a-workflow-moves). Returns the next runtime and the effects the
 * coordinator must carry out, in order. The input is never mutated. An ignored event returns the
 * same runtime object with one `ignored` effect; any other call ends with the dispatch round of
 * docs/design.md#how-a-workflow-moves. Fold a batch by calling this once per event (or with {@link foldEvents}).
 */
export function reduce(runtime: WorkflowRuntime, event: WorkflowEvent): ReduceResult {
  const draft = new Draft(runtime);
  const effects = applyEvent(draft, event);
  return { runtime: draft.finish(), effects, changed: draft.changedPositions() };
}

/** The outcome of {@link foldEvents}: the final runtime, each event's effects in order, and what changed. */
export interface FoldResult {
  runtime: WorkflowRuntime;
  effects: Effect[][];
  /** The definition positions of the tasks whose state the batch replaced, ascending, each once. */
  changed: number[];
}

/**
 * Folds several events into a runtime: the same result as calling {@link reduce} once per event,
 * but the roots of the task states are copied once for the whole batch and each touched chunk
 * once, instead of once per event. Returns the input object when no event changed anything.
 */
export function foldEvents(runtime: WorkflowRuntime, events: readonly WorkflowEvent[]): FoldResult {
  const draft = new Draft(runtime);
  const effects = events.map((event) => applyEvent(draft, event));
  return { runtime: draft.finish(), effects, changed: draft.changedPositions() };
}

function applyEvent(draft: Draft, event: WorkflowEvent): Effect[] {
  const step: Step = { d: draft, index: draft.index, now: event.now, effects: [], worklist: [] };
  const before = draft.changes;
  try {
    const corrupt = draft.runtime.corruptReason;
    if (corrupt !== null) throw new Ignored(`the workflow is corrupt (${corrupt}): it takes no more events`);
    apply(step, event);
  } catch (error) {
    // Handlers decide to ignore before they change anything, so the draft is as it was.
    if (error instanceof Ignored) return [{ type: 'ignored', reason: error.reason }];
    throw error;
  }
  drain(step);
  dispatchRound(step);
  updateStatus(step);
  if (draft.changes !== before) draft.set('updatedAt', event.now);
  return step.effects;
}

function apply(step: Step, event: WorkflowEvent): void {
  switch (event.type) {
    case 'activate':
      return activate(step, event);
    case 'completion':
      return completion(step, event);
    case 'cancel':
      return cancel(step, event);
    case 'retry':
      return retry(step, event);
    case 'rerun':
      return rerun(step, event);
    case 'timeout-sweep':
      return timeoutSweep(step, event);
    case 'condition-inputs':
      return conditionInputs(step, event);
    case 'corrupt':
      return markCorrupt(step, event);
    default:
      throw new Ignored(`unknown event type ${JSON.stringify((event as { type?: unknown }).type)}`);
  }
}

/** Marks the workflow activated; the first activation starts its deadline. */
function markActivated(step: Step): void {
  if (step.d.runtime.activated) return;
  step.d.set('activated', true);
  startDeadline(step);
}

/** `deadlineAt` = now + the workflow's `timeout_s` (null without one). */
function startDeadline(step: Step): void {
  const limit = step.d.runtime.definition.timeoutS;
  step.d.set('deadlineAt', limit === null ? null : addMs(step.now, limit * 1000));
}

function activate(step: Step, _event: ActivateEvent): void {
  markActivated(step);
  // Ask again for inputs that were asked for before a restart or a lost flush.
  if (step.d.runtime.counts.pending === 0) return;
  const waiting = step.d.positions(
    (counts) => counts[M_AWAITING]! > 0,
    (task) => task.awaitingInputs,
  );
  for (const position of waiting) {
    if (!step.d.task(position).awaitingInputs) continue;
    const def = step.index.tasks[position]!;
    const refs = pendingFetch(step, def);
    if (refs) step.effects.push({ type: 'fetch-condition-inputs', taskName: def.name, refs });
    else finishCondition(step, position, {});
  }
}

/** docs/design.md#which-completions-apply: which completions apply, and what they do. */
function completion(step: Step, event: CompletionEvent): void {
  const position = step.d.positionOf(event.taskName);
  if (position === undefined) throw new Ignored(`unknown task "${event.taskName}"`);
  const task = step.d.task(position);
  const stored = task.attemptNo;
  const attempt = event.attemptNo;
  const live = task.status === 'ready' || task.status === 'running';
  let applied: number;
  if (attempt === null) {
    if (!live) throw new Ignored(`completion of "${event.taskName}" (current attempt) while the task is ${task.status}`);
    applied = stored;
  } else if ((task.status === 'running' && attempt === stored) || (live && attempt === stored + 1)) {
    // One attempt above the stored one: its dispatch was pushed but the flush that recorded it was
    // lost. Anything higher was never dispatched by anyone and is ignored.
    applied = attempt;
  } else {
    throw new Ignored(`completion of "${event.taskName}" attempt ${attempt} while the task is ${task.status} at attempt ${stored}`);
  }
  // A completion proves the task was dispatched, even if the flush that said so was lost.
  markActivated(step);
  const startedAt = event.startedAt ?? null;
  if (event.success) {
    transition(step, position, { status: 'completed', attemptNo: applied, outputRef: event.outputRef, error: null, startedAt });
  } else {
    failAttempt(step, position, applied, event.error ?? 'task failed', {
      startedAt,
      byCancel: event.cancelled === true || isCancelText(event.error),
    });
  }
}

/** The failure texts of workers that stopped or refused a task for a cancel but do not set `cancelled`. */
function isCancelText(error: string | null): boolean {
  return error === 'workflow cancelled' || (error?.startsWith('stopped: workflow cancelled') ?? false);
}

/**
 * A failed attempt: cancelled under a cancel, re-armed while the budget lasts, else failed. A
 * failure caused by a cancel that no longer stands (a retry lifted it while the worker was stopping
 * the task) re-arms the task and gives the attempt back to its budget. A retry with a delay
 * (`retry_delay_s`) is sent at once with that delivery delay instead of becoming ready.
 */
function failAttempt(
  step: Step,
  position: number,
  attemptNo: number,
  error: string,
  how: { startedAt?: string | null; byCancel?: boolean } = {},
): void {
  const task = step.d.task(position);
  const def = step.index.tasks[position]!;
  const patch = { attemptNo, error, ...(how.startedAt === undefined ? {} : { startedAt: how.startedAt }) };
  if (step.d.runtime.cancelRequested) return transition(step, position, { ...patch, status: 'cancelled' });
  if (how.byCancel) {
    return transition(step, position, {
      ...patch,
      status: 'ready',
      retryBase: task.retryBase + 1,
      error: `${error} (the cancel was lifted by a retry: dispatched again)`,
    });
  }
  if (attemptNo - task.retryBase > def.numRetries) return transition(step, position, { ...patch, status: 'failed' });
  const next = attemptNo + 1;
  const delayInMs = Math.round(retryDelayS(step.d.runtime.definition, def, next - task.retryBase) * 1000);
  if (delayInMs > 0 && step.d.runtime.activated && dispatchDelayed(step, position, patch, next, delayInMs)) return;
  transition(step, position, { ...patch, status: 'ready' });
}

function requestTime(event: CancelEvent | RetryEvent): string {
  return event.requestedAt ?? event.now;
}

/**
 * Cancel (docs/design.md#cancel-and-retry-requests): pending and ready tasks, and retries still waiting for their delay, are
 * cancelled; running ones finish or are stopped by workers. An engine's cancel (a deadline) keeps
 * its reason in `cancelReason` and in the tasks' errors.
 */
function cancel(step: Step, event: CancelEvent): void {
  const reason = event.reason === undefined || event.reason.trim() === '' ? null : event.reason;
  const rt = step.d.runtime;
  const at = requestTime(event);
  if (!isNewer(at, rt.cancelAppliedAt))
    throw new Ignored(`cancel requested at ${at} is not newer than the last applied (${rt.cancelAppliedAt})`);
  step.d.set('cancelAppliedAt', at);
  if (rt.retryAppliedAt !== null && !isNewer(at, rt.retryAppliedAt)) {
    step.effects.push({
      type: 'notice',
      message: `cancel requested at ${at} is older than the retry applied at ${rt.retryAppliedAt}: the retry stands`,
    });
    return;
  }
  if (isTerminalWorkflowStatus(rt.status)) {
    step.effects.push({ type: 'notice', message: `workflow already ${rt.status}: nothing to cancel` });
    return;
  }
  step.d.set('cancelRequested', true);
  step.d.set('cancelReason', reason);
  if (rt.counts.pending + rt.counts.ready + rt.counts.running === 0) return;
  // A retry still waiting for its delay has not reached a worker: it is cancelled here, like a
  // ready task (a worker that takes its message later sees the cancel, and its report is ignored).
  const now = epochMs(event.now);
  const waiting = step.d.positions(
    (counts) => counts[S_PENDING]! + counts[S_READY]! + counts[M_DELAYED_RUNNING]! > 0,
    (task) => task.status === 'pending' || task.status === 'ready' || (isDelayedRunning(task) && epochMs(task.retryDueAt!) > now),
  );
  const error = reason === null ? 'workflow cancelled' : `workflow cancelled: ${reason}`;
  for (const position of waiting) transition(step, position, { status: 'cancelled', error });
  // Dependents of the tasks just cancelled are cancelled too; nothing is left to re-evaluate.
  step.worklist.length = 0;
}

const RETRYABLE = new Set<TaskStatus>(['failed', 'upstream_failed', 'cancelled']);

/** Retry (docs/design.md#cancel-and-retry-requests): failed, upstream_failed and cancelled tasks start over with a fresh budget. */
function retry(step: Step, event: RetryEvent): void {
  const rt = step.d.runtime;
  const at = requestTime(event);
  if (!isNewer(at, rt.retryAppliedAt))
    throw new Ignored(`retry requested at ${at} is not newer than the last applied (${rt.retryAppliedAt})`);
  step.d.set('retryAppliedAt', at);
  if (rt.cancelAppliedAt !== null && !isNewer(at, rt.cancelAppliedAt)) {
    step.effects.push({
      type: 'notice',
      message: `retry requested at ${at} is older than the cancel applied at ${rt.cancelAppliedAt}: the cancel stands`,
    });
    return;
  }
  // The latest request is now this retry: a cancel no longer applies, even with nothing to retry.
  step.d.set('cancelRequested', false);
  step.d.set('cancelReason', null);
  if (rt.counts.failed + rt.counts.upstream_failed + rt.counts.cancelled === 0) {
    step.effects.push({ type: 'notice', message: 'nothing to retry: no task failed, upstream_failed or cancelled' });
    return;
  }
  step.d.set('activated', true);
  // The retried workflow gets its whole timeout_s again, from now.
  startDeadline(step);
  const retried = step.d.positions(
    (counts) => counts[S_FAILED]! + counts[S_UPSTREAM_FAILED]! + counts[S_CANCELLED]! > 0,
    (task) => RETRYABLE.has(task.status),
  );
  for (const position of retried) step.d.setTask(position, startOver(step.d.task(position)));
  // Every pending task is looked at again, roots become ready at once, and conditions re-run. A
  // task waiting for condition inputs is still pending: its policy may no longer hold now that
  // parents start over, so it is evaluated afresh (and asks again if it still needs the inputs).
  const pending = step.d.positions(
    (counts) => counts[S_PENDING]! > 0,
    (task) => task.status === 'pending',
  );
  for (const position of pending) {
    if (step.d.task(position).awaitingInputs) step.d.updateTask(position, { awaitingInputs: false });
    if (step.index.root[position] === 1) transition(step, position, { status: 'ready' });
    else step.worklist.push(position);
  }
}

/**
 * A task that starts over: `pending`, with a fresh retry budget from its current attempt (attempt
 * numbers keep counting), and nothing of its last run but its attempt number.
 */
function startOver(task: TaskRuntime): TaskRuntime {
  return freshTask('pending', task.attemptNo);
}

/**
 * Re-running a task (docs/failure-model.md, "Re-running a task"): the task and, with
 * `downstream`, every task that depends on it transitively start over (see {@link startOver}) and
 * are settled again — the task is dispatched with its next attempt once its dependencies allow,
 * its dependents wait for it and evaluate their conditions afresh — and a finished workflow runs
 * again. A request applied before is ignored; one that cannot be applied is recorded as applied
 * with a notice, so it is not tried again.
 */
function rerun(step: Step, event: RerunEvent): void {
  const rt = step.d.runtime;
  const applied = rt.rerunsApplied ?? [];
  if (applied.some((a) => a.id === event.requestId)) throw new Ignored(`re-run request ${event.requestId} was applied before`);
  // Remember this request; forget those whose records are gone (and were applied long enough ago).
  const recorded = event.recorded === undefined ? null : new Set(event.recorded);
  const now = epochMs(event.now);
  const kept = recorded === null ? applied : applied.filter((a) => recorded.has(a.id) || !(now - epochMs(a.at) > RERUN_FORGET_AFTER_MS));
  step.d.set('rerunsApplied', [...kept, { id: event.requestId, at: event.now }]);
  const position = step.d.positionOf(event.taskName);
  if (position === undefined) {
    step.effects.push({ type: 'notice', message: `re-run of "${event.taskName}" not applied: the workflow has no such task` });
    return;
  }
  const positions = rerunPositions(step.index, position, event.downstream);
  const view = { workflowId: rt.workflowId, cancelRequested: rt.cancelRequested, status: rt.status, task: (p: number) => step.d.task(p) };
  const refusal = rerunRefusal(step.index, view, position, positions);
  if (refusal !== null) {
    step.effects.push({ type: 'notice', message: `re-run of "${event.taskName}" not applied: ${refusal}` });
    return;
  }
  step.d.set('activated', true);
  // Like a retry, a re-run gives the workflow its whole timeout_s again, from now.
  startDeadline(step);
  // Every task re-run starts over (a dependent still pending only stops waiting for inputs it
  // asked for: they may change), then each is settled again: once the task is pending, its
  // dependents wait for it.
  for (const p of positions) {
    const task = step.d.task(p);
    if (task.status !== 'pending') step.d.setTask(p, startOver(task));
    else if (task.awaitingInputs) step.d.updateTask(p, { awaitingInputs: false });
  }
  step.worklist.push(...positions);
}

/**
 * The sweep (see {@link TimeoutSweepEvent}). A workflow past its deadline is cancelled, with the
 * reason. Otherwise, the lost-task sweep: a running attempt with a timeout whose dispatch (or, for
 * a delayed retry, its due time) is older than the message's time to live + its timeout + the
 * grace fails.
 */
function timeoutSweep(step: Step, event: TimeoutSweepEvent): void {
  const rt = step.d.runtime;
  if (deadlinePassed(rt, event.now)) {
    const reason = `deadline passed: the workflow's timeout_s (${rt.definition.timeoutS} s) ran out at ${rt.deadlineAt}`;
    cancel(step, { type: 'cancel', now: event.now, reason });
    return;
  }
  if (rt.counts.running === 0) throw new Ignored('no task is running');
  const ttl = event.messageTtlInMs === undefined ? DEFAULT_TASK_MESSAGE_TTL_MS : event.messageTtlInMs;
  if (ttl === null || !Number.isFinite(ttl)) throw new Ignored('task messages never expire: no running task can be declared lost');
  const grace = event.graceInMs ?? DEFAULT_LOST_TASK_GRACE_MS;
  const now = epochMs(event.now);
  let lost = 0;
  // Only running tasks with a timeout can be lost; the per-chunk counts skip the others.
  const timed = step.d.positions(
    (counts) => counts[M_TIMED_RUNNING]! > 0,
    (task, position) => task.status === 'running' && step.index.timed[position] === 1,
  );
  for (const position of timed) {
    const task = step.d.task(position);
    const def = step.index.tasks[position]!;
    const limit = taskTimeoutS(rt.definition, def);
    // A delayed retry's message lives from its due time on (its time to live is lengthened by the
    // delay, and no worker can take it before): it is counted from there.
    const from = task.retryDueAt ?? task.dispatchedAt;
    if (limit === null || from === null) continue;
    const bound = ttl + limit * 1000 + grace;
    if (now - epochMs(from) > bound) {
      failAttempt(
        step,
        position,
        task.attemptNo,
        `no completion within ${formatDuration(bound)} of its ${task.retryDueAt === null ? 'dispatch' : 'due time'} (message lifetime ${formatDuration(ttl)} + timeout_s ${limit} + grace ${formatDuration(grace)}): its message was lost or its worker died without reporting`,
      );
      lost++;
    }
  }
  if (lost === 0) throw new Ignored('no running task is overdue');
}

/** `170s`, `15m`, `7d`: the largest whole unit, for error texts. */
function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s > 0 && s % 86_400 === 0) return `${s / 86_400}d`;
  if (s > 0 && s % 3_600 === 0) return `${s / 3_600}h`;
  if (s > 0 && s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}

/** The coordinator sets a workflow aside: `corrupt` with the reason; nothing is dispatched any more. */
function markCorrupt(step: Step, event: CorruptEvent): void {
  step.d.set('corruptReason', event.reason.trim() === '' ? 'unknown reason' : event.reason);
}

/** docs/design.md#conditions-waiting-for-outputs: the blob outputs a condition waited for have arrived (or could not be read). */
function conditionInputs(step: Step, event: ConditionInputsEvent): void {
  const position = step.d.positionOf(event.taskName);
  const task = position === undefined ? undefined : step.d.task(position);
  if (position === undefined || !task || task.status !== 'pending' || !task.awaitingInputs) {
    throw new Ignored(`"${event.taskName}" is not waiting for condition inputs`);
  }
  const failed = Object.entries(event.errors);
  if (failed.length > 0) {
    const [parent, error] = failed[0]!;
    transition(step, position, { status: 'skipped', error: boundSkipReason(`could not read the output of "${parent}": ${error}`) });
    return;
  }
  finishCondition(step, position, event.inputs);
}
