import type { OperationOptions } from './task-queue';

/** One queue a worker pulls, as its heartbeat reports it. */
export interface WorkerQueueHeartbeat {
  /** The queue spec the worker was given (`cpu`, `ACCOUNT/cpu`, `sb://NAMESPACE/cpu`). */
  queue: string;
  /** Concurrent slots on this queue. */
  slots: number;
  /** Slots holding a task now. */
  busy: number;
  /** When a receive call on this queue last answered (ISO-8601, the worker's clock); null before the first. */
  lastReceiveAt: string | null;
}

/** A task a worker runs now: its message id (`{workflow_id}/{task}/{attempt}` for workflow tasks) and since when (ISO-8601). */
export interface WorkerRunningTask {
  id: string;
  since: string;
}

/** Most running tasks a heartbeat lists (the rest only count in {@link WorkerHeartbeat.runningMore}). */
export const MAX_HEARTBEAT_RUNNING = 64;

/** What a worker writes at start and every heartbeat interval (docs/design.md#worker-heartbeats). */
export interface WorkerHeartbeat {
  /** `{host}-{pid}-{rand}`: the row key. */
  workerId: string;
  host: string;
  pid: number;
  /** The jobq version of the worker. */
  version: string;
  /** The heartbeat interval, in ms (> 0: a worker with heartbeats off writes no row). */
  intervalInMs: number;
  /** True once the worker takes no new work (it still finishes its running tasks). */
  stopping: boolean;
  /** When the worker started (ISO-8601). */
  startedAt: string;
  queues: WorkerQueueHeartbeat[];
  /** Running tasks, at most {@link MAX_HEARTBEAT_RUNNING}. */
  running: WorkerRunningTask[];
  /** Running tasks left out of {@link running} (0 when all fit). */
  runningMore: number;
}

/** A heartbeat as read back. */
export interface WorkerRecord extends WorkerHeartbeat {
  /** When the service stored the row (its own timestamp, ISO-8601). */
  seenAt: string;
  /** How long ago the service stored the row, on the service's clock (no skew with the reader's or the worker's clock). */
  ageInMs: number;
}

/** State of a worker from its last heartbeat: `lost` after 3 intervals without one, else `stopping` or `ok`. */
export type WorkerState = 'ok' | 'stopping' | 'lost';

/** Heartbeat intervals of silence after which a worker counts as lost. */
export const LOST_AFTER_INTERVALS = 3;

/** The state of a worker from its record (see {@link WorkerState}). */
export function workerState(record: Pick<WorkerRecord, 'ageInMs' | 'intervalInMs' | 'stopping'>): WorkerState {
  if (record.ageInMs > LOST_AFTER_INTERVALS * record.intervalInMs) return 'lost';
  return record.stopping ? 'stopping' : 'ok';
}

/** Keeps at most {@link MAX_HEARTBEAT_RUNNING} running tasks; returns them and how many were left out. */
export function capRunning(running: readonly WorkerRunningTask[]): { running: WorkerRunningTask[]; runningMore: number } {
  return { running: running.slice(0, MAX_HEARTBEAT_RUNNING), runningMore: Math.max(0, running.length - MAX_HEARTBEAT_RUNNING) };
}

/**
 * The workers of a deployment, one row each (`{PREFIX}Workers` on Azure: docs/design.md#worker-heartbeats).
 * Every failure is a `JobqError` (transport codes as in the other ports). Callers treat failures as
 * harmless: a heartbeat that cannot be written never stops a worker.
 */
export interface WorkerRegistry {
  /** Writes (inserts or replaces) the row of `heartbeat.workerId`: one request. A list longer than the cap is cut to it. */
  beat(heartbeat: WorkerHeartbeat, options?: OperationOptions): Promise<void>;
  /** Deletes a worker's row (a clean stop); a missing row is no error. */
  remove(workerId: string, options?: OperationOptions): Promise<void>;
  /** Every row, oldest worker id first, with its age on the service's clock. */
  list(options?: OperationOptions): Promise<WorkerRecord[]>;
  /** Deletes the rows not written for at least `olderThanInMs` (service clock); returns how many. */
  prune(olderThanInMs: number, options?: OperationOptions): Promise<number>;
}
