/**
 * `@jobq/dag-core/wire`: the message and storage formats of jobq, for the adapters and services
 * that read and write them (queues, stores, the worker, the coordinator, the CLI). Task messages,
 * completions and the envelope, output and upstream refs, stash markers, secret references, and
 * the stored forms of a runtime (definition blob, snapshots, delta logs). Formats:
 * docs/design.md#messages and docs/runtime-format.md. Decoders return a {@link DecodeResult}; the
 * storage codecs throw a {@link RuntimeDecodeError}.
 * @packageDocumentation
 */

export type { DecodeResult } from './decode-result';
export { decodeError, decodeOk } from './decode-result';
export { utf8ByteLength } from './utf8';
export type { SecretRef, SecretRefProblem, SecretRefScan, SecretResolution } from './secret-refs';
export { SECRET_ENV_PREFIX, SECRET_NAME_PATTERN, findSecretRefs, resolveSecretRefs } from './secret-refs';
export { queueSafeByteLength, queueSafeText } from './queue-safe';
export type { Envelope, EnvelopeInput, EnvelopeTrace, EnvelopeVersion } from './envelope';
export { ENVELOPE_VERSION, decodeEnvelope, encodeEnvelope, withEnvelopeTrace } from './envelope';
export type { BlobLocation, CanonicalOutputPath, OutputRef } from './output-ref';
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
} from './output-ref';
export type { CanonicalParentsByAttempt, CompactUpstreamRefs, UpstreamParent } from './upstream-refs';
export {
  compactUpstreamRefs,
  decodeCompactUpstreamRefs,
  decodeUpstreamOverflow,
  encodeUpstreamOverflow,
  expandUpstreamRefs,
  upstreamOverflowBlobPath,
} from './upstream-refs';
export type { TaskMessageIdParts, TaskMessageInput, WorkflowTaskInfo } from './task-message';
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
} from './task-message';
export type { FoundStashMarker, StashMarker, StashMarkerJson } from './stash-marker';
export {
  STASH_BLOB_PREFIX,
  STASH_MARKER_KEY,
  findStashMarkers,
  isPlainFileName,
  isStashMarkerLike,
  makeStashMarker,
  parseStashMarker,
  stashBlobName,
} from './stash-marker';
export type { Completion, CoordinatorMessage } from './completion';
export {
  COMPLETION_BODY_KWARG,
  WAKEUP_KWARG,
  completionMessageId,
  decodeCompletionBody,
  decodeCoordinatorMessage,
  encodeCompletion,
  encodeCompletionBody,
  encodeWakeup,
} from './completion';

export { RuntimeDecodeError, decodeRuntimeJson } from '../runtime/codec';
export { canonicalJson, decodeDefinition, encodeDefinition } from '../runtime/definition-codec';
export type { StoredWorkflowFields } from '../runtime/state-codec';
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
} from '../runtime/snapshot-codec';

// The parsed form of a `condition:` expression, as a `CompiledCondition` stores it with the workflow.
export type {
  AggregateFunction,
  AggregateNode,
  CompareNode,
  CompareOperator,
  Comparison,
  ConditionNode,
  ListNode,
  LiteralNode,
  LiteralValue,
  LogicalNode,
  NotNode,
  PathSegment,
  ReferenceNode,
  ReferenceRoot,
} from '../condition';
