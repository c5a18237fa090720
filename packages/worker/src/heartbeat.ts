import { errorMessage } from '@jobq/ports';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock, WorkerHeartbeat, WorkerQueueHeartbeat, WorkerRegistry, WorkerRunningTask } from '@jobq/ports';
import { type LogLine } from './log';

/** Default heartbeat interval (`--heartbeat-interval`): 30 s. */
export const DEFAULT_HEARTBEAT_INTERVAL_IN_MS = 30_000;

/** Options of a worker's heartbeat ({@link WorkerHeartbeatOptions} in `WorkerOptions.heartbeat`). */
export interface WorkerHeartbeatOptions {
  registry: WorkerRegistry;
  /** Interval between beats (default 30 s; 0 or less turns heartbeats off). */
  intervalInMs?: number;
  /** The row key (default `{host}-{pid}-{rand}`). */
  workerId?: string;
  /** The queue spec the worker was given, as its row names it (default the queue's name). */
  queueSpec?: string;
  /** The jobq version written in the row (default `unknown`). */
  version?: string;
}

/** What the worker reports at each beat. */
export interface HeartbeatSnapshot {
  stopping: boolean;
  queues: WorkerQueueHeartbeat[];
  running: WorkerRunningTask[];
}

/** A new worker id: `{host}-{pid}-{6 hex}` (a Table RowKey: no `/`, `\`, `#`, `?`). */
export function newWorkerId(): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]+/g, '_') || 'host';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/**
 * Writes a worker's row at start, then every interval on the worker's clock, and once more at once
 * when {@link poke}d (a stop with tasks still running); {@link stop} ends the loop and deletes the
 * row. A failed beat is logged (once until one succeeds again) and never stops the worker
 * (docs/design.md#worker-heartbeats).
 */
export class Heartbeat {
  readonly workerId: string;
  private readonly host = hostname();
  private readonly startedAt: string;
  private readonly stopped = new AbortController();
  private wake = new AbortController();
  private loop: Promise<void> | null = null;
  private failing = false;
  private poked = false;

  constructor(
    private readonly registry: WorkerRegistry,
    private readonly intervalInMs: number,
    private readonly clock: Clock,
    private readonly snapshot: () => HeartbeatSnapshot,
    private readonly log: LogLine,
    private readonly version: string,
    workerId?: string,
  ) {
    this.workerId = workerId ?? newWorkerId();
    this.startedAt = new Date(clock.now()).toISOString();
  }

  /** Starts beating (the first beat goes out at once). */
  start(): void {
    this.loop ??= this.run();
  }

  /** Beats now instead of at the next interval. */
  poke(): void {
    this.poked = true;
    this.wake.abort();
  }

  /** Ends the loop (waiting for a beat in flight), then deletes the row when `remove`. */
  async stop(remove: boolean): Promise<void> {
    this.stopped.abort();
    this.wake.abort();
    await this.loop;
    if (!remove || this.loop === null) return;
    try {
      await this.registry.remove(this.workerId);
    } catch (error) {
      this.log(`could not delete the heartbeat row: ${errorMessage(error)}`);
    }
  }

  private heartbeat(): WorkerHeartbeat {
    const snap = this.snapshot();
    return {
      workerId: this.workerId,
      host: this.host,
      pid: process.pid,
      version: this.version,
      intervalInMs: this.intervalInMs,
      stopping: snap.stopping,
      startedAt: this.startedAt,
      queues: snap.queues,
      running: snap.running,
      runningMore: 0,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped.signal.aborted) {
      this.poked = false;
      try {
        await this.registry.beat(this.heartbeat());
        if (this.failing) this.log('heartbeat written again');
        this.failing = false;
      } catch (error) {
        if (!this.failing) this.log(`heartbeat failed (the worker goes on): ${errorMessage(error)}`);
        this.failing = true;
      }
      if (this.stopped.signal.aborted) break;
      if (this.poked) continue;
      const wake = new AbortController();
      this.wake = wake;
      const onStop = (): void => wake.abort();
      this.stopped.signal.addEventListener('abort', onStop, { once: true });
      await this.clock.sleep(this.intervalInMs, wake.signal);
      this.stopped.signal.removeEventListener('abort', onStop);
    }
  }
}
