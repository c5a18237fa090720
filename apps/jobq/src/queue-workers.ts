/** Options of {@link QueueWorkerPool}. */
export interface QueueWorkerPoolOptions {
  /**
   * The queue a spec names (specs naming the same queue share one key), or throws for a spec that
   * names no usable queue.
   */
  key(spec: string): string;
  /** Starts the workers of one queue; resolves once they run. */
  start(spec: string): Promise<void>;
  /** A start that failed in the background ({@link QueueWorkerPool.ensure}). */
  onError(error: Error, spec: string): void;
}

/**
 * The local workers of `jobq dev`, one set per queue: `add` starts them for a `--queue` name,
 * `ensure` for a queue a workflow task was just routed to (`--auto-workers`). A queue gets its
 * workers once, whichever spec names it (`cpu` and `devstoreaccount1/cpu` on the dev stack).
 */
export class QueueWorkerPool {
  private readonly started = new Map<string, { spec: string; ready: Promise<void> }>();

  constructor(private readonly options: QueueWorkerPoolOptions) {}

  /** Starts workers on the queue of `spec` unless it has them; true when this call started them. */
  async add(spec: string): Promise<boolean> {
    const key = this.options.key(spec);
    const known = this.started.get(key);
    if (known !== undefined) {
      await known.ready;
      return false;
    }
    const ready = this.options.start(spec);
    this.started.set(key, { spec, ready });
    await ready;
    return true;
  }

  /**
   * {@link add} in the background, returning at once: for the coordinator's dispatch path, which
   * must not wait for a worker. A spec naming no usable queue is left to the dispatch to report.
   */
  ensure(spec: string): void {
    let key: string;
    try {
      key = this.options.key(spec);
    } catch {
      return;
    }
    if (this.started.has(key)) return;
    this.add(spec).catch((error: unknown) => this.options.onError(error instanceof Error ? error : new Error(String(error)), spec));
  }

  /** The specs whose queues have workers (or are starting them), in the order they were added. */
  get queues(): string[] {
    return [...this.started.values()].map((entry) => entry.spec);
  }
}
