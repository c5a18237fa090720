import {
  DEFAULT_TASK_MESSAGE_TTL_MS,
  changedTasks,
  foldEvents,
  isTerminalWorkflowStatus,
  reduce,
  taskCount,
  type DispatchEffect,
  type Effect,
  type FetchConditionInputsEffect,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { encodeTaskMessage, messageByteLength, type EnvelopeTrace, withEnvelopeTrace } from '@jobq/dag-core/wire';
import type { Context, Span } from '@opentelemetry/api';
import {
  isJobqError,
  JobqError,
  type Clock,
  type Instruments,
  type LoadedRuntime,
  type OutgoingMessage,
  type OutputStore,
  type SaveResult,
  type TaskQueue,
  type WorkflowStore,
} from '@jobq/ports';
import type { TaskRowWriter } from './task-rows';
import { traceContextOf, endSpan, envelopeTraceOf, errorMessage, mapLimit, remoteSpanContext, startSendSpan } from '@jobq/ports';

/** Gives the queue of a queue spec (docs/design.md#queues-and-backends): the app's pool of clients. */
export type QueueResolver = (queueSpec: string) => TaskQueue | Promise<TaskQueue>;

/** What {@link applyEvents} needs. */
export interface ApplyContext {
  store: WorkflowStore;
  outputs: OutputStore;
  queues: QueueResolver;
  /** ISO time of "now" for the events the coordinator adds itself. */
  now: () => string;
  log: (line: string) => void;
  /** 412 re-reads before giving up. */
  flushRetryLimit: number;
  /** Aborts store and queue calls (lease lost, stop). */
  signal: AbortSignal;
  counters: ApplyCounters;
  /** Runtimes and ETags of this coordinator's own last saves (docs/design.md#the-coordinator: may be cached between batches). */
  cache?: RuntimeCache;
  /** Time to live of the task messages pushed (undefined: the queue's default; Infinity: never expire). */
  taskMessageTtlInMs?: number;
  /** Takes the task rows of saves off the critical path (see {@link saveRuntime}); without it every save writes its rows. */
  rows?: TaskRowWriter;
  /** Where flushes and dispatches are recorded (docs/metrics.md); `clock` times the flushes. */
  instruments?: Instruments;
  clock?: Clock;
  /** Told the queue spec of each dispatch (the coordinator samples those queues for its gauges). */
  dispatched?: (queueSpec: string) => void;
}

/** A cached runtime with the ETag of the blob it was saved as. */
export interface CachedRuntime {
  runtime: WorkflowRuntime;
  etag: string;
}

/**
 * The runtimes the coordinator last saved, so the next batch of a workflow skips the blob read and
 * the decode. Bounded by the total number of tasks held (default 1 000 000; least recently used
 * out first), but the workflow saved last is always kept, however large. A stale
 * entry is harmless: the save is conditional on its ETag, so it fails with 412 and the blob is read
 * again; and a batch that changes nothing on a cached runtime is checked against a fresh read
 * before its messages are acked.
 */
export class RuntimeCache {
  private readonly entries = new Map<string, CachedRuntime & { size: number }>();
  private tasks = 0;

  constructor(private readonly maxTasks = 1_000_000) {}

  get(workflowId: string): CachedRuntime | undefined {
    const entry = this.entries.get(workflowId);
    if (entry === undefined) return undefined;
    this.entries.delete(workflowId);
    this.entries.set(workflowId, entry);
    return entry;
  }

  set(workflowId: string, value: CachedRuntime): void {
    this.delete(workflowId);
    const size = taskCount(value.runtime);
    this.entries.set(workflowId, { ...value, size });
    this.tasks += size;
    // The entry just set always stays, however large: without it every batch of a workflow larger
    // than the bound would read the runtime back and write all its task rows.
    for (const [id, entry] of this.entries) {
      if (this.tasks <= this.maxTasks || id === workflowId) break;
      this.entries.delete(id);
      this.tasks -= entry.size;
    }
  }

  delete(workflowId: string): void {
    const entry = this.entries.get(workflowId);
    if (entry === undefined) return;
    this.entries.delete(workflowId);
    this.tasks -= entry.size;
  }

  /** Whether the workflow has an entry (without touching its place in the order). */
  has(workflowId: string): boolean {
    return this.entries.has(workflowId);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** What {@link saveRuntime} knows of the runtime stored now (`base`). */
export interface SaveBase {
  /** The runtime stored now, the one `runtime` was reduced from. */
  base: WorkflowRuntime;
  /**
   * `base` is this coordinator's own last save, so a finishing save may write only the task rows
   * that changed since (otherwise it writes every row, repairing rows a stopped coordinator lost).
   */
  cached: boolean;
  /**
   * The task rows of `base` are written, or waiting in the row writer: only the rows `runtime`
   * changes need writing (true when `cached`, and for a workflow never activated, whose rows are
   * those its submit wrote). Otherwise every row is written, repairing rows a stopped coordinator
   * did not write.
   */
  rowsKnown: boolean;
}

/**
 * Saves `runtime` over `etag`. With a row writer (docs/failure-model.md, "Task rows"), a workflow
 * that is not finished has its runtime saved, and its index row and changed task rows handed to
 * the writer, which writes them off the critical path; a finished one takes its waiting rows back
 * from the writer (after any write of them in flight) and the save writes them with its own,
 * before its index row: once the index row says the workflow is finished, its task rows are final.
 */
export async function saveRuntime(ctx: ApplyContext, runtime: WorkflowRuntime, etag: string, from: SaveBase): Promise<SaveResult> {
  const options = { ...(from.cached ? { previous: from.base } : {}), abortSignal: ctx.signal };
  const rows = ctx.rows;
  if (rows === undefined) return ctx.store.save(runtime, etag, options);
  if (!isTerminalWorkflowStatus(runtime.status)) {
    // `base` is the runtime stored at `etag` (cached or just read): the save appends the change
    // since it to the runtime log instead of writing a snapshot. Task rows are the writer's.
    const saved = await ctx.store.save(runtime, etag, {
      previous: from.base,
      abortSignal: ctx.signal,
      deferTaskRows: true,
      deferIndexRow: true,
    });
    rows.add(runtime, changedTasks(from.rowsKnown || from.cached ? from.base : undefined, runtime));
    rows.addIndex(runtime);
    return saved;
  }
  const waiting = await rows.take(runtime.workflowId);
  try {
    return await ctx.store.save(runtime, etag, { ...options, alsoTaskRows: waiting });
  } catch (error) {
    rows.add(from.base, waiting);
    throw error;
  }
}

/** The counters {@link applyEvents} keeps. */
export interface ApplyCounters {
  conflicts: number;
  pushes: number;
  pushErrors: number;
  overflowBlobs: number;
  saves: number;
  rowsErrors: number;
}

/** One event of a batch with the effects the reducer gave it (an `ignored` effect: it changed nothing). */
export interface EventOutcome {
  event: WorkflowEvent;
  effects: Effect[];
}

/** Each event of `events` with its effects (`effects[i]` are event i's, as {@link foldEvents} gives them). */
function eventOutcomes(events: readonly WorkflowEvent[], effects: readonly Effect[][]): EventOutcome[] {
  return events.map((event, i) => ({ event, effects: effects[i] ?? [] }));
}

/** The outcome of {@link applyEvents}. */
export type ApplyOutcome =
  /** The runtime was saved (or nothing changed): the messages may be acked. `events`: what each event came to. */
  | { kind: 'applied'; saved: boolean; runtime: WorkflowRuntime; events: EventOutcome[] }
  /** No runtime for this id. */
  | { kind: 'missing' }
  /**
   * Leave the messages for redelivery: a transient push or read error (`outage`: a service is
   * down, waiting is the cure), or 412 past the retry limit (another writer).
   */
  | { kind: 'retry-later'; reason: string; outage: boolean }
  /**
   * The workflow cannot be processed: its runtime does not decode, or the reducer threw on these
   * events (`runtime` is then the runtime as loaded), or it was set aside as corrupt before
   * (`already`). It gets no further processing; its messages go to the dead-letter queue.
   */
  | { kind: 'corrupt'; reason: string; runtime: WorkflowRuntime | null; etag: string | null; already: boolean };

/** A transient push (or read) error: aborts the workflow's batch before the flush. */
class RetryLater extends Error {}

/** The reducer (pure code) threw on this workflow's events: the same events would throw again. */
class Unprocessable extends Error {}

/** Runs pure code on a workflow's state; what it throws makes the workflow unprocessable. */
function pure<T>(what: string, run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw new Unprocessable(`${what} threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`.slice(0, 500));
  }
}

/**
 * Loads a workflow, folds `events(runtime)` into it, performs the effects in order (push task
 * messages, read condition inputs), then flushes once with the ETag. On a 412 it re-reads and
 * re-applies, up to `flushRetryLimit` times (`conflicts`: 412s these events already met, on a
 * save of the pipeline). With `useCache` the first try starts from the coordinator's cached runtime
 * (when there is one) instead of reading the blob.
 */
export async function applyEvents(
  ctx: ApplyContext,
  workflowId: string,
  events: (runtime: WorkflowRuntime) => WorkflowEvent[],
  options: { useCache?: boolean; conflicts?: number } = {},
): Promise<ApplyOutcome> {
  let useCache = options.useCache ?? false;
  const before = options.conflicts ?? 0;
  if (before > ctx.flushRetryLimit)
    return { kind: 'retry-later', reason: `the runtime changed under us ${before} times (412)`, outage: false };
  for (let attempt = before; ;) {
    const cached = useCache ? ctx.cache?.get(workflowId) : undefined;
    useCache = false;
    let loaded: LoadedRuntime | null;
    try {
      loaded = cached ?? (await ctx.store.load(workflowId, { abortSignal: ctx.signal }));
    } catch (error) {
      if (!isJobqError(error, 'corrupt')) throw error;
      ctx.cache?.delete(workflowId);
      return { kind: 'corrupt', reason: error.message, runtime: null, etag: null, already: false };
    }
    if (!loaded) {
      ctx.cache?.delete(workflowId);
      return { kind: 'missing' };
    }
    const { runtime: start, etag } = loaded;
    if (start.corruptReason !== null) return { kind: 'corrupt', reason: start.corruptReason, runtime: start, etag, already: true };
    let runtime: WorkflowRuntime;
    let outcomes: EventOutcome[];
    try {
      const list = pure('choosing the events', () => events(start));
      if (list.length === 0) return { kind: 'applied', saved: false, runtime: start, events: [] };
      const folded = pure('the reducer', () => foldEvents(start, list));
      outcomes = eventOutcomes(list, folded.effects);
      runtime = await performEffects(ctx, folded.runtime, folded.effects.flat());
    } catch (error) {
      ctx.cache?.delete(workflowId);
      if (error instanceof RetryLater) return { kind: 'retry-later', reason: error.message, outage: true };
      if (error instanceof Unprocessable) return { kind: 'corrupt', reason: error.message, runtime: start, etag, already: false };
      throw error;
    }
    if (runtime === start) {
      // Nothing changed. On a cached runtime, confirm against the blob before the messages are acked.
      if (cached) continue;
      return { kind: 'applied', saved: false, runtime, events: outcomes };
    }
    if (ctx.signal.aborted) return { kind: 'retry-later', reason: 'stopped before the flush', outage: true };
    try {
      // Only this coordinator's own last save is known to have its rows written (or waiting in
      // ctx.rows): after a read from storage (a restart, a 412), every task row is written,
      // repairing rows a crashed writer lost.
      await commit(ctx, runtime, loaded, { cached: cached !== undefined, rowsKnown: !loaded.runtime.activated });
      return { kind: 'applied', saved: true, runtime, events: outcomes };
    } catch (error) {
      ctx.cache?.delete(workflowId);
      if (!isJobqError(error, 'conflict')) throw error;
      ctx.counters.conflicts++;
      if (attempt >= ctx.flushRetryLimit) {
        return { kind: 'retry-later', reason: `the runtime changed under us ${attempt + 1} times (412)`, outage: false };
      }
      attempt++;
      ctx.log(`workflow ${workflowId}: 412 on flush, re-reading and re-applying`);
    }
  }
}

/**
 * Saves `runtime`, reduced from `base` (the runtime stored at `base.etag`), and puts it in the cache;
 * counts the save and logs rows not written. Throws what the save throws (`conflict`: 412).
 * `cached`: `base` is this coordinator's own last save (see {@link SaveBase}).
 */
export async function commit(
  ctx: ApplyContext,
  runtime: WorkflowRuntime,
  base: CachedRuntime,
  from: { cached: boolean; rowsKnown: boolean },
): Promise<string> {
  const id = runtime.workflowId;
  const started = ctx.clock?.now() ?? 0;
  const flushed = (result: 'ok' | 'conflict' | 'error') => {
    if (ctx.instruments && ctx.clock)
      ctx.instruments.observe('jobq_coordinator_flush_duration_seconds', { result }, Math.max(0, ctx.clock.now() - started) / 1000);
  };
  let saved: Awaited<ReturnType<typeof saveRuntime>>;
  try {
    saved = await saveRuntime(ctx, runtime, base.etag, { base: base.runtime, cached: from.cached, rowsKnown: from.rowsKnown });
  } catch (error) {
    flushed(isJobqError(error, 'conflict') ? 'conflict' : 'error');
    throw error;
  }
  flushed('ok');
  ctx.counters.saves++;
  ctx.cache?.set(id, { runtime, etag: saved.etag });
  if (saved.rowsError) {
    ctx.counters.rowsErrors++;
    ctx.log(`workflow ${id}: saved, but some index/task rows were not written: ${saved.rowsError.message}`);
  }
  return saved.etag;
}

/** How the pushes of a {@link foldAhead} ended. */
export type PushOutcome =
  | { kind: 'pushed' }
  /** A transient failure: the state is void; its messages wait for their redelivery. */
  | { kind: 'retry-later'; reason: string }
  /**
   * A message was refused for good: the folded state lacks the failed attempt. `runtime` is the
   * state with it (its own effects performed), when that could be made.
   */
  | { kind: 'diverged'; reason: string; runtime?: WorkflowRuntime };

/** The outcome of {@link foldAhead}. */
export type FoldAheadOutcome =
  /**
   * `runtime` is `start` itself when the events changed nothing; `events`: what each event came
   * to; `pushed` settles once the task messages it dispatches are sent (it never rejects).
   */
  | { kind: 'folded'; runtime: WorkflowRuntime; events: EventOutcome[]; pushed: Promise<PushOutcome> }
  /** A transient read failure: nothing to save, the messages wait for their redelivery (as {@link applyEvents} would leave them). */
  | { kind: 'retry-later'; reason: string }
  /** The reducer threw: the events need {@link applyEvents}, from the stored runtime. */
  | { kind: 'failed'; reason: string };

/** The outcome of pushes that are done (or of none). */
export const PUSHED: Promise<PushOutcome> = Promise.resolve({ kind: 'pushed' });

/**
 * Folds `events` into `start` (a runtime not necessarily saved yet) and starts their effects: the
 * task messages are pushed in the background (`pushed`), so the next batch can fold on the result
 * at once; condition inputs are read before it returns (their events change the state). Nothing
 * is saved: the caller saves the result once `start` is stored and `pushed` says every message
 * went out (docs/failure-model.md, "Pipelining").
 */
export async function foldAhead(ctx: ApplyContext, start: WorkflowRuntime, events: readonly WorkflowEvent[]): Promise<FoldAheadOutcome> {
  try {
    const folded = pure('the reducer', () => foldEvents(start, [...events]));
    const outcomes = eventOutcomes(events, folded.effects);
    const effects = folded.effects.flat();
    if (effects.some((e) => e.type === 'fetch-condition-inputs')) {
      const runtime = await performEffects(ctx, folded.runtime, effects);
      return { kind: 'folded', runtime, events: outcomes, pushed: PUSHED };
    }
    const dispatches: DispatchEffect[] = [];
    for (const effect of effects) {
      if (effect.type === 'dispatch') dispatches.push(effect);
      else logEffect(ctx, start.workflowId, effect);
    }
    const pushed =
      dispatches.length === 0
        ? PUSHED
        : pushAll(ctx, start, dispatches)
            .then(async (failures): Promise<PushOutcome> => {
              const refused = failures.findIndex((f) => f !== null);
              if (refused < 0) return { kind: 'pushed' };
              const reason = `the task message of "${dispatches[refused]!.taskName}" was refused: ${failures[refused]}`;
              // As performEffects does: each refused attempt fails (its effects performed in turn).
              const failed = dispatches.flatMap((dispatch, k) =>
                failures[k] === null || failures[k] === undefined ? [] : [refusedAttempt(ctx, dispatch, failures[k])],
              );
              const next = pure('the reducer', () => foldEvents(folded.runtime, failed));
              return { kind: 'diverged', reason, runtime: await performEffects(ctx, next.runtime, next.effects.flat()) };
            })
            .catch((error: unknown): PushOutcome => {
              const reason = errorMessage(error);
              return error instanceof RetryLater ? { kind: 'retry-later', reason } : { kind: 'diverged', reason };
            });
    return { kind: 'folded', runtime: folded.runtime, events: outcomes, pushed };
  } catch (error) {
    if (error instanceof RetryLater) return { kind: 'retry-later', reason: error.message };
    if (error instanceof Unprocessable) return { kind: 'failed', reason: error.message };
    throw error;
  }
}

/** The failure completion of an attempt whose task message the queue refused for good. */
function refusedAttempt(ctx: ApplyContext, dispatch: DispatchEffect, failure: string): WorkflowEvent {
  return {
    type: 'completion',
    now: ctx.now(),
    taskName: dispatch.taskName,
    attemptNo: dispatch.attemptNo,
    success: false,
    outputRef: null,
    error: `could not send the task message: ${failure}`,
  };
}

/** Logs what a notice or a finished workflow says. */
function logEffect(ctx: ApplyContext, workflowId: string, effect: Effect): void {
  if (effect.type === 'notice') ctx.log(`workflow ${workflowId}: ${effect.message}`);
  else if (effect.type === 'workflow-finished') ctx.log(`workflow ${workflowId}: ${effect.status}`);
}

/** Performs effects in order; effects of the events it adds (condition inputs, push failures) are performed too. */
async function performEffects(ctx: ApplyContext, start: WorkflowRuntime, initial: Effect[]): Promise<WorkflowRuntime> {
  let runtime = start;
  const effects = [...initial];
  const follow = (event: WorkflowEvent) => {
    const next = pure('the reducer', () => reduce(runtime, event));
    runtime = next.runtime;
    effects.push(...next.effects);
  };
  for (let i = 0; i < effects.length; i++) {
    const effect = effects[i];
    if (effect === undefined) continue;
    switch (effect.type) {
      case 'dispatch': {
        // A run of dispatches (an activation can make thousands ready) goes out concurrently.
        let end = i;
        while (effects[end + 1]?.type === 'dispatch') end++;
        const run = effects.slice(i, end + 1) as DispatchEffect[];
        const failures = await pushAll(ctx, runtime, run);
        run.forEach((dispatch, k) => {
          const failure = failures[k];
          if (failure === null || failure === undefined) return;
          follow(refusedAttempt(ctx, dispatch, failure));
        });
        i = end;
        break;
      }
      case 'fetch-condition-inputs':
        follow(await fetchInputs(ctx, effect));
        break;
      case 'notice':
      case 'workflow-finished':
      case 'ignored':
        logEffect(ctx, runtime.workflowId, effect);
        break;
    }
  }
  return runtime;
}

/** Messages prepared (overflow blobs written) at once while carrying out a run of dispatch effects. */
const PREPARE_CONCURRENCY = 32;

/** A dispatch ready to send: its queue and its message (the overflow blob already written), and its `send {queue}` span. */
interface Prepared {
  queue: TaskQueue;
  message: OutgoingMessage;
  span: Span;
}

/**
 * Pushes the task messages of a run of dispatches: one `send(array)` per queue and delivery delay
 * (the Storage adapter sends one request per message, Service Bus packs them into batches; a
 * delayed retry goes in a send of its own delay). Per message: null when sent,
 * else the error text of a permanent failure; a transient failure throws {@link RetryLater}, so the
 * flush is not saved and every message of the run is pushed again with the redelivery (duplicates
 * are fine, a save never records a dispatch that was not pushed). A send of several messages that
 * fails permanently may have sent some of them: each is then sent on its own, to learn which fail.
 */
async function pushAll(ctx: ApplyContext, runtime: WorkflowRuntime, dispatches: readonly DispatchEffect[]): Promise<Array<string | null>> {
  const workflowId = runtime.workflowId;
  // Each message is encoded once, here; one that does not encode makes the workflow unprocessable,
  // as a reducer that threw would.
  const texts = pure('encoding the task messages', () => dispatches.map((effect) => encodeTaskMessage(effect.message)));
  const results: Array<string | null> = new Array<string | null>(dispatches.length).fill(null);
  const prepared: Array<Prepared | null> = new Array<Prepared | null>(dispatches.length).fill(null);
  // Each dispatch's span is a child of the workflow's trace (docs/observability.md#tracing).
  const parent = traceContextOf(remoteSpanContext(runtime.traceparent));
  try {
    return await pushPrepared(ctx, workflowId, parent, dispatches, texts, results, prepared);
  } catch (error) {
    for (const p of prepared) if (p !== null) endSpan(p.span, errorMessage(error));
    prepared.fill(null);
    throw error;
  } finally {
    prepared.forEach((p, k) => p !== null && endSpan(p.span, results[k]));
  }
}

async function pushPrepared(
  ctx: ApplyContext,
  workflowId: string,
  parent: Context,
  dispatches: readonly DispatchEffect[],
  texts: readonly string[],
  results: Array<string | null>,
  prepared: Array<Prepared | null>,
): Promise<Array<string | null>> {
  await mapLimit(dispatches, PREPARE_CONCURRENCY, async (effect, k) => {
    try {
      prepared[k] = await prepare(ctx, workflowId, parent, effect, texts[k]!);
    } catch (error) {
      results[k] = pushFailed(ctx, workflowId, [effect], error);
    }
  });
  const groups = new Map<TaskQueue, Map<number, number[]>>();
  prepared.forEach((p, k) => {
    if (p === null) return;
    const byDelay = groups.get(p.queue) ?? new Map<number, number[]>();
    groups.set(p.queue, byDelay);
    const delay = p.message.delayInMs ?? 0;
    const list = byDelay.get(delay);
    if (list) list.push(k);
    else byDelay.set(delay, [k]);
  });
  const sends = [...groups].flatMap(([queue, byDelay]) => [...byDelay.values()].map((indexes) => [queue, indexes] as const));
  await Promise.all(
    sends.map(async ([queue, indexes]) => {
      const effects = indexes.map((k) => dispatches[k]!);
      try {
        await queue.send(
          indexes.map((k) => prepared[k]!.message),
          { abortSignal: ctx.signal },
        );
        ctx.counters.pushes += indexes.length;
        countDispatches(ctx, effects, 'ok');
        return;
      } catch (error) {
        const text = pushFailed(ctx, workflowId, effects, error);
        if (indexes.length === 1) {
          results[indexes[0]!] = text;
          return;
        }
      }
      // Some may have gone out: send each on its own to find the ones that fail.
      for (const k of indexes) {
        try {
          await queue.send(prepared[k]!.message, { abortSignal: ctx.signal });
          ctx.counters.pushes++;
          countDispatches(ctx, [dispatches[k]!], 'ok');
        } catch (error) {
          results[k] = pushFailed(ctx, workflowId, [dispatches[k]!], error);
        }
      }
    }),
  );
  return results;
}

/**
 * The queue and the message of one dispatch (`text`: its encoded message); a message too large goes through its overflow blob. A
 * delayed retry is sent with its delay and a time to live longer by as much (both count from the
 * send), so it lives as long after it is due as any message after its send: the lost-task sweep
 * counts from its due time.
 */
async function prepare(ctx: ApplyContext, workflowId: string, parent: Context, effect: DispatchEffect, text: string): Promise<Prepared> {
  const queue = await ctx.queues(effect.queue);
  const span = startSendSpan(parent, effect.queue, queue.name, {
    'messaging.message.id': effect.messageId,
    'jobq.workflow.id': workflowId,
    'jobq.task': effect.taskName,
    'jobq.attempt': effect.attemptNo,
  });
  try {
    const message = await prepareMessage(ctx, workflowId, queue, effect, text, envelopeTraceOf(span));
    return { queue, message, span };
  } catch (error) {
    endSpan(span, errorMessage(error));
    throw error;
  }
}

/**
 * The message of one dispatch, with the `traceparent` key when `trace` is given; its size counts
 * the key. A message that does not fit with the key is sent without it: tracing never costs a
 * dispatch.
 */
async function prepareMessage(
  ctx: ApplyContext,
  workflowId: string,
  queue: TaskQueue,
  effect: DispatchEffect,
  text: string,
  trace: EnvelopeTrace | undefined,
): Promise<OutgoingMessage> {
  const traced = (plain: string) => (trace === undefined ? plain : withEnvelopeTrace(plain, trace));
  let body = traced(text);
  if (messageByteLength(body) > queue.maxMessageBytes) {
    if (trace !== undefined && messageByteLength(text) <= queue.maxMessageBytes) {
      body = text;
    } else {
      const moved = await overflow(ctx, workflowId, effect, text);
      const movedTraced = traced(moved);
      body = messageByteLength(movedTraced) <= queue.maxMessageBytes ? movedTraced : moved;
    }
  }
  const delay = effect.delayInMs ?? 0;
  const ttl = ctx.taskMessageTtlInMs;
  if (delay <= 0) return { body, messageId: effect.messageId, ...(ttl === undefined ? {} : { timeToLiveInMs: ttl }) };
  const lifetime = ttl === Number.POSITIVE_INFINITY ? ttl : (ttl ?? DEFAULT_TASK_MESSAGE_TTL_MS) + delay;
  return { body, messageId: effect.messageId, delayInMs: delay, timeToLiveInMs: lifetime };
}

/** Records sent (or failed) task messages by queue in the metrics. */
function countDispatches(ctx: ApplyContext, effects: readonly DispatchEffect[], result: 'ok' | 'error'): void {
  for (const effect of effects) {
    ctx.instruments?.inc('jobq_coordinator_dispatches_total', { queue: effect.queue, result });
    ctx.dispatched?.(effect.queue);
  }
}

/** Counts and logs a failed push of `effects`; throws {@link RetryLater} when it is transient, else returns the error text. */
function pushFailed(ctx: ApplyContext, workflowId: string, effects: readonly DispatchEffect[], error: unknown): string {
  ctx.counters.pushErrors++;
  countDispatches(ctx, effects, 'error');
  const text = errorMessage(error);
  const transient = (isJobqError(error) && error.retryable) || isJobqError(error, 'aborted');
  const what = effects.length === 1 ? effects[0]!.messageId : `${effects.length} messages (${effects[0]!.messageId}, …)`;
  ctx.log(`workflow ${workflowId}: push of ${what} to "${effects[0]!.queue}" failed${transient ? ' (transient)' : ''}: ${text}`);
  if (transient) throw new RetryLater(`push of ${what} failed: ${text}`);
  return text;
}

/**
 * Moves the compact upstream refs to the overflow blob and encodes the message with
 * `__upstream_outputs_blob` instead (`text`: the message encoded inline, too large).
 */
async function overflow(ctx: ApplyContext, workflowId: string, effect: DispatchEffect, text: string): Promise<string> {
  const { upstream, ...rest } = effect.message;
  if (upstream === undefined) {
    throw new JobqError('message-too-large', `the task message is ${messageByteLength(text)} bytes without upstream refs to move out`);
  }
  const location = await ctx.outputs.putUpstreamOverflow(workflowId, rest.taskName, rest.attemptNo, upstream, { abortSignal: ctx.signal });
  ctx.counters.overflowBlobs++;
  return encodeTaskMessage({ ...rest, upstreamBlob: location });
}

/** Reads each parent output a condition waits for; read errors are reported per parent. */
async function fetchInputs(ctx: ApplyContext, effect: FetchConditionInputsEffect): Promise<WorkflowEvent> {
  const inputs: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  await Promise.all(
    Object.entries(effect.refs).map(async ([parent, ref]) => {
      try {
        inputs[parent] = await ctx.outputs.getOutput(ref, { abortSignal: ctx.signal });
      } catch (error) {
        if (isJobqError(error) && error.retryable) throw new RetryLater(`reading the output of "${parent}" failed: ${error.message}`);
        errors[parent] = errorMessage(error);
      }
    }),
  );
  return { type: 'condition-inputs', now: ctx.now(), taskName: effect.taskName, inputs, errors };
}
