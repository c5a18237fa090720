import { expandUpstreamRefs, type WorkflowTaskInfo } from '@jobq/dag-core/wire';
import type { OperationOptions, OutputStore } from '@jobq/ports';

/**
 * The upstream refs of a task attempt (parent → `output_ref`, null for no output or skipped):
 * the compact refs of the message, or those of its overflow blob (docs/design.md#task-message), expanded against the
 * outputs container. A task without parents gets `{}`. Throws the store's error when the overflow
 * blob cannot be read.
 */
export async function resolveUpstreamRefs(
  info: Pick<WorkflowTaskInfo, 'workflowId' | 'upstream' | 'upstreamBlob'>,
  outputs: Pick<OutputStore, 'outputsContainer' | 'getUpstreamOverflow'>,
  options?: OperationOptions,
): Promise<Record<string, string | null>> {
  let compact = info.upstream;
  if (info.upstreamBlob !== null) compact = await outputs.getUpstreamOverflow(info.upstreamBlob, options);
  if (compact === null) return {};
  return expandUpstreamRefs(info.workflowId, compact, outputs.outputsContainer);
}
