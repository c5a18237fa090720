import { createHash, randomUUID } from 'node:crypto';
import {
  createRuntime,
  explainRuntime,
  pendingRequests,
  planRerun,
  isTerminalWorkflowStatus,
  parseWorkflow,
  sequentializeFanIn,
  WORKFLOW_ID_PATTERN,
  validateDefinition,
  type Issue,
  type TaskCounts,
  type TaskStatus,
  type WorkflowDefinition,
  type WorkflowRuntime,
  type WorkflowStatus,
} from '@jobq/dag-core';
import { encodeDefinition, encodeWakeup } from '@jobq/dag-core/wire';
import {
  JobqError,
  isJobqError,
  type CompletionRoute,
  type LoadedRuntime,
  type OperationOptions,
  type Page,
  type TaskFilter,
  type TaskQueue,
  type TaskRow,
  type WorkflowFilter,
  type WorkflowStore,
  type WorkflowSummary,
} from '@jobq/ports';

import { taskReasons, workflowReasons as workflowReasonsOf } from './explain-reasons';
import { RERUN_WAKEUP_SUFFIX, newRerunRequestId } from './rerun-request';
import { endSpan, formatElapsed, startSubmitSpan, storedTraceparentOf } from '@jobq/ports';

/** `--id`: the workflow id rule of `@jobq/dag-core` (1–128 chars of `[A-Za-z0-9._-]`, starting with a letter or digit). */
export const SUBMIT_ID_PATTERN = WORKFLOW_ID_PATTERN;

/** A definition that failed to parse, validate or transform; every issue is on {@link issues}. */
export class WorkflowValidationError extends JobqError {
  readonly issues: Issue[];

  constructor(issues: Issue[], filename: string) {
    const first = issues[0];
    const head = first === undefined ? `${filename}: invalid workflow` : formatIssue(filename, first);
    const more = issues.length > 1 ? ` (+${issues.length - 1} more)` : '';
    super('invalid-argument', `${head}${more}`, { details: { filename, issueCount: issues.length } });
    this.issues = issues;
  }
}

/** `file:line:col: code: message (hint)` (the position only when known, the hint only when there is one). */
export function formatIssue(filename: string, issue: Issue): string {
  const position = issue.line === undefined ? '' : `:${issue.line}${issue.column === undefined ? '' : `:${issue.column}`}`;
  const path = issue.line === undefined && issue.path !== '' ? ` ${issue.path}:` : '';
  const hint = issue.hint === undefined ? '' : ` (${issue.hint})`;
  return `${filename}${position}:${path} ${issue.code}: ${issue.message}${hint}`;
}

/**
 * sha256 hex of the canonical JSON of `toRawDefinition(definition)` (`encodeDefinition` of
 * `@jobq/dag-core`): what recognises a resubmission (docs/runtime-format.md), and the name of the definition blob
 * the store writes (the store hashes the same bytes).
 */
export function definitionHash(definition: WorkflowDefinition): string {
  return createHash('sha256').update(encodeDefinition(definition), 'utf8').digest('hex');
}

/** JSON with object keys sorted at every level (moved to `@jobq/dag-core`; re-exported here). */
export { canonicalJson } from '@jobq/dag-core/wire';

/** What to submit: a workflow file's text, or a definition already in hand. */
export type SubmitSource = { text: string; filename?: string } | { definition: WorkflowDefinition };

/** Options of {@link WorkflowClient.submit}. */
export interface SubmitOptions extends OperationOptions {
  /** `--id`; default 32 hex chars of a random UUID. */
  id?: string;
  /** `--max-fan-in N` (docs/workflow-language.md#wide-fan-ins). */
  maxFanIn?: number;
}

/** The outcome of {@link WorkflowClient.submit}. */
export interface SubmitResult {
  workflowId: string;
  /** False when the id already held the same definition (nothing written). */
  created: boolean;
  warnings: Issue[];
}

/** One item of {@link WorkflowClient.submitMany}: a source with its own id and fan-in limit. */
export type SubmitManyItem = SubmitSource & { id?: string; maxFanIn?: number };

/** The outcome of one item of {@link WorkflowClient.submitMany}. */
export type SubmitManyResult = ({ ok: true } & SubmitResult) | { ok: false; error: unknown };

/** Options of {@link WorkflowClient.submitMany}. */
export interface SubmitManyOptions extends OperationOptions {
  /** Submits in flight at once. Default 20. */
  concurrency?: number;
  /** Fan-in limit for items that give none. */
  maxFanIn?: number;
  /** Called after each item settles; what it throws is ignored. */
  onProgress?: (done: number, total: number, result: SubmitManyResult) => void;
}

/** What {@link WorkflowClient.status} returns. */
export interface WorkflowStatusReport extends WorkflowSummary {
  /** With `detail: true`: the runtime blob's view (the truth; the index row may lag); null when the blob is missing. */
  runtime?: RuntimeView | null;
}

/** The runtime's own status and counts. */
export interface RuntimeView {
  status: WorkflowStatus;
  counts: TaskCounts;
  activated: boolean;
  cancelRequested: boolean;
  updatedAt: string;
  finishedAt: string | null;
}

/** The outcome of {@link WorkflowClient.cancel} and {@link WorkflowClient.retry}. */
export interface RequestResult {
  requested: boolean;
  /** Why nothing was requested. */
  message?: string;
}

/** Options of {@link WorkflowClient.rerun}. */
export interface RerunOptions extends OperationOptions {
  /** Also re-run every task that depends on the task, transitively. Default false. */
  downstream?: boolean;
}

/** The outcome of {@link WorkflowClient.rerun}. */
export type RerunResult =
  | {
      requested: true;
      /** The request's id (the record's key; the runtime remembers it once applied). */
      requestId: string;
      requestedAt: string;
      /** The tasks it re-runs, in definition order, as the runtime stood when checked. */
      tasks: string[];
    }
  | {
      requested: false;
      /**
       * `unknown-task`: the workflow has no such task; `refused`: not now (the task has not run, it
       * or a dependent re-run with it is queued or running, a cancel stands or waits); `corrupt`:
       * the workflow was set aside.
       */
      reason: 'unknown-task' | 'refused' | 'corrupt';
      message: string;
    };

/** Options of {@link WorkflowClient.explain}. */
export interface ExplainOptions extends OperationOptions {
  /** A running task older than this is flagged stale. Default 1 h. */
  staleRunningAfterMs?: number;
  /** A queue whose oldest visible message is older than this is flagged. Default 5 min. */
  oldestMessageAfterMs?: number;
  /** The queue of a queue spec, to peek; undefined skips that queue. */
  peekQueues?: (queueSpec: string) => TaskQueue | undefined;
}

/** Why one task is where it is. */
export interface ExplainedTask {
  name: string;
  status: TaskStatus;
  queue: string;
  attemptNo: number;
  reasons: string[];
  /**
   * When the queue delivers a retry sent with a delay (`retry_delay_s`), while it is still waiting;
   * null otherwise. Snake_case: it is printed as it is by `--json`.
   */
  retry_due_at: string | null;
}

/** What a peek of one queue showed. */
export interface ExplainedQueue {
  /** The queue spec. */
  queue: string;
  /** The backend's name of the queue, when peeked. */
  name: string | null;
  /** Tasks of this workflow routed here that are ready or running. */
  readyTasks: number;
  runningTasks: number;
  approximateMessageCount: number | null;
  /** Age of the oldest visible message at `now`, when one was seen. */
  oldestMessageAgeMs: number | null;
  reasons: string[];
}

/** What {@link WorkflowClient.explain} returns. */
export interface ExplainReport {
  workflow: {
    workflowId: string;
    name: string;
    /** The runtime's status. */
    status: WorkflowStatus;
    /** The index row's status (null without an index row). */
    indexStatus: WorkflowStatus | null;
    counts: TaskCounts;
    activated: boolean;
    updatedAt: string;
    reasons: string[];
  };
  /** Every non-terminal task, in definition order. */
  tasks: ExplainedTask[];
  queues: ExplainedQueue[];
}

/** Options of {@link WorkflowClient}. */
export interface WorkflowClientOptions {
  store: WorkflowStore;
  /** The `{p}-workflow-completions` queue (shard 0's): wake-ups go here unless `route` says otherwise. */
  completions: TaskQueue;
  /**
   * Routes each wake-up to its workflow's shard's completion queue (docs/sharding.md#routing), e.g.
   * a `ShardRouter` on the deployment's manifest. Default: every wake-up to `completions`.
   */
  route?: CompletionRoute;
  /** Container of canonical output blobs (docs/design.md#outputs), stored in new runtimes. */
  outputsContainer: string | null;
  now?: () => Date;
  newId?: () => string;
}

const MAX_NAMES_SHOWN = 5;

/**
 * The client side of workflows: submit, status, list, cancel, retry, explain. Writes only what
 * the storage layout (docs/design.md#storage-layout) lets a client write (a new runtime, request timestamps) and sends wake-ups; the
 * coordinator does the rest.
 */
export class WorkflowClient {
  private readonly store: WorkflowStore;
  private readonly completions: TaskQueue;
  private readonly route: CompletionRoute | null;
  private readonly outputsContainer: string | null;
  private readonly now: () => Date;
  private readonly newId: () => string;

  constructor(options: WorkflowClientOptions) {
    this.store = options.store;
    this.completions = options.completions;
    this.route = options.route ?? null;
    this.outputsContainer = options.outputsContainer;
    this.now = options.now ?? (() => new Date());
    this.newId = options.newId ?? (() => randomUUID().replace(/-/g, ''));
  }

  /**
   * Parses, validates and (with `maxFanIn`) transforms a definition, then creates its runtime and
   * sends a wake-up. Resubmitting an id with the same definition is `created: false` (the wake-up is
   * sent again, which repairs a lost one); a different definition is the store's `conflict`.
   * @throws WorkflowValidationError for a definition with issues; `invalid-argument` for a bad id.
   */
  async submit(source: SubmitSource, options: SubmitOptions = {}): Promise<SubmitResult> {
    const workflowId = options.id ?? this.newId();
    if (!SUBMIT_ID_PATTERN.test(workflowId)) {
      throw new JobqError(
        'invalid-argument',
        `workflow id ${JSON.stringify(workflowId)} is not valid: use 1–128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
        { details: { workflowId: workflowId.slice(0, 200) } },
      );
    }
    const { definition, warnings } = prepareDefinition(source, options.maxFanIn);
    // The workflow's trace: this span, started and ended here, is the parent of every dispatch's
    // span (docs/observability.md#tracing); a no-op without an OpenTelemetry SDK.
    const span = startSubmitSpan(workflowId, definition.name, definition.tasks.length);
    try {
      const runtime = createRuntime(definition, {
        workflowId,
        now: this.now().toISOString(),
        outputsContainer: this.outputsContainer,
        traceparent: storedTraceparentOf(span),
      });
      const op = options.abortSignal ? { abortSignal: options.abortSignal } : {};
      const result = await this.store.create(runtime, definitionHash(definition), op);
      await this.wake(workflowId, undefined, op);
      span.setAttribute('jobq.workflow.created', result.created);
      endSpan(span);
      return { workflowId, created: result.created, warnings };
    } catch (error) {
      endSpan(span, error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  /** Submits many sources, at most `concurrency` at once; one bad item never rejects the call. Results are in input order. */
  async submitMany(items: readonly SubmitManyItem[], options: SubmitManyOptions = {}): Promise<SubmitManyResult[]> {
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 20));
    const results: SubmitManyResult[] = new Array<SubmitManyResult>(items.length);
    let next = 0;
    let done = 0;
    const worker = async (): Promise<void> => {
      while (next < items.length) {
        const index = next++;
        const item = items[index]!;
        let result: SubmitManyResult;
        try {
          const submitted = await this.submit(item, {
            ...(item.id !== undefined ? { id: item.id } : {}),
            ...((item.maxFanIn ?? options.maxFanIn) !== undefined ? { maxFanIn: item.maxFanIn ?? options.maxFanIn } : {}),
            ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
          });
          result = { ok: true, ...submitted };
        } catch (error) {
          result = { ok: false, error };
        }
        results[index] = result;
        done++;
        try {
          options.onProgress?.(done, items.length, result);
        } catch {
          // A progress callback's failure is not the submit's.
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, () => worker()));
    return results;
  }

  /** The index row (plus, with `detail`, the runtime's view); null for an unknown id. */
  async status(workflowId: string, options: OperationOptions & { detail?: boolean } = {}): Promise<WorkflowStatusReport | null> {
    const op = options.abortSignal ? { abortSignal: options.abortSignal } : {};
    const summary = await this.store.getWorkflow(workflowId, op);
    if (summary === null) return null;
    if (options.detail !== true) return summary;
    const loaded = await this.store.load(workflowId, op);
    return { ...summary, runtime: loaded === null ? null : runtimeView(loaded.runtime) };
  }

  list(filter: WorkflowFilter = {}): Promise<Page<WorkflowSummary>> {
    return this.store.listWorkflows(filter);
  }

  tasks(filter: TaskFilter = {}): Promise<Page<TaskRow>> {
    return this.store.listTasks(filter);
  }

  /**
   * Records a cancel request and sends a wake-up (docs/design.md#cancel-and-retry-requests). A terminal workflow is a no-op with a
   * message; cancelling twice is harmless. @throws JobqError `not-found` for an unknown id.
   */
  async cancel(workflowId: string, options: OperationOptions = {}): Promise<RequestResult> {
    const summary = await this.requireSummary(workflowId, options);
    if (summary.status === 'corrupt') return { requested: false, message: corruptMessage(workflowId, summary, 'cancelled') };
    if (isTerminalWorkflowStatus(summary.status)) {
      // The index row may lag the runtime: the blob decides.
      const loaded = await this.store.load(workflowId, options);
      const status = loaded?.runtime.status ?? summary.status;
      if (isTerminalWorkflowStatus(status)) {
        return { requested: false, message: `workflow "${workflowId}" is already ${status}: nothing to cancel` };
      }
    }
    await this.store.requestCancel(workflowId, this.now().toISOString(), options);
    await this.wake(workflowId, `cancel-${this.now().getTime()}`, options);
    return { requested: true };
  }

  /**
   * Records a retry request and sends a wake-up (docs/design.md#cancel-and-retry-requests) when the workflow has failed,
   * upstream_failed or cancelled tasks (or a cancel not yet applied); else a no-op with a message.
   * @throws JobqError `not-found` for an unknown id.
   */
  async retry(workflowId: string, options: OperationOptions = {}): Promise<RequestResult> {
    const summary = await this.requireSummary(workflowId, options);
    if (summary.status === 'corrupt') return { requested: false, message: corruptMessage(workflowId, summary, 'retried') };
    if (!retryable(summary.counts) && !cancelPending(summary)) {
      const loaded = await this.store.load(workflowId, options);
      if (loaded === null || !retryable(loaded.runtime.counts)) {
        return {
          requested: false,
          message: `nothing to retry: workflow "${workflowId}" (${summary.status}) has no failed, upstream_failed or cancelled tasks`,
        };
      }
    }
    await this.store.requestRetry(workflowId, this.now().toISOString(), options);
    await this.wake(workflowId, `retry-${this.now().getTime()}`, options);
    return { requested: true };
  }

  /**
   * Records a request to re-run `taskName` — also a completed task — and, with `downstream`, every
   * task that depends on it transitively, then sends a wake-up (docs/failure-model.md, "Re-running
   * a task"). Nothing is written when the request would not be applied: an unknown task, a task
   * that has not run yet, a task (or with `downstream` a dependent) queued or running now, a
   * cancel standing or waiting, a corrupt workflow. The coordinator checks again when it applies
   * the request. @throws JobqError `not-found` for an unknown id.
   */
  async rerun(workflowId: string, taskName: string, options: RerunOptions = {}): Promise<RerunResult> {
    const op = options.abortSignal ? { abortSignal: options.abortSignal } : {};
    const downstream = options.downstream === true;
    const summary = await this.requireSummary(workflowId, op);
    if (summary.status === 'corrupt')
      return { requested: false, reason: 'corrupt', message: corruptMessage(workflowId, summary, 're-run') };
    const loaded = await this.store.load(workflowId, op);
    if (loaded === null) throw notFound(workflowId);
    const plan = planRerun(loaded.runtime, taskName, downstream);
    if (!plan.ok) return { requested: false, reason: plan.code, message: plan.reason };
    if (cancelPending(summary)) {
      return {
        requested: false,
        reason: 'refused',
        message: `a cancel of workflow "${workflowId}" was requested at ${summary.cancelRequestedAt} and is not applied yet: a re-run does not lift a cancel (retry the workflow first)`,
      };
    }
    const now = this.now();
    const requestId = newRerunRequestId(now);
    const requestedAt = now.toISOString();
    await this.store.requestRerun({ workflowId, requestId, taskName, downstream, requestedAt }, op);
    await this.wake(workflowId, `${RERUN_WAKEUP_SUFFIX}${requestId}`, op);
    return { requested: true, requestId, requestedAt, tasks: plan.tasks };
  }

  /**
   * Why each non-terminal task is where it is, from the runtime blob, plus (with `peekQueues`) how
   * old the oldest message of each queue in use is. @throws JobqError `not-found` for an unknown id.
   */
  async explain(workflowId: string, options: ExplainOptions = {}): Promise<ExplainReport> {
    const op = options.abortSignal ? { abortSignal: options.abortSignal } : {};
    const summary = await this.store.getWorkflow(workflowId, op);
    let loaded: LoadedRuntime | null;
    try {
      loaded = await this.store.load(workflowId, op);
    } catch (error) {
      if (summary?.status !== 'corrupt' || !isJobqError(error, 'corrupt')) throw error;
      throw new JobqError('corrupt', corruptMessage(workflowId, summary, 'explained'), { details: { workflowId } });
    }
    if (loaded === null) throw notFound(workflowId);
    const runtime = loaded.runtime;
    const now = this.now();
    const nowMs = now.getTime();
    const staleAfter = options.staleRunningAfterMs ?? 3_600_000;
    const oldestAfter = options.oldestMessageAfterMs ?? 300_000;
    const definition = runtime.definition;

    const explained = explainRuntime(runtime, now.toISOString());
    const pending = summary === null ? null : pendingRequests(summary);
    const cancelNotApplied = pending !== null && pending.cancel;
    const workflowReasons = workflowReasonsOf(
      explained.workflow,
      pending === null || summary === null
        ? null
        : { ...pending, cancelRequestedAt: summary.cancelRequestedAt, retryRequestedAt: summary.retryRequestedAt },
    );
    // Re-run requests recorded and not yet applied (the first page is plenty to say so).
    const applied = new Set((runtime.rerunsApplied ?? []).map((r) => r.id));
    for (const r of (await this.store.listReruns({ workflowId, limit: MAX_NAMES_SHOWN, ...op })).items) {
      if (applied.has(r.requestId)) continue;
      workflowReasons.push(
        `re-run of task "${r.taskName}"${r.downstream ? ' and what depends on it' : ''} requested at ${r.requestedAt} and not yet applied by the coordinator (is a coordinator running?)`,
      );
    }

    const tasks: ExplainedTask[] = [];
    const perQueue = new Map<string, { ready: number; running: number }>();
    const context = { runtime, w: explained.workflow, cancelNotApplied, staleAfterMs: staleAfter };
    for (const task of explained.tasks) {
      const usage = perQueue.get(task.queue) ?? { ready: 0, running: 0 };
      perQueue.set(task.queue, usage);
      if (task.status === 'ready') usage.ready++;
      else if (task.status === 'running') usage.running++;
      const retryDueAt = task.status === 'running' ? task.waitingUntil : null;
      tasks.push({
        name: task.name,
        status: task.status,
        queue: task.queue,
        attemptNo: task.attemptNo,
        reasons: taskReasons(task, context),
        retry_due_at: retryDueAt,
      });
    }

    const queues: ExplainedQueue[] = [];
    for (const [spec, usage] of perQueue) {
      if (usage.ready === 0 && usage.running === 0) continue;
      const queue = options.peekQueues?.(spec);
      const entry: ExplainedQueue = {
        queue: spec,
        name: queue?.name ?? null,
        readyTasks: usage.ready,
        runningTasks: usage.running,
        approximateMessageCount: null,
        oldestMessageAgeMs: null,
        reasons: [],
      };
      queues.push(entry);
      if (!queue) continue;
      try {
        const [peeked, count] = await Promise.all([queue.peek(1, op), queue.approximateMessageCount(op)]);
        entry.approximateMessageCount = count;
        const oldest = peeked[0];
        if (oldest === undefined) {
          entry.reasons.push(`queue "${queue.name}" has no visible message`);
        } else if (oldest.enqueuedAt !== null) {
          const age = nowMs - oldest.enqueuedAt.getTime();
          entry.oldestMessageAgeMs = age;
          if (age > oldestAfter) {
            entry.reasons.push(
              `no worker is taking messages from queue "${queue.name}": its oldest visible message is ${formatElapsed(age)} old`,
            );
          } else {
            entry.reasons.push(`oldest visible message of queue "${queue.name}" is ${formatElapsed(age)} old`);
          }
        }
      } catch (error) {
        entry.reasons.push(`could not peek queue "${queue.name}": ${error instanceof Error ? error.message : String(error)}`);
      }
    }

    return {
      workflow: {
        workflowId,
        name: definition.name,
        status: runtime.status,
        indexStatus: summary?.status ?? null,
        counts: runtime.counts,
        activated: runtime.activated,
        updatedAt: runtime.updatedAt,
        reasons: workflowReasons,
      },
      tasks,
      queues,
    };
  }

  private async requireSummary(workflowId: string, options: OperationOptions): Promise<WorkflowSummary> {
    const summary = await this.store.getWorkflow(workflowId, options);
    if (summary === null) throw notFound(workflowId);
    return summary;
  }

  /**
   * Sends a wake-up. The envelope id is `wakeup/{id}` (submit) or `wakeup/{id}/{suffix}`; no
   * backend message id is set, so a duplicate-detecting backend never drops a later request's wake-up.
   */
  private async wake(workflowId: string, suffix: string | undefined, options: OperationOptions): Promise<void> {
    const queue = this.route === null ? this.completions : await this.route.queueFor(workflowId);
    await queue.send({ body: encodeWakeup(workflowId, suffix) }, options);
  }
}

function prepareDefinition(source: SubmitSource, maxFanIn: number | undefined): { definition: WorkflowDefinition; warnings: Issue[] } {
  let filename: string;
  let definition: WorkflowDefinition;
  let warnings: Issue[];
  if ('definition' in source) {
    filename = '<definition>';
    // A definition the fan-in transform made is checked with the engine's own rules; any other with a user's.
    const checked = validateDefinition(source.definition);
    if (!checked.ok) throw new WorkflowValidationError(checked.issues, filename);
    definition = checked.value;
    warnings = checked.warnings;
  } else {
    filename = source.filename ?? '<input>';
    const parsed = parseWorkflow(source.text, source.filename === undefined ? {} : { filename: source.filename });
    if (!parsed.ok) throw new WorkflowValidationError(parsed.issues, filename);
    definition = parsed.value;
    warnings = parsed.warnings;
  }
  if (maxFanIn !== undefined) {
    const split = sequentializeFanIn(definition, maxFanIn);
    if (!split.ok) throw new WorkflowValidationError(split.issues, filename);
    definition = split.value;
    warnings = [...warnings, ...split.warnings];
  }
  return { definition, warnings };
}

/** The parts of a runtime that a status report shows. */
export function runtimeView(runtime: WorkflowRuntime): RuntimeView {
  return {
    status: runtime.status,
    counts: runtime.counts,
    activated: runtime.activated,
    cancelRequested: runtime.cancelRequested,
    updatedAt: runtime.updatedAt,
    finishedAt: runtime.finishedAt,
  };
}

function retryable(counts: TaskCounts): boolean {
  return counts.failed + counts.upstream_failed + counts.cancelled > 0;
}

/** A cancel request recorded and not yet applied, and not overtaken by a retry request. */
function cancelPending(summary: WorkflowSummary): boolean {
  return pendingRequests(summary).cancel;
}

/** Why a corrupt workflow cannot be cancelled, retried or explained. */
function corruptMessage(workflowId: string, summary: WorkflowSummary, what: string): string {
  return `workflow "${workflowId}" is corrupt${summary.error ? ` (${summary.error.replace(/^corrupt: /, '')})` : ''}: the coordinator set it aside, so it cannot be ${what}; submit the workflow again under a new id`;
}

function notFound(workflowId: string): JobqError {
  return new JobqError('not-found', `workflow "${workflowId}" does not exist`, { details: { workflowId } });
}
