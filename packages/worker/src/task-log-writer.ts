import { hostname } from 'node:os';
import { errorMessage, JobqError, envValue, parseDurationInMs, type Clock, type OutputStore, type TaskLogMetadata } from '@jobq/ports';
import { type LongTimer, setLongTimeout } from './long-timer';
import { DEFAULT_TASK_LOG_TAIL_BYTES, TaskLogBuffer } from './task-log-buffer';

/**
 * Which attempts leave a log blob (docs/observability.md#task-logs): `always` (any attempt that
 * printed something, and every failed one), `failed` (failed attempts only), `off`.
 */
export type TaskLogMode = 'always' | 'failed' | 'off';

export const TASK_LOG_MODES: readonly TaskLogMode[] = ['always', 'failed', 'off'];

/** Default of `JOBQ_TASK_LOG_FLUSH_INTERVAL`: how often a running task's log is rewritten as a live snapshot. */
export const DEFAULT_TASK_LOG_FLUSH_INTERVAL_IN_MS = 30_000;
/** The time one log upload may take; it is tried once. */
export const TASK_LOG_UPLOAD_TIMEOUT_IN_MS = 10_000;

/** Task-log settings of a worker. */
export interface TaskLogSettings {
  mode: TaskLogMode;
  /** Last bytes of the output kept besides the first 64 KiB (`JOBQ_TASK_LOG_TAIL_BYTES`). */
  tailBytes: number;
  /** Live snapshots at most this often, only with new bytes; 0 = none (`JOBQ_TASK_LOG_FLUSH_INTERVAL`). */
  flushIntervalInMs: number;
  uploadTimeoutInMs: number;
}

/** Parses a task-log mode; `invalid-config` naming `source` otherwise. */
export function parseTaskLogMode(text: string, source = 'JOBQ_TASK_LOGS'): TaskLogMode {
  const mode = text.trim().toLowerCase();
  if ((TASK_LOG_MODES as readonly string[]).includes(mode)) return mode as TaskLogMode;
  throw new JobqError('invalid-config', `${source} must be always, failed or off, got "${text}"`);
}

/** Reads `JOBQ_TASK_LOGS`, `JOBQ_TASK_LOG_TAIL_BYTES`, `JOBQ_TASK_LOG_FLUSH_INTERVAL`; bad values are `invalid-config`. */
export function taskLogSettingsFromEnv(env: NodeJS.ProcessEnv): TaskLogSettings {
  const mode = envValue(env, 'JOBQ_TASK_LOGS');
  const tail = envValue(env, 'JOBQ_TASK_LOG_TAIL_BYTES');
  const flush = envValue(env, 'JOBQ_TASK_LOG_FLUSH_INTERVAL');
  if (tail !== null && !/^\d+$/.test(tail))
    throw new JobqError('invalid-config', `JOBQ_TASK_LOG_TAIL_BYTES must be a number of bytes (0 or more), got "${tail}"`);
  const tailBytes = tail === null ? DEFAULT_TASK_LOG_TAIL_BYTES : Number(tail);
  if (tailBytes > 256 * 1024 * 1024)
    throw new JobqError('invalid-config', `JOBQ_TASK_LOG_TAIL_BYTES must be at most 268435456 (256 MiB), got "${tail}"`);
  return {
    mode: mode === null ? 'always' : parseTaskLogMode(mode),
    tailBytes,
    flushIntervalInMs: flush === null ? DEFAULT_TASK_LOG_FLUSH_INTERVAL_IN_MS : parseDurationInMs(flush, 'JOBQ_TASK_LOG_FLUSH_INTERVAL'),
    uploadTimeoutInMs: TASK_LOG_UPLOAD_TIMEOUT_IN_MS,
  };
}

/** The worker's name in task-log metadata by default: `{host}-{pid}`. */
export function defaultWorkerName(): string {
  return `${hostname()}-${process.pid}`;
}

/** Counters of a worker's task-log uploads. */
export interface TaskLogCounters {
  /** Logs written (final and live). */
  uploads: number;
  /** Of them, live snapshots. */
  snapshots: number;
  /** Uploads that failed (each only warned about). */
  failures: number;
}

/** What an {@link AttemptLog} needs. */
export interface AttemptLogOptions {
  outputs: OutputStore;
  workflowId: string;
  taskName: string;
  attemptNo: number;
  settings: TaskLogSettings;
  clock: Clock;
  worker: string;
  /** When the command started (ISO-8601). */
  started: string;
  counters: TaskLogCounters;
  /** Called for each failed upload, besides `counters.failures` (the worker's metric). */
  onUploadFailure?: () => void;
  log: (line: string) => void;
}

/**
 * The log of one running attempt: keeps its output (head and tail), writes live snapshots while it
 * runs (`always` mode, every `flushIntervalInMs` with new bytes, on the worker's clock), and the
 * final log before the completion ({@link finish}). An upload is tried once, bounded by
 * `uploadTimeoutInMs`; a failure is logged and counted, never fails the task.
 */
export class AttemptLog {
  readonly buffer: TaskLogBuffer;
  private timer: LongTimer | undefined;
  private flushedBytes = 0;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: AttemptLogOptions) {
    this.buffer = new TaskLogBuffer(options.settings.tailBytes);
    if (options.settings.mode === 'always' && options.settings.flushIntervalInMs > 0) this.schedule();
  }

  /** One line the task printed (already masked). */
  line(line: string): void {
    if (this.options.settings.mode !== 'off') this.buffer.appendLine(line);
  }

  private schedule(): void {
    this.timer = setLongTimeout(
      () => {
        if (this.stopped) return;
        if (this.buffer.total > this.flushedBytes) {
          this.inFlight = this.upload(null, null).finally(() => {
            if (!this.stopped) this.schedule();
          });
        } else {
          this.schedule();
        }
      },
      this.options.settings.flushIntervalInMs,
      this.options.clock,
    );
  }

  /** Stops the live snapshots (the attempt is left, or over). */
  stop(): void {
    this.stopped = true;
    this.timer?.clear();
  }

  /** Writes the final log of the attempt when the mode asks for one; resolves once written or given up. */
  async finish(success: boolean, exitCode: number | null): Promise<void> {
    this.stop();
    await this.inFlight;
    const { mode } = this.options.settings;
    if (mode === 'off' || (mode === 'failed' && success)) return;
    if (success && this.buffer.total === 0) return;
    await this.upload(success ? 'succeeded' : 'failed', exitCode);
  }

  private async upload(outcome: 'succeeded' | 'failed' | null, exitCode: number | null): Promise<void> {
    const { outputs, workflowId, taskName, attemptNo, settings, clock, counters } = this.options;
    const total = this.buffer.total;
    const metadata: TaskLogMetadata = {
      outcome: outcome ?? 'live',
      exitCode,
      started: this.options.started,
      ended: outcome === null ? null : new Date(clock.now()).toISOString(),
      bytes: total,
      worker: this.options.worker,
    };
    const abort = new AbortController();
    const limit = setLongTimeout(() => abort.abort(new Error('timed out')), settings.uploadTimeoutInMs, clock);
    try {
      await outputs.putTaskLog(workflowId, taskName, attemptNo, this.buffer.text(), metadata, { abortSignal: abort.signal });
      this.flushedBytes = total;
      counters.uploads++;
      if (outcome === null) counters.snapshots++;
    } catch (error) {
      counters.failures++;
      this.options.onUploadFailure?.();
      const why = abort.signal.aborted ? `no answer within ${Math.round(settings.uploadTimeoutInMs / 1000)} s` : errorMessage(error);
      this.options.log(
        `warning: could not write the ${outcome === null ? 'live ' : ''}log of task "${taskName}" attempt ${attemptNo}: ${why}`,
      );
    } finally {
      limit.clear();
    }
  }
}
