/**
 * `@jobq/ports`: what jobq's services need from storage and queues, named for what it means
 * ("lease a message", "save if unchanged"), not for an SDK. Adapters implement these and pass the
 * contract suites in `@jobq/ports/testing`.
 * @packageDocumentation
 */
export { JOBQ_ERROR_CODES, JobqError, isJobqError, type JobqErrorCode, type JobqErrorOptions } from './errors';
export type { OperationOptions, OutgoingMessage, PeekedMessage, ReceiveOptions, ReceivedMessage, TaskQueue } from './task-queue';
export type {
  AcquireLeaseOptions,
  CoordinatorLease,
  CoordinatorLeaseState,
  CoordinatorStats,
  CoordinatorStatsOptions,
  CreateResult,
  LoadedRuntime,
  SaveOptions,
  SaveResult,
  Page,
  PurgeOptions,
  PurgeResult,
  NewRerunRequest,
  RequestFilter,
  RerunFilter,
  RerunRequest,
  ShardFilter,
  TaskFilter,
  TaskRow,
  TaskRowsResult,
  WorkflowFilter,
  WorkflowRequest,
  WorkflowStore,
  WorkflowSummary,
} from './workflow-store';
export { RERUN_REQUEST_ID_PATTERN, isValidRerunRequestId } from './workflow-store';
export type { OutputPlacement, OutputStore, PutOutputOptions, PutOutputResult } from './output-store';
export {
  TASK_LOG_FOLDER,
  parseTaskLogName,
  taskLogBlobPath,
  taskLogMetadataFromBlob,
  taskLogMetadataToBlob,
  type GetTaskLogOptions,
  type TaskLogEntry,
  type TaskLogMetadata,
  type TaskLogOutcome,
  type TaskLogRead,
  type TaskLogStore,
} from './task-log';
export { DEAD_LETTER_REASON_KEY, deadLetterBody } from './dead-letter';
export { MAX_TIMEOUT_IN_MS, clockTimeout, realClock, type Clock } from './clock';
export { formatDuration, formatElapsed, isDurationText, parseDurationInMs, type ElapsedOptions } from './duration';
export { describeError, errorMessage, listSome } from './text';
export { mapLimit, type MapLimitOptions } from './map-limit';
export { sleep, type SleepOptions } from './sleep';
export {
  resolveSettings,
  type ResolvedSettings,
  type SettingDefaults,
  type SettingKeys,
  type SettingRange,
  type SettingRanges,
} from './settings';
export { VirtualClock, type AdvanceUntilOptions, type VirtualClockOptions } from './virtual-clock';
export {
  assertMessageFits,
  assertValidDelay,
  assertValidTimeToLive,
  messageByteLength,
  queueSafeText,
  utf8ByteLength,
} from './message-size';
export {
  BoundedLabel,
  MAX_QUEUE_LABEL_VALUES,
  METRICS,
  OTHER_LABEL_VALUE,
  metricsMarkdownTable,
  noopInstruments,
  type CounterName,
  type GaugeName,
  type HistogramName,
  type Instruments,
  type MetricDefinition,
  type MetricLabels,
  type MetricName,
  type MetricNamesOf,
  type MetricType,
} from './metrics';
export {
  LOST_AFTER_INTERVALS,
  MAX_HEARTBEAT_RUNNING,
  capRunning,
  workerState,
  type WorkerHeartbeat,
  type WorkerQueueHeartbeat,
  type WorkerRecord,
  type WorkerRegistry,
  type WorkerRunningTask,
  type WorkerState,
} from './worker-registry';
export {
  MAX_TRACESTATE_LENGTH,
  cleanTracestate,
  formatTraceparent,
  messagingSystemOf,
  parseTraceparent,
  type TraceparentParts,
} from './trace-context';
export {
  endSpan,
  envelopeTraceOf,
  jobqTracer,
  messagingAttributes,
  remoteSpanContext,
  startProcessSpan,
  startSendSpan,
  startSubmitSpan,
  storedTraceparentOf,
  traceContextOf,
} from './tracing';
export {
  MEMBER_LIVE_FOR_MS,
  SHARD_COUNTS,
  SHARD_MANIFEST_VERSION,
  type ListOwnershipOptions,
  type OwnershipStore,
  type OwnershipView,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
  type ShardManifestRead,
  type ShardMember,
  type ShardOwnership,
} from './ownership';
export { SHARD_MANIFEST_REFRESH_INTERVAL_IN_MS, ShardRouter, type CompletionRoute, type ShardRouterOptions } from './shard-router';
export { envValue, parseWorkflowPrefix, workflowEnvironment, type WorkflowEnvironment, type WorkflowPrefix } from './deployment';
export {
  CHANNEL_ROUTES as TASK_CHANNEL_ROUTES,
  MAX_JSON_REQUEST_BYTES as TASK_CHANNEL_MAX_JSON_BYTES,
  MD5_HEADER as TASK_CHANNEL_MD5_HEADER,
  TASK_SOCKET_VARIABLE,
  TASK_TOKEN_VARIABLE,
  errorFromAnswer as taskChannelError,
  oneLine,
  statusOfCode as taskChannelStatus,
  type ChannelErrorBody as TaskChannelErrorBody,
} from './task-channel';
export {
  SHARD_MANIFEST_BLOB,
  SHARD_MEMBERS_FOLDER,
  SHARD_MEMBER_ID_PATTERN,
  checkShardCount,
  checkShardFilter,
  checkShardIndex,
  checkShardMemberId,
  parseShardManifest,
  shardCompletionQueue,
  shardLockBlob,
  shardMemberBlob,
  shardStatsBlob,
} from './shard-names';
