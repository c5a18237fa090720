import type { WorkflowRuntime } from '@jobq/dag-core';
import { describeError, errorMessage, isJobqError, mapLimit, type Clock, type WorkflowStore } from '@jobq/ports';

/** Settings of a {@link TaskRowWriter}. */
export interface TaskRowWriterSettings {
  store: WorkflowStore;
  /** The coordinator's clock: the delay is measured on it. */
  clock: Clock;
  /** A deferred row is written at most this long after the save that changed it (unless a write fails). */
  delayInMs: number;
  /** Rows waiting that start a write at once. */
  maxPending: number;
  /** Fired when the coordinator must stop writing (the lease was lost): nothing more is written. */
  signal: AbortSignal;
  log: (line: string) => void;
  counters: TaskRowCounters;
}

/** The counters a {@link TaskRowWriter} keeps. */
export interface TaskRowCounters {
  /** Writes of deferred task rows (one per workflow per flush). */
  rowFlushes: number;
  /** Saves and row writes that left rows unwritten. */
  rowsErrors: number;
}

interface Pending {
  /** The newest saved runtime of the workflow: every row is written from it. */
  runtime: WorkflowRuntime;
  names: Set<string>;
}

/** Workflows whose deferred rows one flush writes at once. */
const FLUSH_CONCURRENCY = 8;

/**
 * The task rows of the coordinator's saves, written off the critical path (docs/failure-model.md,
 * "Task rows"): a save writes the runtime and the index row, and hands the names of the tasks it
 * changed here. They are gathered by workflow and task name — the row is written from the newest
 * runtime handed in, so the last state wins and a task changed by ten saves is written once — and
 * written together at most `delayInMs` after the first of them waits, or at once when
 * `maxPending` rows wait, in the background. One flush runs at a time, so a write never overtakes
 * an older write of the same row. A save that must carry a workflow's rows itself (a finished
 * workflow, whose task rows are written before its index row) {@link take}s them. Rows a write
 * could not write wait for the next flush; rows lost with the process are written again by the
 * next coordinator, which writes every row of each workflow it loads.
 */
export class TaskRowWriter {
  private readonly pending = new Map<string, Pending>();
  private size = 0;
  /** Clock time at which the oldest waiting row is due. */
  private dueAt: number | null = null;
  private timer: AbortController | null = null;
  /** The flush in flight, and the workflows it writes. */
  private flushing: Promise<void> | null = null;
  private readonly writing = new Set<string>();
  /** A flush was asked for while one was in flight. */
  private again = false;
  /** Set by {@link flushAll}: no more timers. */
  private closed = false;
  /** Index rows waiting: the newest runtime of each workflow whose index row is behind. */
  private readonly indexWaiting = new Map<string, WorkflowRuntime>();
  /** The index-row write in flight, per workflow. */
  private readonly indexWriting = new Map<string, Promise<void>>();

  constructor(private readonly settings: TaskRowWriterSettings) {}

  /** Rows waiting to be written (not counting those of the flush in flight). */
  get pendingRows(): number {
    return this.size;
  }

  /** Hands in the rows of `names` changed by a save of `runtime` (the newest saved runtime of its workflow). */
  add(runtime: WorkflowRuntime, names: Iterable<string>): void {
    if (this.settings.signal.aborted) return;
    const id = runtime.workflowId;
    let entry = this.pending.get(id);
    if (entry === undefined) {
      entry = { runtime, names: new Set() };
      this.pending.set(id, entry);
    }
    entry.runtime = runtime;
    const before = entry.names.size;
    for (const name of names) entry.names.add(name);
    this.size += entry.names.size - before;
    if (entry.names.size === 0) {
      this.pending.delete(id);
      return;
    }
    if (this.size >= this.settings.maxPending) this.kick();
    else this.arm();
  }

  /**
   * Hands in the index row of a save of `runtime` (the newest saved runtime of its workflow): it is
   * written at once, or right after the write of an older one in flight (only the newest waits).
   * After a write that fails, the newest state waiting is written `delayInMs` later.
   */
  addIndex(runtime: WorkflowRuntime): void {
    if (this.settings.signal.aborted) return;
    const id = runtime.workflowId;
    this.indexWaiting.set(id, runtime);
    if (!this.indexWriting.has(id)) this.writeIndex(id);
  }

  private writeIndex(id: string): void {
    const runtime = this.indexWaiting.get(id);
    if (runtime === undefined || this.settings.signal.aborted) return;
    this.indexWaiting.delete(id);
    let failed = false;
    const write = this.settings.store
      .writeIndexRow(runtime, { abortSignal: this.settings.signal })
      .catch((error: unknown) => {
        if (this.settings.signal.aborted) return;
        failed = true;
        this.settings.counters.rowsErrors++;
        this.settings.log(
          `workflow ${id}: its index row was not written (written again later): ${isJobqError(error) ? `${error.code}: ${error.message}` : String(error)}`,
        );
        if (!this.indexWaiting.has(id)) this.indexWaiting.set(id, runtime);
      })
      .finally(() => {
        this.indexWriting.delete(id);
        if (!failed) this.writeIndex(id);
        else if (!this.closed)
          void this.settings.clock
            .sleep(this.settings.delayInMs, this.settings.signal)
            .then(() => this.indexWriting.has(id) || this.writeIndex(id));
      });
    this.indexWriting.set(id, write);
  }

  /** Drops the index row waiting for `workflowId` and waits for a write of it in flight. */
  private async settleIndex(workflowId: string): Promise<void> {
    this.indexWaiting.delete(workflowId);
    for (let write = this.indexWriting.get(workflowId); write !== undefined; write = this.indexWriting.get(workflowId)) {
      await write;
      this.indexWaiting.delete(workflowId);
    }
  }

  /**
   * Takes the rows waiting for `workflowId`, and resolves once no write of its rows is in flight
   * (rows such a write could not write are taken too): the caller writes them (with a save whose
   * rows come before its index row). Give them back with {@link add} when that save fails. Its
   * waiting index row is dropped (after a write of it in flight): the caller's save writes a newer one.
   */
  async take(workflowId: string): Promise<string[]> {
    await this.settleIndex(workflowId);
    const names = new Set<string>();
    const grab = (): void => {
      const entry = this.pending.get(workflowId);
      if (entry === undefined) return;
      this.pending.delete(workflowId);
      this.size -= entry.names.size;
      for (const name of entry.names) names.add(name);
    };
    grab();
    while (this.flushing !== null && this.writing.has(workflowId)) {
      await this.flushing;
      grab();
    }
    return [...names];
  }

  /** Drops the rows waiting for `workflowId` (it is being purged), after a write in flight that holds them. */
  async forget(workflowId: string): Promise<void> {
    await this.take(workflowId);
  }

  /** Writes every waiting row (and index row) now and waits for it (shutdown). Rows that fail are logged and left. */
  async flushAll(): Promise<void> {
    this.closed = true;
    this.timer?.abort();
    this.timer = null;
    for (const id of [...this.indexWaiting.keys()]) if (!this.indexWriting.has(id)) this.writeIndex(id);
    while (this.indexWriting.size > 0) await Promise.all(this.indexWriting.values());
    await this.settle();
    if (this.size === 0 || this.settings.signal.aborted) return;
    this.start();
    await this.settle();
    if (this.size > 0) this.settings.log(`${this.size} task row(s) could not be written before the stop; the next coordinator writes them`);
  }

  /** Waits until no flush is in flight. */
  private async settle(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
  }

  /** Starts a flush now, or right after the one in flight. */
  private kick(): void {
    if (this.flushing !== null) {
      this.again = true;
      return;
    }
    this.start();
  }

  /** Makes sure a timer fires when the oldest waiting row is due. */
  private arm(): void {
    if (this.size === 0) return;
    this.dueAt ??= this.settings.clock.now() + this.settings.delayInMs;
    if (this.timer !== null || this.flushing !== null || this.closed) return;
    const timer = new AbortController();
    this.timer = timer;
    const onHalt = () => timer.abort();
    this.settings.signal.addEventListener('abort', onHalt, { once: true });
    void this.settings.clock.sleep(Math.max(0, this.dueAt - this.settings.clock.now()), timer.signal).then(() => {
      this.settings.signal.removeEventListener('abort', onHalt);
      if (this.timer === timer) this.timer = null;
      if (!timer.signal.aborted) this.kick();
    });
  }

  private start(): void {
    this.timer?.abort();
    this.timer = null;
    this.dueAt = null;
    this.again = false;
    const batch = [...this.pending.values()];
    this.pending.clear();
    this.size = 0;
    for (const entry of batch) this.writing.add(entry.runtime.workflowId);
    const done = (failed: boolean): void => {
      this.writing.clear();
      this.flushing = null;
      if (this.settings.signal.aborted || this.closed) return;
      // After a failure the rows wait for the timer: no tight retry loop during an outage.
      if (!failed && (this.again || this.size >= this.settings.maxPending) && this.size > 0) this.start();
      else this.arm();
    };
    this.flushing = this.write(batch).then(done, (error: unknown) => {
      this.settings.log(`writing task rows failed: ${errorMessage(error)}`);
      done(true);
    });
  }

  /** Writes each workflow's rows; rows not written are handed back. True when some failed. */
  private async write(batch: Pending[]): Promise<boolean> {
    let failed = false;
    // Once stopping, the workflows not yet started are skipped (not an error).
    await mapLimit(batch, FLUSH_CONCURRENCY, async ({ runtime, names }) => {
      if (this.settings.signal.aborted) return;
      let left: string[];
      let reason: string | null = null;
      try {
        const result = await this.settings.store.writeTaskRows(runtime, [...names], { abortSignal: this.settings.signal });
        left = result.failed;
        if (result.error !== null) reason = result.error.message;
      } catch (error) {
        left = [...names];
        reason = describeError(error);
      }
      this.settings.counters.rowFlushes++;
      if (left.length === 0 || this.settings.signal.aborted) return;
      failed = true;
      this.settings.counters.rowsErrors++;
      this.settings.log(
        `workflow ${runtime.workflowId}: ${left.length} task row(s) not written (written again later): ${reason ?? 'unknown error'}`,
      );
      this.giveBack(runtime, left);
    });
    return failed;
  }

  /** Rows a write could not write wait again; a newer runtime handed in meanwhile is the one they are written from. */
  private giveBack(runtime: WorkflowRuntime, names: readonly string[]): void {
    const id = runtime.workflowId;
    let entry = this.pending.get(id);
    if (entry === undefined) {
      entry = { runtime, names: new Set() };
      this.pending.set(id, entry);
    }
    const before = entry.names.size;
    for (const name of names) entry.names.add(name);
    this.size += entry.names.size - before;
  }
}
