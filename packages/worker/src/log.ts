/** A sink for one line of worker log output (no trailing newline). */
export type LogLine = (line: string) => void;

/** The default worker log: one line per write on stderr. */
export const stderrLog: LogLine = (line) => {
  process.stderr.write(`${line}\n`);
};

/** A log that prefixes every line with `[prefix] ` (the worker uses the task id, `envelope.id`). */
export function prefixedLog(log: LogLine, prefix: string): LogLine {
  return (line) => log(`[${prefix}] ${line}`);
}

/** The task a line is about: its id (`envelope.id`) and, for a workflow task, its name and attempt. */
export interface TaskRef {
  id: string;
  workflowTask: { workflowId: string; taskName: string; attemptNo: number } | null;
}

/** A line about one task: one the task printed (`stream` says where) or the worker's own (`stream` null). */
export interface TaskLine {
  task: TaskRef;
  stream: 'stdout' | 'stderr' | null;
  text: string;
}

/** A sink for {@link TaskLine}s (see `WorkerOptions.taskLines`). */
export type TaskLineSink = (line: TaskLine) => void;
