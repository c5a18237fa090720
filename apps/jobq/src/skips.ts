import { skipReasonKind, taskState, type WorkflowRuntime } from '@jobq/dag-core';

/** A skipped task and why (the reason the reducer stored; see docs/conditions.md). */
export interface SkippedTask {
  name: string;
  reason: string;
  /** Skipped for a field missing from a parent's output, or an error: worth a warning. */
  warning: boolean;
}

/** A skipped task from its stored reason (null for a runtime that recorded none). */
export function skippedTask(name: string, error: string | null): SkippedTask {
  return { name, reason: error ?? 'no reason recorded', warning: skipReasonKind(error) !== 'condition-false' };
}

/** The skipped tasks of a runtime, in definition order. */
export function skippedTasks(runtime: WorkflowRuntime): SkippedTask[] {
  const skipped: SkippedTask[] = [];
  for (const def of runtime.definition.tasks) {
    const task = taskState(runtime, def.name);
    if (task?.status === 'skipped') skipped.push(skippedTask(def.name, task.error));
  }
  return skipped;
}

/** `{ name, skip_reason }` for the `--json` documents. */
export function skippedJson(skipped: readonly SkippedTask[]): Array<{ name: string; skip_reason: string }> {
  return skipped.map((s) => ({ name: s.name, skip_reason: s.reason }));
}

/**
 * `PREFIX NAME: REASON` for the first `limit` skipped tasks (0: all), then a line counting the
 * others. Reasons are one bounded line already.
 */
export function skipLines(skipped: readonly SkippedTask[], options: { prefix: string; limit: number; more?: string }): string[] {
  const shown = options.limit === 0 ? skipped : skipped.slice(0, options.limit);
  const lines = shown.map((s) => `${options.prefix}${s.name}: ${s.reason}`);
  const rest = skipped.length - shown.length;
  if (rest > 0) lines.push(`${options.prefix}… ${rest} more skipped${options.more === undefined ? '' : ` (${options.more})`}`);
  return lines;
}

/** One warning line per task skipped for a missing field or an error (the first `limit`). */
export function skipWarnings(skipped: readonly SkippedTask[], limit = 20): string[] {
  const warned = skipped.filter((s) => s.warning);
  const lines = warned.slice(0, limit).map((s) => `warning: task "${s.name}" skipped: ${s.reason}`);
  if (warned.length > limit) lines.push(`warning: … ${warned.length - limit} more tasks skipped for a missing field or an error`);
  return lines;
}
