/**
 * `@jobq/worker/task`: helpers for the scripts of jobq workflow tasks (SPEC §5.4, §8.3). They read
 * the environment the workflow processor gives a task's process (`JOBQ_OUTPUT_FILE`,
 * `JOBQ_WORKFLOW_UPSTREAM_REFS`, …) and throw a clear `invalid-config` error outside a task.
 *
 * ```ts
 * import { getFile, getUpstreamOutput, setOutput, stashFile } from '@jobq/worker/task';
 *
 * const params = await getUpstreamOutput('prepare');
 * await setOutput({ model: await stashFile('model.pt'), loss: 0.12 });
 * // downstream: await (await getFile('train', 'model')).downloadTo('model.pt');
 * ```
 *
 * @packageDocumentation
 */
export {
  getFile,
  getRealUpstreamTasks,
  getUpstreamOutput,
  getUpstreamOutputs,
  isCancelled,
  setOutput,
  stashFile,
  type StashFileOptions,
} from './helpers';
export { StashedFile } from './stashed-file';
export type { StashMarker, StashMarkerJson } from '@jobq/dag-core';
export { configureTaskHelpers, type CancellationChecker, type TaskHelpersOptions } from './context';
