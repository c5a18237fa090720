import { boundSkipReason } from '../../../condition';
import { retryDelayS, taskTimeoutS } from '../../../definition/types';
import { Draft } from './draft';
import { dispatchEffect, dispatchRound } from './dispatch';
import { graphIndex } from './graph-index';
import { drain, finishCondition, pendingFetch } from './settle';
import { updateStatus } from './status';
import { transition, type Step } from './step';
import { addMs, epochMs, isNewer } from '../../time';
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

/** Thrown inside a handler to leave the runtime untouched; turned into an `ignored` effect. */
class Ignored extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * Applies one event to a runtime (packages/dag-core/README.md, "The reducer"). Returns the next runtime and the effects the
 * coordinator must carry out, in order. The input is never mutated. An ignored event returns the
 * same runtime object with one `ignored` effect; any other call ends with the dispatch round of
 * Fold a batch by calling this once per event (or with {@link foldEvents}).
 */
export function reduce(runtime: WorkflowRuntime, event: WorkflowEvent): ReduceResult {
  const draft = new Draft(runtime);
  const effects = applyEvent(draft, event);
  return { runtime: draft.changed ? draft.runtime : runtime, effects };
}

/** The outcome of {@link foldEvents}: the final runtime and each event's effects, in order. */
export interface FoldResult {
  runtime: WorkflowRuntime;
  effects: Effect[][];
}

/**
 * Folds several events into a runtime: the same result as calling {@link reduce} once per event,
 * but the task map is copied once for the whole batch instead of once per event, which is what
 * makes a batch of completions of a 100 000-task workflow cheap. Returns the input object when no
 * event changed anything.
 */
export function foldEvents(runtime: WorkflowRuntime, events: readonly WorkflowEvent[]): FoldResult {
  const draft = new Draft(runtime);
  const effects = events.map((event) => applyEvent(draft, event));
  return { runtime: draft.changed ? draft.runtime : runtime, effects };
}

function applyEvent(draft: Draft, event: WorkflowEvent): Effect[] {
  const step: Step = { d: draft, index: graphIndex(draft.runtime.definition), now: event.now, effects: [], worklist: [] };
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

/** The first activation starts the deadline. */
function markActivated(step: Step): void {
  if (step.d.runtime.activated) return;
  step.d.set('activated', true);
  startDeadline(step);
}

function startDeadline(step: Step): void {
  const limit = step.d.runtime.definition.timeoutS;
  step.d.set('deadlineAt', limit === null ? null : addMs(step.now, limit * 1000));
}

/** A retry waiting for its delay at `now`. */
function waitingAt(task: TaskRuntime, now: string): boolean {
  return task.status === 'running' && task.retryDueAt !== null && epochMs(task.retryDueAt) > epochMs(now);
}

function activate(step: Step, _event: ActivateEvent): void {
  markActivated(step);
  // Ask again for inputs that were asked for before a restart or a lost flush.
  if (step.d.runtime.counts.pending === 0) return;
  for (const def of step.index.tasks) {
    if (!step.d.task(def.name)?.awaitingInputs) continue;
    const refs = pendingFetch(step, def);
    if (refs) step.effects.push({ type: 'fetch-condition-inputs', taskName: def.name, refs });
    else finishCondition(step, def, {});
  }
}

/** Which completions apply, and what they do. */
function completion(step: Step, event: CompletionEvent): void {
  const task = step.d.task(event.taskName);
  if (!task) throw new Ignored(`unknown task "${event.taskName}"`);
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
    transition(step, event.taskName, { status: 'completed', attemptNo: applied, outputRef: event.outputRef, error: null, startedAt });
  } else {
    failAttempt(step, event.taskName, applied, event.error ?? 'task failed', {
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
 * the task) re-arms the task and gives the attempt back to its budget.
 */
function failAttempt(
  step: Step,
  name: string,
  attemptNo: number,
  error: string,
  how: { startedAt?: string | null; byCancel?: boolean } = {},
): void {
  const task = step.d.task(name);
  const def = step.index.tasks[step.index.position.get(name) ?? -1];
  if (!task || !def) return;
  const patch = { attemptNo, error, ...(how.startedAt === undefined ? {} : { startedAt: how.startedAt }) };
  if (step.d.runtime.cancelRequested) return transition(step, name, { ...patch, status: 'cancelled' });
  if (how.byCancel) {
    return transition(step, name, {
      ...patch,
      status: 'ready',
      retryBase: task.retryBase + 1,
      error: `${error} (the cancel was lifted by a retry: dispatched again)`,
    });
  }
  if (attemptNo - task.retryBase > def.numRetries) return transition(step, name, { ...patch, status: 'failed' });
  // A retry with a delay is sent at once, held back by its queue.
  const next = attemptNo + 1;
  const delayInMs = Math.round(retryDelayS(step.d.runtime.definition, def, next - task.retryBase) * 1000);
  const dueAt = addMs(step.now, delayInMs);
  if (delayInMs > 0 && step.d.runtime.activated && dueAt !== null) {
    transition(step, name, {
      ...patch,
      status: 'running',
      attemptNo: next,
      dispatchedAt: step.now,
      startedAt: null,
      completedAt: null,
      retryDueAt: dueAt,
    });
    step.effects.push({ ...dispatchEffect(step, def, next), delayInMs });
    return;
  }
  transition(step, name, { ...patch, status: 'ready' });
}

function requestTime(event: CancelEvent | RetryEvent): string {
  return event.requestedAt ?? event.now;
}

/** Cancel: pending and ready tasks are cancelled; running ones finish or are stopped by workers. */
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
  const error = reason === null ? 'workflow cancelled' : `workflow cancelled: ${reason}`;
  for (const def of step.index.tasks) {
    const task = step.d.task(def.name);
    if (task === undefined) continue;
    if (task.status === 'pending' || task.status === 'ready' || waitingAt(task, event.now))
      transition(step, def.name, { status: 'cancelled', error });
  }
  // Dependents of the tasks just cancelled are cancelled too; nothing is left to re-evaluate.
  step.worklist.length = 0;
}

const RETRYABLE = new Set<TaskStatus>(['failed', 'upstream_failed', 'cancelled']);

/** Retry: failed, upstream_failed and cancelled tasks start over with a fresh budget. */
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
  startDeadline(step);
  for (const def of step.index.tasks) {
    const task = step.d.task(def.name);
    if (!task || !RETRYABLE.has(task.status)) continue;
    step.d.setTask(def.name, {
      ...task,
      status: 'pending',
      retryBase: task.attemptNo,
      outputRef: null,
      error: null,
      dispatchedAt: null,
      startedAt: null,
      completedAt: null,
      awaitingInputs: false,
      retryDueAt: null,
    });
  }
  // Every pending task is looked at again, roots become ready at once, and conditions re-run. A
  // task waiting for condition inputs is still pending: its policy may no longer hold now that
  // parents start over, so it is evaluated afresh (and asks again if it still needs the inputs).
  for (const def of step.index.tasks) {
    const task = step.d.task(def.name);
    if (task?.status !== 'pending') continue;
    if (task.awaitingInputs) step.d.updateTask(def.name, { awaitingInputs: false });
    if (def.dependsOn.length === 0 && (def.gates ?? []).length === 0) transition(step, def.name, { status: 'ready' });
    else step.worklist.push(def.name);
  }
}

/** The task and, with `downstream`, everything that depends on it, read off the definition: definition order. */
function rerunSet(step: Step, name: string, downstream: boolean): string[] {
  const set = new Set([name]);
  if (downstream) {
    let grew = true;
    while (grew) {
      grew = false;
      for (const def of step.index.tasks) {
        if (set.has(def.name)) continue;
        if ([...def.dependsOn, ...(def.gates ?? [])].some((parent) => set.has(parent))) {
          set.add(def.name);
          grew = true;
        }
      }
    }
  }
  return step.index.tasks.map((t) => t.name).filter((n) => set.has(n));
}

function busyText(task: TaskRuntime): string | null {
  if (task.status === 'ready') return 'queued now (ready, about to be dispatched)';
  if (task.status !== 'running') return null;
  return task.retryDueAt === null
    ? `running now (attempt ${task.attemptNo})`
    : `running now (attempt ${task.attemptNo}, a retry waiting for its delay)`;
}

/** Re-run: the task (and with downstream its dependents) start over, each request once. */
function rerun(step: Step, event: RerunEvent): void {
  const rt = step.d.runtime;
  const applied = rt.rerunsApplied ?? [];
  if (applied.some((a) => a.id === event.requestId)) throw new Ignored(`re-run request ${event.requestId} was applied before`);
  const kept =
    event.recorded === undefined
      ? applied
      : applied.filter((a) => event.recorded!.includes(a.id) || !(epochMs(event.now) - epochMs(a.at) > RERUN_FORGET_AFTER_MS));
  step.d.set('rerunsApplied', [...kept, { id: event.requestId, at: event.now }]);
  const notice = (why: string): void => {
    step.effects.push({ type: 'notice', message: `re-run of "${event.taskName}" not applied: ${why}` });
  };
  const own = step.d.task(event.taskName);
  if (!own) return notice('the workflow has no such task');
  const names = rerunSet(step, event.taskName, event.downstream);
  if (rt.cancelRequested) {
    return notice(
      `workflow "${rt.workflowId}" is ${rt.status === 'cancelling' ? 'being cancelled' : 'cancelled'}: a re-run does not lift a cancel (retry the workflow first)`,
    );
  }
  if (own.status === 'pending') return notice(`task "${event.taskName}" has not run yet (pending): it runs when its dependencies allow`);
  const mine = busyText(own);
  if (mine !== null) return notice(`task "${event.taskName}" is ${mine}: wait until it has finished`);
  for (const name of names) {
    if (name === event.taskName) continue;
    const other = busyText(step.d.task(name)!);
    if (other !== null) return notice(`task "${name}", which depends on "${event.taskName}", is ${other}: wait until it has finished`);
  }
  step.d.set('activated', true);
  startDeadline(step);
  for (const name of names) {
    const task = step.d.task(name)!;
    if (task.status === 'pending') {
      if (task.awaitingInputs) step.d.updateTask(name, { awaitingInputs: false });
      continue;
    }
    step.d.setTask(name, {
      ...task,
      status: 'pending',
      retryBase: task.attemptNo,
      outputRef: null,
      error: null,
      dispatchedAt: null,
      startedAt: null,
      completedAt: null,
      awaitingInputs: false,
      retryDueAt: null,
    });
  }
  step.worklist.push(...names);
}

/**
 * The lost-task sweep (see {@link TimeoutSweepEvent}): a running attempt with a timeout whose
 * dispatch is older than the message's time to live + its timeout + the grace fails.
 */
function timeoutSweep(step: Step, event: TimeoutSweepEvent): void {
  const rt = step.d.runtime;
  const deadline = rt.deadlineAt;
  if (
    deadline !== null &&
    !rt.cancelRequested &&
    rt.activated &&
    !isTerminalWorkflowStatus(rt.status) &&
    epochMs(event.now) >= epochMs(deadline)
  ) {
    cancel(step, {
      type: 'cancel',
      now: event.now,
      reason: `deadline passed: the workflow's timeout_s (${rt.definition.timeoutS} s) ran out at ${deadline}`,
    });
    return;
  }
  let running = rt.counts.running;
  if (running === 0) throw new Ignored('no task is running');
  const ttl = event.messageTtlInMs === undefined ? DEFAULT_TASK_MESSAGE_TTL_MS : event.messageTtlInMs;
  if (ttl === null || !Number.isFinite(ttl)) throw new Ignored('task messages never expire: no running task can be declared lost');
  const grace = event.graceInMs ?? DEFAULT_LOST_TASK_GRACE_MS;
  const now = epochMs(event.now);
  let lost = 0;
  for (const def of step.index.tasks) {
    if (running === 0) break;
    const task = step.d.task(def.name);
    if (task?.status !== 'running') continue;
    running--;
    const limit = taskTimeoutS(rt.definition, def);
    const from = task.retryDueAt ?? task.dispatchedAt;
    if (limit === null || from === null) continue;
    const bound = ttl + limit * 1000 + grace;
    if (now - epochMs(from) > bound) {
      failAttempt(
        step,
        def.name,
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

/** The blob outputs a condition waited for have arrived (or could not be read). */
function conditionInputs(step: Step, event: ConditionInputsEvent): void {
  const task = step.d.task(event.taskName);
  if (!task || task.status !== 'pending' || !task.awaitingInputs) {
    throw new Ignored(`"${event.taskName}" is not waiting for condition inputs`);
  }
  const def = step.index.tasks[step.index.position.get(event.taskName) ?? -1]!;
  const failed = Object.entries(event.errors);
  if (failed.length > 0) {
    const [parent, error] = failed[0]!;
    transition(step, def.name, { status: 'skipped', error: boundSkipReason(`could not read the output of "${parent}": ${error}`) });
    return;
  }
  finishCondition(step, def, event.inputs);
}
