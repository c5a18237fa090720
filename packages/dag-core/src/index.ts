/**
 * `@jobq/dag-core`: the pure core of jobq. Definitions, validation and JSON Schema; the condition
 * language; DAG transforms; the reducer that moves a workflow forward; wire codecs. No Node
 * modules, no Azure, no clock, no randomness: time and ids arrive as arguments.
 * @packageDocumentation
 */

export type { Issue, Result } from './result';
export { closestName, editDistance, type ClosestNameOptions } from './suggest';

export type { DepPolicy, ResultPolicy, RetryDelaySettings, TaskDefinition, WorkflowDefinition } from './definition/types';
export { delayBeforeAttempt, retryDelayS, retryDelaySettings, taskQueue, taskTimeoutS } from './definition/types';
export { parseParamsFile, parseWorkflow, type ParseWorkflowOptions } from './definition/parse';
export { validateDefinition, validateWorkflow, type ValidateWorkflowOptions } from './definition/validate';
export { PARAM_ENV_PREFIX, type ParamOverrides, type ParamType, type ParamValue } from './definition/params';
export { MATRIX_ENV_PREFIX, matrixTaskName } from './definition/matrix';
export { workflowJsonSchema } from './definition/schema';
export { toRawDefinition } from './definition/convert';
export { DEFINITION_ISSUE_CODES, DEFINITION_WARNING_CODES, type DefinitionIssueCode } from './definition/issue-codes';
export {
  INTERNAL_TASK_NAME_PATTERN,
  KWARG_KEY_PATTERN,
  QUEUE_SPEC_PATTERN,
  TASK_NAME_PATTERN,
  isStorageAccountName,
  parseQueueSpec,
  taskKeyLength,
  taskNameProblem,
  type QueueSpec,
} from './definition/names';
export {
  MAX_DEFINITION_DEPTH,
  MAX_MATRIX_AXIS_PRODUCT,
  MAX_MATRIX_TASKS,
  MAX_RETRY_DELAY_S,
  MAX_TASK_KEY_LENGTH,
  MAX_TASK_NAME_LENGTH,
  MAX_WORKFLOW_ID_LENGTH,
  MAX_WORKFLOW_NAME_LENGTH,
  MAX_WORKFLOW_QUEUES,
  MAX_YAML_ALIAS_EXPANSION,
  MERGE_NAME_ROOM,
  TABLE_KEY_MAX_CHARS,
  TABLE_ROW_MAX_BYTES,
  TABLE_STRING_MAX_CHARS,
  WORST_CASE_ATTEMPT_NO,
} from './definition/limits';
export { MERGE_PREFIX, isMergeNode } from './definition/semantics';

export {
  compileCondition,
  conditionLiteral,
  conditionSkipReason,
  evaluateCondition,
  fnmatch,
  MAX_SKIP_REASON_LENGTH,
  skipReasonKind,
  type CompiledCondition,
  type ConditionEvaluation,
  type ConditionTruth,
  type EvaluateConditionOptions,
  type SkipKind,
} from './condition';

export { mergeNodeName, realUpstreamTasks, sequentializeFanIn } from './transform/fan-in';

export type { DecodeResult } from './wire/decode-result';
export { decodeError, decodeOk } from './wire/decode-result';
export { utf8ByteLength } from './wire/utf8';
export type { SecretRef, SecretRefProblem, SecretRefScan, SecretResolution } from './wire/secret-refs';
export { SECRET_ENV_PREFIX, SECRET_NAME_PATTERN, findSecretRefs, resolveSecretRefs } from './wire/secret-refs';
export { queueSafeByteLength, queueSafeText } from './wire/queue-safe';
export { WORKFLOW_ID_PATTERN, isValidTaskName, isValidWorkflowId } from './wire/ids';
export type { Envelope, EnvelopeInput, EnvelopeTrace, EnvelopeVersion } from './wire/envelope';
export { ENVELOPE_VERSION, decodeEnvelope, encodeEnvelope, withEnvelopeTrace } from './wire/envelope';
export type { BlobLocation, CanonicalOutputPath, OutputRef } from './wire/output-ref';
export {
  BLOB_REF_PREFIX,
  INLINE_FALLBACK_MAX_BYTES,
  INLINE_OUTPUT_MAX_BYTES,
  OUTPUT_BLOB_PREFIX,
  blobOutputRef,
  canonicalOutputAttempt,
  canonicalOutputBlobPath,
  decodeInlineOutput,
  isBase64Md5,
  isCanonicalOutputRef,
  isValidContainerName,
  legacyOutputBlobPath,
  parseBlobLocation,
  parseCanonicalOutputPath,
  parseOutputRef,
} from './wire/output-ref';
export type { CanonicalParentsByAttempt, CompactUpstreamRefs, UpstreamParent } from './wire/upstream-refs';
export {
  compactUpstreamRefs,
  decodeCompactUpstreamRefs,
  decodeUpstreamOverflow,
  encodeUpstreamOverflow,
  expandUpstreamRefs,
  upstreamOverflowBlobPath,
} from './wire/upstream-refs';
export type { TaskMessageIdParts, TaskMessageInput, WorkflowTaskInfo } from './wire/task-message';
export {
  ATTEMPT_NO_KWARG,
  SERVICE_BUS_MAX_MESSAGE_BYTES,
  STORAGE_QUEUE_MAX_MESSAGE_BYTES,
  UPSTREAM_BLOB_KWARG,
  UPSTREAM_COMPACT_KWARG,
  WORKFLOW_ID_KWARG,
  WORKFLOW_TASK_KWARG,
  WORKFLOW_TIMEOUT_KWARG,
  decodeWorkflowTask,
  encodeTaskMessage,
  isReservedKwarg,
  messageByteLength,
  parseTaskMessageId,
  taskMessageId,
} from './wire/task-message';
export type { FoundStashMarker, StashMarker, StashMarkerJson } from './wire/stash-marker';
export {
  STASH_BLOB_PREFIX,
  STASH_MARKER_KEY,
  findStashMarkers,
  isPlainFileName,
  isStashMarkerLike,
  makeStashMarker,
  parseStashMarker,
  stashBlobName,
} from './wire/stash-marker';
export type { Completion, CoordinatorMessage } from './wire/completion';
export {
  COMPLETION_BODY_KWARG,
  WAKEUP_KWARG,
  completionMessageId,
  decodeCompletionBody,
  decodeCoordinatorMessage,
  encodeCompletion,
  encodeCompletionBody,
  encodeWakeup,
} from './wire/completion';

export {
  DEFAULT_LOST_TASK_GRACE_MS,
  DEFAULT_TASK_MESSAGE_TTL_MS,
  RERUN_FORGET_AFTER_MS,
  TASK_STATUSES,
  WORKFLOW_STATUSES,
  isBlocking,
  isSatisfying,
  isTerminalTaskStatus,
  isTerminalWorkflowStatus,
  type ActivateEvent,
  type AppliedRerun,
  type CancelEvent,
  type CompletionEvent,
  type ConditionInputsEvent,
  type CorruptEvent,
  type DispatchEffect,
  type Effect,
  type FetchConditionInputsEffect,
  type IgnoredEffect,
  type NoticeEffect,
  type ReduceResult,
  type RerunEvent,
  type RetryEvent,
  type TaskCounts,
  type TaskRuntime,
  type TaskStatus,
  type TimeoutSweepEvent,
  type WorkflowEvent,
  type WorkflowFinishedEffect,
  type WorkflowRuntime,
  type WorkflowStatus,
} from './runtime/types';
export { createRuntime, emptyCounts, freshTask, type CreateRuntimeInit } from './runtime/create';
export { changedTasks, taskCount, taskState, taskStatus, tasksIn } from './runtime/access';
export { RateWindow, doneCount } from './runtime/progress';
export { assembleRuntime, withTaskStates, type ReplaceableFields, type RuntimeFields } from './runtime/assemble';
export { deadlinePassed, foldEvents, reduce, type FoldResult } from './runtime/reduce';
export { planRerun, type RerunPlan } from './runtime/rerun';
export { policyVerdict, type Verdict } from './runtime/settle';
export { isNewer, pendingRequests, type PendingRequests, type RequestTimes } from './runtime/time';
export {
  dependencyState,
  explainRuntime,
  waitsForDelay,
  type DependencyState,
  type ParallelismUse,
  type PendingCause,
  type PendingTaskExplanation,
  type ReadyHold,
  type ReadyTaskExplanation,
  type RunningTaskExplanation,
  type RuntimeExplanation,
  type TaskExplanation,
  type WorkflowExplanation,
} from './runtime/explain';
export { workflowStatus } from './runtime/status';
export { RUNTIME_FORMAT_VERSION, RuntimeDecodeError, decodeRuntime, decodeRuntimeJson, encodeRuntime } from './runtime/codec';
export { canonicalJson, decodeDefinition, encodeDefinition } from './runtime/definition-codec';
export type { StoredWorkflowFields } from './runtime/state-codec';
export {
  STATE_FORMAT_VERSION,
  applyDeltaRecord,
  assembleParts,
  decodeLogRecords,
  decodeSnapshot,
  encodeDeltaRecord,
  encodeRollRecord,
  encodeSnapshot,
  type LogRecord,
  type RollTarget,
  type RuntimeParts,
  type SnapshotMeta,
} from './runtime/snapshot-codec';

export {
  ROLLUP_AUTO_NODES_MAX,
  ROLLUP_AUTO_TASKS_MAX,
  ROLLUP_LEVELS,
  autoRollupLevel,
  layerOf,
  rollupGraph,
  rollupSizes,
  type RollupGraph,
  type RollupLevel,
  type RollupNode,
} from './graph/rollup';
export { fnv1a32, indexPartitionOf, isShardCount, shardOf } from './shard/shard-of';
