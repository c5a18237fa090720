/**
 * `@jobq/task`: helpers for the scripts of jobq workflow tasks (docs/design.md#outputs, docs/design.md#the-workflow-processor). They read
 * the environment the workflow processor gives a task's process (`JOBQ_OUTPUT_FILE`,
 * `JOBQ_WORKFLOW_UPSTREAM_REFS`, …) and throw a clear `invalid-config` error outside a task.
 * Inside a worker they hold no storage credential: blob outputs and stashed files go through the
 * worker's task channel (`JOBQ_TASK_SOCKET`), which allows only this attempt's direct parents'
 * outputs and files, and files stashed for this task. Outside a worker (tests, tools) they open the
 * store from the environment with `@jobq/store-azure`, or use one given to `configureTaskHelpers`.
 *
 * ```ts
 * import { getFile, getUpstreamOutput, setOutput, stashFile } from '@jobq/task';
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
/** The client side of the worker's task channel (the helpers use it inside a worker; exported for the worker's tests). */
export { TaskChannelClient, type TaskStorage } from './channel-client';
