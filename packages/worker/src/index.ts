/**
 * `@jobq/worker`: the jobq worker (docs/design.md#workers). A pull loop over a `TaskQueue` with lock renewal and
 * graceful shutdown, the shell and workflow processors, and the pieces an app composes them from.
 * Adapters are handed in by the app. Task helpers for workflow scripts are in `@jobq/task`.
 * @packageDocumentation
 */
export type { ProcessOutcome, Processor, TaskContext } from './processor';
export {
  DEFAULT_MAX_DELIVERIES,
  WORKER_DEFAULTS,
  Worker,
  maxDeliveriesFromEnv,
  type StopOptions,
  type WorkerOptions,
  type WorkerSummary,
  type WorkerHealth,
} from './worker';
export { ShellProcessor, killTimeoutFromEnv, type ShellProcessorOptions } from './shell-processor';
export { isCredentialVariable, prepareTaskEnvironment, taskEnvironment, type PreparedTaskEnvironment } from './task-environment';
export { MIN_MASKED_SECRET_LENGTH, SECRET_MASK, SecretMasker } from './secrets';
export {
  WORKFLOW_CANCELLED,
  WorkflowProcessor,
  workflowProcessorSettingsFromEnv,
  type WorkflowProcessorEnvSettings,
  type WorkflowProcessorOptions,
} from './workflow-processor';
export {
  CancelFlagCache,
  DEFAULT_CANCEL_POLL_INTERVAL_IN_MS,
  cancelCheckFromStore,
  isCancelRequested,
  workflowExistsInStore,
  type CancelFlagCacheOptions,
} from './cancel-flag';
export {
  DEFAULT_COMPLETION_BACKOFF,
  DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS,
  publishCompletion,
  type BackoffSettings,
  type PublishCompletionOptions,
  type PublishResult,
} from './completion-publisher';
export {
  parseDirsyncDestination,
  startDirsync,
  type BlobDirsyncDestination,
  type DirsyncDestination,
  type DirsyncOptions,
  type DirsyncSession,
  type DirsyncUploader,
} from './dirsync';
export { DEFAULT_KILL_TIMEOUT_IN_MS, parseDurationInMs } from './duration';
export { MAX_TIMER_DELAY_IN_MS, setLongTimeout, type LongTimer } from './long-timer';
export { startTaskChannel, type TaskChannel, type TaskChannelOptions, type TaskChannelStore } from './task-channel';
export { TASK_SOCKET_VARIABLE, TASK_TOKEN_VARIABLE } from '@jobq/ports';
export { checkTaskUser, taskUserFromEnv, type TaskUser } from './task-user';
export { describeShellResult, runShell, type RunShellOptions, type ShellResult } from './subprocess';
/**
 * Deprecated here, kept until the next minor version: they moved to `@jobq/ports` (how to reach a
 * storage account moved to `@jobq/store-azure`: `storageConnectionFor`, `chooseStorageConnection`, …).
 */
export { envValue, parseWorkflowPrefix, workflowEnvironment, type WorkflowEnvironment, type WorkflowPrefix } from '@jobq/ports';
export { prefixedLog, stderrLog, type LogLine, type TaskLine, type TaskLineSink, type TaskRef } from './log';
export { DEFAULT_TASK_LOG_TAIL_BYTES, TASK_LOG_HEAD_BYTES, TaskLogBuffer } from './task-log-buffer';
export {
  DEFAULT_TASK_LOG_FLUSH_INTERVAL_IN_MS,
  TASK_LOG_MODES,
  TASK_LOG_UPLOAD_TIMEOUT_IN_MS,
  parseTaskLogMode,
  taskLogSettingsFromEnv,
  type TaskLogCounters,
  type TaskLogMode,
  type TaskLogSettings,
} from './task-log-writer';
export { DEFAULT_HEARTBEAT_INTERVAL_IN_MS, Heartbeat, newWorkerId, type HeartbeatSnapshot, type WorkerHeartbeatOptions } from './heartbeat';
