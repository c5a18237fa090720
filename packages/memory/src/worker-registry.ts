import {
  capRunning,
  realClock,
  type Clock,
  type OperationOptions,
  type WorkerHeartbeat,
  type WorkerRecord,
  type WorkerRegistry,
} from '@jobq/ports';

/** Options of {@link MemoryWorkerRegistry}. */
export interface MemoryWorkerRegistryOptions {
  /** The service's clock: it stamps the rows and ages them (default the real clock). */
  clock?: Clock;
}

/** In-memory {@link WorkerRegistry}: rows stamped with its own clock, as the Table service stamps them. */
export class MemoryWorkerRegistry implements WorkerRegistry {
  private readonly clock: Clock;
  private readonly rows = new Map<string, { heartbeat: WorkerHeartbeat; at: number }>();
  /** Requests served (beat, remove, list, prune), for tests that count them. */
  readonly calls = { beat: 0, remove: 0, list: 0, prune: 0 };

  constructor(options: MemoryWorkerRegistryOptions = {}) {
    this.clock = options.clock ?? realClock;
  }

  beat(heartbeat: WorkerHeartbeat, options?: OperationOptions): Promise<void> {
    this.calls.beat++;
    options?.abortSignal?.throwIfAborted();
    const copy: WorkerHeartbeat = structuredClone({ ...heartbeat, ...capRunning(heartbeat.running) });
    if (heartbeat.runningMore > 0) copy.runningMore += heartbeat.runningMore;
    this.rows.set(heartbeat.workerId, { heartbeat: copy, at: this.clock.now() });
    return Promise.resolve();
  }

  remove(workerId: string): Promise<void> {
    this.calls.remove++;
    this.rows.delete(workerId);
    return Promise.resolve();
  }

  list(): Promise<WorkerRecord[]> {
    this.calls.list++;
    const now = this.clock.now();
    const records = [...this.rows.values()].map(({ heartbeat, at }) => ({
      ...structuredClone(heartbeat),
      seenAt: new Date(at).toISOString(),
      ageInMs: Math.max(0, now - at),
    }));
    return Promise.resolve(records.sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0)));
  }

  prune(olderThanInMs: number): Promise<number> {
    this.calls.prune++;
    const now = this.clock.now();
    let deleted = 0;
    for (const [id, row] of this.rows) {
      if (now - row.at >= olderThanInMs) {
        this.rows.delete(id);
        deleted++;
      }
    }
    return Promise.resolve(deleted);
  }

  /** Number of rows (for tests). */
  get size(): number {
    return this.rows.size;
  }
}
