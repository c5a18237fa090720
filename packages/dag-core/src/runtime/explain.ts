import { taskQueue, taskTimeoutS, type DepPolicy, type TaskDefinition } from '../definition/types';
import { taskState, tasksIn } from './access';
import { policyVerdict, type Verdict } from './settle';
import { epochMs } from './time';
import {
  isBlocking,
  isSatisfying,
  isTerminalTaskStatus,
  isTerminalWorkflowStatus,
  type TaskRuntime,
  type TaskStatus,
  type WorkflowRuntime,
  type WorkflowStatus,
} from './types';

/**
 * Why a runtime is where it is, as data: the rules the reducer applies (docs/design.md#how-a-workflow-moves)
 * read back for the tasks it has not finished. `jobq workflow explain`, `jobq workflow doctor` and the
 * dashboard word it; none of them re-derives a rule.
 */
export interface RuntimeExplanation {
  workflow: WorkflowExplanation;
  /** Every unfinished task, in definition order. */
  tasks: TaskExplanation[];
}

/** The workflow as a whole. */
export interface WorkflowExplanation {
  status: WorkflowStatus;
  terminal: boolean;
  activated: boolean;
  /** Set aside by the coordinator, with why. */
  corruptReason: string | null;
  /** A cancel applied (by a request or by the engine). */
  cancelRequested: boolean;
  /** Why the engine cancelled (a deadline that passed); null for a requested cancel or none. */
  cancelReason: string | null;
  /** The deadline of `timeout_s` while the workflow is not finished and not cancelled by the engine. */
  deadline: { at: string; timeoutS: number | null } | null;
  /** `max_parallelism` and what uses it; null without a limit. */
  maxParallelism: ParallelismUse | null;
}

/** Who holds `max_parallelism` slots. */
export interface ParallelismUse {
  limit: number;
  running: number;
  /** Running retries still waiting for their delay: they hold no slot. */
  waitingRetries: number;
  /** Slots held: running minus waiting retries. */
  holding: number;
  ready: number;
}

/** What the dependencies of a pending task say. */
export interface DependencyState {
  policy: DepPolicy;
  total: number;
  satisfied: number;
  /** Dependencies that failed, were upstream_failed or cancelled. */
  blocking: string[];
  /** Dependencies neither satisfying nor blocking yet. */
  unmet: string[];
  verdict: Verdict;
}

/**
 * Why a pending task is still pending, the first that applies: `dependencies` (its dep_policy waits),
 * `blocked` (it becomes upstream_failed when next settled), `inputs` (its condition waits for parent
 * outputs being read), `gates` (only gates hold it), `activation` (the workflow is not activated),
 * `condition` (its condition is not evaluated yet), `settle` (nothing holds it: not settled yet).
 */
export type PendingCause = 'dependencies' | 'blocked' | 'inputs' | 'gates' | 'activation' | 'condition' | 'settle';

/**
 * What holds a ready task back from dispatch, the first that applies: a cancel, the workflow not
 * activated, `max_parallelism` full; null when nothing does (the next step dispatches it).
 */
export type ReadyHold = 'cancel' | 'activation' | 'max_parallelism' | null;

/** What every task explanation carries: the task, its queue and its latest attempt number. */
export interface TaskExplanationBase {
  name: string;
  queue: string;
  attemptNo: number;
}

export interface PendingTaskExplanation extends TaskExplanationBase {
  status: 'pending';
  /** The workflow's cancel is applied: it will be cancelled, not run. */
  cancelRequested: boolean;
  /** Gates (the previous batch of a split fan-in) not yet satisfying. */
  unmetGates: string[];
  dependencies: DependencyState;
  hasCondition: boolean;
  cause: PendingCause;
}

export interface ReadyTaskExplanation extends TaskExplanationBase {
  status: 'ready';
  heldBy: ReadyHold;
  /** Ready tasks before it in definition order. */
  readyAhead: number;
}

export interface RunningTaskExplanation extends TaskExplanationBase {
  status: 'running';
  numRetries: number;
  /** Which retry this attempt is (0: the first attempt since the last retry of the workflow). */
  retryNo: number;
  /** Effective `timeout_s`; null without one. */
  timeoutS: number | null;
  /** When the queue delivers a retry sent with a delay, while it still waits for it; null otherwise. */
  waitingUntil: string | null;
  /** Milliseconds until `waitingUntil`; null when not waiting. */
  dueInMs: number | null;
  /** What its age counts from: a delayed retry's due time, else its dispatch time; null when unknown. */
  since: string | null;
  /** `since` is a retry's due time. */
  sinceIsDue: boolean;
  /** Milliseconds since `since` (not waiting for a delay); null when unknown or the time does not parse. */
  ageMs: number | null;
  /** The error of the previous attempt, if any. */
  lastError: string | null;
}

/** Why one unfinished task is where it is. */
export type TaskExplanation = PendingTaskExplanation | ReadyTaskExplanation | RunningTaskExplanation;

/** What the dependencies of `def` say in `runtime` (its gates aside): its dep_policy's verdict and who decides it. */
function dependencyStateOf(runtime: WorkflowRuntime, def: TaskDefinition): DependencyState {
  const statuses = def.dependsOn.map((p) => taskState(runtime, p)?.status ?? 'pending');
  const satisfied = statuses.filter(isSatisfying).length;
  const blocking = def.dependsOn.filter((_, i) => isBlocking(statuses[i]!));
  const unmet = def.dependsOn.filter((_, i) => !isSatisfying(statuses[i]!) && !isBlocking(statuses[i]!));
  return {
    policy: def.depPolicy,
    total: def.dependsOn.length,
    satisfied,
    blocking,
    unmet,
    verdict: policyVerdict(def.depPolicy, def.dependsOn.length, satisfied, blocking.length),
  };
}

/**
 * What the dependencies of task `name` say now, whatever its status (the rule a pending task is
 * settled by); undefined when the definition has no such task.
 */
export function dependencyState(runtime: WorkflowRuntime, name: string): DependencyState | undefined {
  const def = runtime.definition.tasks.find((t) => t.name === name);
  return def === undefined ? undefined : dependencyStateOf(runtime, def);
}

/** A running retry whose delay has not ended at `nowMs`: its queue has not delivered it yet (the reducer's rule). */
export function waitsForDelay(task: TaskRuntime, nowMs: number): boolean {
  return task.status === 'running' && task.retryDueAt !== null && epochMs(task.retryDueAt) > nowMs;
}

/**
 * Why each unfinished task of `runtime` is where it is at `now` (ISO-8601), and what holds the
 * workflow. Pure: reads no clock and changes nothing. O(tasks).
 */
export function explainRuntime(runtime: WorkflowRuntime, now: string): RuntimeExplanation {
  const nowMs = epochMs(now);
  const definition = runtime.definition;
  let waitingRetries = 0;
  for (const [, task] of tasksIn(runtime)) if (waitsForDelay(task, nowMs)) waitingRetries++;
  const holding = runtime.counts.running - waitingRetries;
  const limit = definition.maxParallelism;
  const terminal = isTerminalWorkflowStatus(runtime.status);
  const engineCancel = runtime.cancelReason !== null && runtime.cancelRequested;

  const tasks: TaskExplanation[] = [];
  let readyAhead = 0;
  const statusOf = (name: string): TaskStatus => taskState(runtime, name)?.status ?? 'pending';
  for (const def of definition.tasks) {
    const task = taskState(runtime, def.name);
    if (!task || isTerminalTaskStatus(task.status)) continue;
    const base = { name: def.name, queue: taskQueue(definition, def), attemptNo: task.attemptNo };
    if (task.status === 'pending') {
      const unmetGates = (def.gates ?? []).filter((g) => !isSatisfying(statusOf(g)));
      const dependencies = dependencyStateOf(runtime, def);
      const cause: PendingCause =
        dependencies.verdict === 'wait'
          ? 'dependencies'
          : dependencies.verdict === 'blocked'
            ? 'blocked'
            : task.awaitingInputs
              ? 'inputs'
              : unmetGates.length > 0
                ? 'gates'
                : !runtime.activated
                  ? 'activation'
                  : def.condition !== null
                    ? 'condition'
                    : 'settle';
      tasks.push({
        ...base,
        status: 'pending',
        cancelRequested: runtime.cancelRequested,
        unmetGates,
        dependencies,
        hasCondition: def.condition !== null,
        cause,
      });
    } else if (task.status === 'ready') {
      const heldBy: ReadyHold = runtime.cancelRequested
        ? 'cancel'
        : !runtime.activated
          ? 'activation'
          : limit !== null && holding >= limit
            ? 'max_parallelism'
            : null;
      tasks.push({ ...base, status: 'ready', heldBy, readyAhead });
      readyAhead++;
    } else {
      const waiting = waitsForDelay(task, nowMs);
      const since = task.retryDueAt ?? task.dispatchedAt;
      const sinceMs = since === null ? NaN : epochMs(since);
      tasks.push({
        ...base,
        status: 'running',
        numRetries: def.numRetries,
        retryNo: task.attemptNo - task.retryBase - 1,
        timeoutS: taskTimeoutS(definition, def),
        waitingUntil: waiting ? task.retryDueAt : null,
        dueInMs: waiting ? epochMs(task.retryDueAt!) - nowMs : null,
        since,
        sinceIsDue: task.retryDueAt !== null,
        ageMs: waiting || Number.isNaN(sinceMs) || Number.isNaN(nowMs) ? null : nowMs - sinceMs,
        lastError: task.error,
      });
    }
  }

  return {
    workflow: {
      status: runtime.status,
      terminal,
      activated: runtime.activated,
      corruptReason: runtime.corruptReason,
      cancelRequested: runtime.cancelRequested,
      cancelReason: engineCancel ? runtime.cancelReason : null,
      deadline:
        !engineCancel && runtime.deadlineAt !== null && !terminal ? { at: runtime.deadlineAt, timeoutS: definition.timeoutS } : null,
      maxParallelism:
        limit === null ? null : { limit, running: runtime.counts.running, waitingRetries, holding, ready: runtime.counts.ready },
    },
    tasks,
  };
}
