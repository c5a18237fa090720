import { RateWindow, changedTasks, doneCount, type WorkflowRuntime } from '@jobq/dag-core';
import type { Clock, WorkflowStore } from '@jobq/ports';

/** A runtime as last read, with what changed since the read before it. */
export interface RuntimeState {
  runtime: WorkflowRuntime | null;
  /** The store's token (ETag or log position) of this read; null without a runtime. */
  token: string | null;
  /** Clock time of the read. */
  readAt: number;
}

/** What one poll found. */
export interface PollResult {
  state: RuntimeState;
  /** Tasks whose state changed since the previous read (every task on the first read or a replaced runtime). */
  changed: string[];
  /** True when the runtime is another one than before (first read, created, purged, resubmitted). */
  replaced: boolean;
}

/**
 * Reads one workflow's runtime for everybody who looks at it: the routes reuse a read younger than
 * the poll interval, and while at least one event stream watches it, one read per interval is made
 * (docs: packages/dashboard/README.md#live-updates), whatever the number of streams.
 *
 * The store is asked what changed since the token of the last read (`loadIfChanged`, else `load`
 * and a comparison of tokens); the tasks that changed are `changedTasks` of `@jobq/dag-core`.
 */
export class RuntimeWatch {
  private state: RuntimeState | null = null;
  private inflight: Promise<PollResult> | null = null;
  private readonly listeners = new Set<(result: PollResult | Error) => void>();
  private loop: AbortController | null = null;
  private failures = 0;
  readonly rate = new RateWindow();

  constructor(
    readonly workflowId: string,
    private readonly store: WorkflowStore,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly onIdle: () => void,
  ) {}

  /** The last read when it is younger than the interval, else a new read. */
  async current(): Promise<RuntimeState> {
    if (this.state && this.clock.now() - this.state.readAt < this.intervalMs) return this.state;
    return (await this.poll()).state;
  }

  /** Reads the runtime now (one read shared by concurrent callers). */
  poll(): Promise<PollResult> {
    this.inflight ??= this.read().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async read(): Promise<PollResult> {
    const before = this.state;
    // With a token, ask the store what changed since (no bytes travel when nothing did).
    const loaded =
      before?.token != null && this.store.loadIfChanged
        ? await this.store.loadIfChanged(this.workflowId, before.token)
        : await this.store.load(this.workflowId);
    const now = this.clock.now();
    if (loaded === 'unchanged') {
      const state: RuntimeState = { ...before!, readAt: now };
      this.state = state;
      if (state.runtime !== null) this.rate.add(now, doneCount(state.runtime));
      const result = { state, changed: [], replaced: false };
      this.emit(result);
      return result;
    }
    const previous = before;
    const runtime = loaded?.runtime ?? null;
    const token = loaded?.etag ?? null;
    const replaced =
      previous === null ||
      (previous.runtime === null) !== (runtime === null) ||
      (runtime !== null && previous.runtime !== null && previous.runtime.createdAt !== runtime.createdAt);
    let changed: string[];
    if (runtime === null) changed = [];
    else if (replaced || previous?.runtime == null) changed = runtime.definition.tasks.map((t) => t.name);
    else if (previous.token === token) changed = [];
    else changed = changedTasks(previous.runtime, runtime);
    // Keep the previous object when nothing changed, so identity tells "same runtime" to caches.
    const state: RuntimeState =
      previous !== null && !replaced && previous.token === token ? { ...previous, readAt: now } : { runtime, token, readAt: now };
    this.state = state;
    if (runtime !== null) this.rate.add(now, doneCount(runtime));
    const result = { state, changed, replaced };
    // Every read goes to the streams, also one a route made between polls: none misses a change.
    this.emit(result);
    return result;
  }

  private emit(result: PollResult | Error): void {
    for (const listener of [...this.listeners]) listener(result);
  }

  /** Number of event streams watching. */
  get watchers(): number {
    return this.listeners.size;
  }

  /** Adds an event stream: polling runs while there is at least one. Returns the function that removes it. */
  subscribe(listener: (result: PollResult | Error) => void): () => void {
    this.listeners.add(listener);
    if (!this.loop) this.start();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.loop?.abort();
        this.loop = null;
        this.onIdle();
      }
    };
  }

  /** The wait before the next poll: the interval, doubled after each failure up to a minute. */
  nextDelayMs(): number {
    return this.failures === 0 ? this.intervalMs : Math.min(60_000, this.intervalMs * 2 ** this.failures);
  }

  private start(): void {
    const controller = new AbortController();
    this.loop = controller;
    const run = async (): Promise<void> => {
      while (!controller.signal.aborted) {
        await this.clock.sleep(this.nextDelayMs(), controller.signal);
        if (controller.signal.aborted) return;
        // A finished workflow is polled too: a retry or re-run request brings it back.
        try {
          await this.poll();
          this.failures = 0;
        } catch (error) {
          this.failures++;
          if (!controller.signal.aborted) this.emit(error instanceof Error ? error : new Error(String(error)));
        }
      }
    };
    void run();
  }

  /** Stops polling (the server closes). */
  stop(): void {
    this.loop?.abort();
    this.loop = null;
    this.listeners.clear();
  }
}
