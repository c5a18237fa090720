import { isMergeNode, taskState, type TaskRuntime, type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import { mapLimit, taskLogBlobPath, type OutputStore } from '@jobq/ports';
import { errorLine } from './base';

/** Output blobs read at once by {@link readTaskOutputs}. */
const READS_AT_ONCE = 8;

/**
 * The log blob of a task's current attempt, `workflow-logs/{workflow_id}/{task}/{attempt}.log` in
 * the outputs target; null when the task never ran (attempt 0). The worker writes it for an
 * attempt that printed something or failed, so the blob may be missing for a silent one.
 */
export function taskLogBlob(workflowId: string, taskName: string, attemptNo: number): string | null {
  return attemptNo > 0 ? taskLogBlobPath(workflowId, taskName, attemptNo) : null;
}

/**
 * The decoded output of one task: null when it has none (not completed, skipped, or it set none).
 * An output that cannot be read is null too, after one line through `note`.
 */
export async function readTaskOutput(
  outputs: Pick<OutputStore, 'getOutput'>,
  taskName: string,
  state: TaskRuntime | undefined,
  note: (line: string) => void,
): Promise<unknown> {
  if (state?.outputRef === undefined || state.outputRef === null) return null;
  try {
    return await outputs.getOutput(state.outputRef);
  } catch (error) {
    note(`jobq: the output of task "${taskName}" cannot be read: ${errorLine(error)}`);
    return null;
  }
}

/**
 * The outputs of the tasks of a workflow, merge nodes left out, by name in definition order (what
 * `workflow run --json`, `workflow status --json` and `workflow outputs` print). `only` limits it
 * to those tasks. A few blobs are read at once.
 */
export async function readTaskOutputs(
  outputs: Pick<OutputStore, 'getOutput'>,
  definition: WorkflowDefinition,
  runtime: WorkflowRuntime | null,
  note: (line: string) => void,
  only?: ReadonlySet<string>,
): Promise<Map<string, unknown>> {
  const names = definition.tasks
    .filter((t) => !isMergeNode(t.name, t.kwargs) && (only === undefined || only.has(t.name)))
    .map((t) => t.name);
  const values = await mapLimit(names, READS_AT_ONCE, (name) =>
    readTaskOutput(outputs, name, runtime === null ? undefined : taskState(runtime, name), note),
  );
  return new Map(names.map((name, i) => [name, values[i]]));
}
