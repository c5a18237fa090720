export {
  TASK_STATUSES,
  WORKFLOW_STATUSES,
  isBlocking,
  isSatisfying,
  isTerminalTaskStatus,
  isTerminalWorkflowStatus,
  type ActivateEvent,
  type CancelEvent,
  type CompletionEvent,
  type ConditionInputsEvent,
  type DispatchEffect,
  type Effect,
  type FetchConditionInputsEffect,
  type IgnoredEffect,
  type NoticeEffect,
  type ReduceResult,
  type RetryEvent,
  type TaskCounts,
  type TaskRuntime,
  type TaskStatus,
  type TimeoutSweepEvent,
  type WorkflowEvent,
  type WorkflowFinishedEffect,
  type WorkflowRuntime,
  type WorkflowStatus,
} from './types';
export { createRuntime, emptyCounts, type CreateRuntimeInit } from './create';
export { foldEvents, reduce, type FoldResult } from './reduce';
export { policyVerdict } from './settle';
export { workflowStatus } from './status';
export { RUNTIME_FORMAT_VERSION, RuntimeDecodeError, decodeRuntime, encodeRuntime } from './codec';
