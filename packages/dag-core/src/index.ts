/**
 * `@jobq/dag-core`: the pure core of jobq. Definitions, validation and JSON Schema; the condition
 * language; DAG transforms; the reducer that moves a workflow forward; wire codecs. No Node
 * modules, no Azure, no clock, no randomness: time and ids arrive as arguments. The message and
 * storage formats that only adapters and services need are in `@jobq/dag-core/wire`.
 * @packageDocumentation
 */

export type { Failed, Issue, IssuesFailed, Result, WithWarnings } from './result';
export { closestName, editDistance, type ClosestNameOptions } from './suggest';
export { errorMessage } from './error-text';

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
export { WORKFLOW_ID_PATTERN, isValidTaskName, isValidWorkflowId } from './wire/ids';

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
  type TaskExplanationBase,
  type RunningTaskExplanation,
  type RuntimeExplanation,
  type TaskExplanation,
  type WorkflowExplanation,
} from './runtime/explain';
export { workflowStatus } from './runtime/status';
export { RUNTIME_FORMAT_VERSION, decodeRuntime, encodeRuntime } from './runtime/codec';

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
