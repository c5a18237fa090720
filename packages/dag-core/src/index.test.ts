import { describe, expect, it } from '@jest/globals';
import * as core from './index';

describe('the package index', () => {
  it('exports the wire codecs by name', () => {
    const names = [
      'decodeError', 'decodeOk', 'utf8ByteLength', 'queueSafeText', 'queueSafeByteLength', 'WORKFLOW_ID_PATTERN', 'isValidTaskName', 'isValidWorkflowId',
      'ENVELOPE_VERSION', 'decodeEnvelope', 'encodeEnvelope',
      'BLOB_REF_PREFIX', 'INLINE_FALLBACK_MAX_BYTES', 'INLINE_OUTPUT_MAX_BYTES', 'blobOutputRef', 'canonicalOutputBlobPath',
      'decodeInlineOutput', 'isBase64Md5', 'isCanonicalOutputRef', 'isValidContainerName', 'parseBlobLocation', 'parseOutputRef',
      'compactUpstreamRefs', 'decodeCompactUpstreamRefs', 'decodeUpstreamOverflow', 'encodeUpstreamOverflow',
      'expandUpstreamRefs', 'upstreamOverflowBlobPath',
      'ATTEMPT_NO_KWARG', 'SERVICE_BUS_MAX_MESSAGE_BYTES', 'STORAGE_QUEUE_MAX_MESSAGE_BYTES', 'UPSTREAM_BLOB_KWARG',
      'UPSTREAM_COMPACT_KWARG', 'WORKFLOW_ID_KWARG', 'WORKFLOW_TASK_KWARG', 'WORKFLOW_TIMEOUT_KWARG', 'decodeWorkflowTask', 'encodeTaskMessage',
      'isReservedKwarg', 'messageByteLength', 'parseTaskMessageId', 'taskMessageId',
      'STASH_BLOB_PREFIX', 'STASH_MARKER_KEY', 'findStashMarkers', 'isPlainFileName', 'isStashMarkerLike', 'makeStashMarker',
      'parseStashMarker', 'stashBlobName',
      'COMPLETION_BODY_KWARG', 'WAKEUP_KWARG', 'completionMessageId', 'decodeCompletionBody', 'decodeCoordinatorMessage',
      'encodeCompletion', 'encodeCompletionBody', 'encodeWakeup',
    ];
    for (const name of names) expect(core).toHaveProperty(name);
  });

  it('exports the API the other packages build on', () => {
    const names = [
      'parseWorkflow', 'validateWorkflow', 'workflowJsonSchema', 'compileCondition', 'evaluateCondition',
      'sequentializeFanIn', 'realUpstreamTasks', 'createRuntime', 'reduce', 'foldEvents', 'encodeRuntime', 'decodeRuntime',
      'RuntimeDecodeError', 'taskQueue', 'taskTimeoutS', 'toRawDefinition',
    ];
    for (const name of names) expect(typeof (core as Record<string, unknown>)[name]).toBe('function');
  });
});
