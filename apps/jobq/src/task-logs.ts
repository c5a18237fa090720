import { isTerminalTaskStatus, taskState, type TaskStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { errorMessage, type OutputStore, type TaskLogRead } from '@jobq/ports';
import { TASK_LOG_HEAD_BYTES } from '@jobq/worker';

/**
 * Reading task logs (docs/observability.md#task-logs) for `jobq workflow logs`, `status` and
 * `explain`.
 */

/** The last `count` lines of a log text (a final newline does not make an empty line). */
export function lastLines(text: string, count: number): string[] {
  if (count <= 0 || text === '') return [];
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return lines.slice(-count);
}

/** The last lines of each failed task's current attempt log, for up to `maxTasks` failed tasks (definition order). */
export async function failedTaskTails(
  outputs: OutputStore,
  runtime: WorkflowRuntime,
  options: { maxTasks: number; lines: number; only?: string },
): Promise<Array<{ taskName: string; attemptNo: number; lines: string[] | null; error?: string }>> {
  const failed = runtime.definition.tasks
    .map((def) => ({ name: def.name, task: taskState(runtime, def.name) }))
    .filter(
      ({ name, task }) =>
        task !== undefined && task.status === 'failed' && task.attemptNo > 0 && (options.only === undefined || options.only === name),
    )
    .slice(0, options.maxTasks);
  return Promise.all(
    failed.map(async ({ name, task }) => {
      const attemptNo = task!.attemptNo;
      try {
        const read = await outputs.getTaskLog(runtime.workflowId, name, attemptNo);
        if (read === null || read.notModified) return { taskName: name, attemptNo, lines: null };
        return { taskName: name, attemptNo, lines: lastLines(Buffer.from(read.bytes).toString('utf8'), options.lines) };
      } catch (error) {
        return { taskName: name, attemptNo, lines: null, error: errorMessage(error) };
      }
    }),
  );
}

/**
 * The text block of `status` and `explain --task`: for each failed task (up to `maxTasks`), the
 * last `lines` lines of its current attempt's log. Empty when no failed task left a log.
 */
export async function failedTailLines(
  outputs: OutputStore,
  runtime: WorkflowRuntime,
  options: { maxTasks: number; lines: number; only?: string },
): Promise<string[]> {
  const tails = await failedTaskTails(outputs, runtime, options);
  const out: string[] = [];
  for (const tail of tails) {
    if (tail.lines === null && tail.error === undefined) continue;
    out.push(
      '',
      `Log of failed task ${tail.taskName} (attempt ${tail.attemptNo}, last ${options.lines} lines; all: jobq workflow logs ${runtime.workflowId} ${tail.taskName})`,
    );
    if (tail.error !== undefined) out.push(`  (the log could not be read: ${tail.error})`);
    else if (tail.lines?.length === 0) out.push('  (empty)');
    else out.push(...(tail.lines ?? []).map((line) => `  ${line}`));
  }
  return out;
}

/** Where the tail of a cut log starts: after the `[jobq: N bytes omitted]` line that follows the 64 KiB head. */
function tailStart(text: Buffer): number {
  const marker = text.indexOf('[jobq: ', TASK_LOG_HEAD_BYTES);
  if (marker < 0) return text.byteLength;
  const end = text.indexOf(0x0a, marker);
  return end < 0 ? text.byteLength : end + 1;
}

/**
 * The part of a log not printed yet, given how many bytes of the task's output were printed:
 * the stored text from there while the log holds everything, else as much of the new bytes as its
 * tail still has (with an omitted line for the rest).
 */
export function unprintedPart(text: Buffer, totalBytes: number, printedBytes: number): Buffer {
  if (totalBytes <= printedBytes) return Buffer.alloc(0);
  if (totalBytes === text.byteLength) return text.subarray(printedBytes);
  // Part of the head is new: print it, then the omitted line and the tail as stored.
  if (printedBytes < TASK_LOG_HEAD_BYTES) return text.subarray(printedBytes);
  const fresh = totalBytes - printedBytes;
  const tail = text.subarray(tailStart(text));
  if (fresh <= tail.byteLength) return tail.subarray(tail.byteLength - fresh);
  return Buffer.concat([Buffer.from(`[jobq: ${fresh - tail.byteLength} bytes omitted]\n`), tail]);
}

/** What {@link followTaskLog} needs. */
export interface FollowOptions {
  /** The task's status and current attempt (0 while it has not been dispatched). */
  task: () => Promise<{ status: TaskStatus; attemptNo: number }>;
  read: (attemptNo: number, ifNoneMatch: string | undefined) => Promise<TaskLogRead | null>;
  write: (bytes: Buffer) => void;
  /** A line about the follow itself (a new attempt), on stderr. */
  note: (line: string) => void;
  sleep: (ms: number) => Promise<void>;
  /** Poll interval (2 s). */
  intervalInMs: number;
  /** The attempt to start with (default the current one, or the first once it starts). */
  attemptNo?: number;
}

/**
 * Prints a task's log as it grows (`jobq workflow logs --follow`): polls every `intervalInMs`
 * with If-None-Match, moves on to the next attempt when the task is retried, and returns the task's
 * final status once it is terminal and its last log was read.
 */
export async function followTaskLog(options: FollowOptions): Promise<TaskStatus> {
  let attempt = options.attemptNo ?? 0;
  let etag: string | undefined;
  let printed = 0;
  const readNew = async (): Promise<void> => {
    const read = await options.read(attempt, etag);
    if (read === null || read.notModified) return;
    etag = read.etag;
    const text = Buffer.from(read.bytes);
    const total = read.metadata?.bytes ?? text.byteLength;
    const part = unprintedPart(text, total, printed);
    if (part.byteLength > 0) options.write(part);
    printed = Math.max(printed, total);
  };
  for (;;) {
    const task = await options.task();
    if (attempt === 0 && task.attemptNo > 0) attempt = task.attemptNo;
    if (attempt > 0) {
      await readNew();
      if (task.attemptNo > attempt) {
        // Retried: the attempt we followed is over; go on with the next one.
        attempt += 1;
        etag = undefined;
        printed = 0;
        options.note(`[jobq: attempt ${attempt}]`);
        continue;
      }
      if (isTerminalTaskStatus(task.status)) return task.status;
    } else if (isTerminalTaskStatus(task.status)) {
      return task.status;
    }
    await options.sleep(options.intervalInMs);
  }
}
