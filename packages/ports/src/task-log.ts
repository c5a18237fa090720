import type { OperationOptions } from './task-queue';

/**
 * Task logs (docs/observability.md#task-logs): one blob per attempt,
 * `workflow-logs/{workflow_id}/{task}/{attempt}.log` in the outputs target, holding what the task
 * printed on stdout and stderr (its first 64 KiB and its last bytes, joined by a
 * `[jobq: N bytes omitted]` line). Task names may contain `/`.
 */

/** The folder of task logs in the outputs target. */
export const TASK_LOG_FOLDER = 'workflow-logs/';

/** How the attempt of a log ended; `live` while it runs (a snapshot, rewritten later). */
export type TaskLogOutcome = 'live' | 'succeeded' | 'failed';

/** The metadata stored with a task log (blob metadata `outcome`, `exit_code`, `started`, `ended`, `bytes`, `worker`). */
export interface TaskLogMetadata {
  outcome: TaskLogOutcome;
  /** The exit code of the command; null when it did not exit with one (signal, not started, live). */
  exitCode: number | null;
  /** When the command started (ISO-8601). */
  started: string;
  /** When it ended (ISO-8601); null for a live snapshot. */
  ended: string | null;
  /** Bytes the task printed in all (the log keeps at most its head and tail). */
  bytes: number;
  /** The worker that ran the attempt. */
  worker: string;
}

/** One stored task log, as listed. */
export interface TaskLogEntry {
  taskName: string;
  attemptNo: number;
  /** Size of the stored log in bytes. */
  size: number;
  /** Null when the blob carries no (readable) jobq metadata. */
  metadata: TaskLogMetadata | null;
}

/** Options of {@link TaskLogStore.getTaskLog}. */
export interface GetTaskLogOptions extends OperationOptions {
  /** First byte to read (default 0). At or past the end: no bytes. */
  offset?: number;
  /** Bytes to read from `offset` (default: to the end). */
  count?: number;
  /** The etag of an earlier read: when the log has not changed, the answer is `{ notModified: true }` and no bytes travel. */
  ifNoneMatch?: string;
}

/** What {@link TaskLogStore.getTaskLog} read. */
export type TaskLogRead =
  | { notModified: true; etag: string }
  | {
      notModified: false;
      /** The bytes of the requested range. */
      bytes: Uint8Array;
      /** Size of the whole stored log. */
      size: number;
      etag: string;
      metadata: TaskLogMetadata | null;
    };

/** The task-log part of `OutputStore`. */
export interface TaskLogStore {
  /**
   * Writes (or rewrites) the log of one attempt in one Put Blob, with its metadata. The call makes
   * one try (the caller bounds it with `abortSignal`); failures are `JobqError`s.
   */
  putTaskLog(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    text: Uint8Array,
    metadata: TaskLogMetadata,
    options?: OperationOptions,
  ): Promise<void>;
  /** Reads (a range of) one attempt's log; null when there is none. */
  getTaskLog(workflowId: string, taskName: string, attemptNo: number, options?: GetTaskLogOptions): Promise<TaskLogRead | null>;
  /**
   * Lists the logs of a workflow (every task), or of one task: then only that task's own
   * `{attempt}.log` blobs (a delimiter listing: task `a` never lists the logs of task `a/b`).
   * Sorted by task name, then attempt.
   */
  listTaskLogs(workflowId: string, taskName?: string, options?: OperationOptions): Promise<TaskLogEntry[]>;
}

/** `workflow-logs/{workflow_id}/{task}/{attempt}.log`. */
export function taskLogBlobPath(workflowId: string, taskName: string, attemptNo: number): string {
  return `${TASK_LOG_FOLDER}${workflowId}/${taskName}/${attemptNo}.log`;
}

/** Splits `{task}/{attempt}.log` (the part after `workflow-logs/{workflow_id}/`); null for other names. */
export function parseTaskLogName(rest: string): { taskName: string; attemptNo: number } | null {
  const match = /^(.+)\/([1-9]\d{0,8})\.log$/.exec(rest);
  return match ? { taskName: match[1] ?? '', attemptNo: Number(match[2]) } : null;
}

/** The blob metadata of a task log (Azure metadata names and values: ASCII; other characters become `?`). */
export function taskLogMetadataToBlob(metadata: TaskLogMetadata): Record<string, string> {
  const ascii = (text: string): string => text.replace(/[^\x20-\x7e]/g, '?');
  return {
    outcome: metadata.outcome,
    exit_code: metadata.exitCode === null ? '' : String(metadata.exitCode),
    started: ascii(metadata.started),
    ended: metadata.ended === null ? '' : ascii(metadata.ended),
    bytes: String(metadata.bytes),
    worker: ascii(metadata.worker),
  };
}

/** Reads the blob metadata of a task log back; null when it is not jobq's. */
export function taskLogMetadataFromBlob(blob: Readonly<Record<string, string | undefined>> | undefined): TaskLogMetadata | null {
  if (!blob) return null;
  const outcome = blob.outcome;
  if (outcome !== 'live' && outcome !== 'succeeded' && outcome !== 'failed') return null;
  const exit = blob.exit_code ?? '';
  const bytes = Number(blob.bytes ?? '');
  return {
    outcome,
    exitCode: /^-?\d+$/.test(exit) ? Number(exit) : null,
    started: blob.started ?? '',
    ended: blob.ended ? blob.ended : null,
    bytes: Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : 0,
    worker: blob.worker ?? '',
  };
}
