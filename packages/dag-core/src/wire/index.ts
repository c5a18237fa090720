/**
 * Wire formats of jobq: queue envelopes (compatible with Python `ai4s-jobq`), task messages,
 * compact upstream refs, output refs, file-stash markers, completion and wake-up messages.
 * Everything here is pure: no I/O, no clock, no randomness. Decoders never throw.
 * @packageDocumentation
 */

export type { DecodeResult } from './decode-result';
export { decodeError, decodeOk } from './decode-result';

export { utf8ByteLength } from './utf8';

export { WORKFLOW_ID_PATTERN, isValidTaskName, isValidWorkflowId } from './ids';

export type { Envelope, EnvelopeInput, EnvelopeVersion } from './envelope';
export { ENVELOPE_VERSION, decodeEnvelope, encodeEnvelope } from './envelope';

export type { BlobLocation, OutputRef } from './output-ref';
export {
  BLOB_REF_PREFIX,
  INLINE_FALLBACK_MAX_BYTES,
  INLINE_OUTPUT_MAX_BYTES,
  blobOutputRef,
  canonicalOutputBlobPath,
  decodeInlineOutput,
  isBase64Md5,
  isCanonicalOutputRef,
  isValidContainerName,
  parseBlobLocation,
  parseOutputRef,
} from './output-ref';

export type { CompactUpstreamRefs, UpstreamParent } from './upstream-refs';
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
