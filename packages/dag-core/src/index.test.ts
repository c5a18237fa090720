import { describe, expect, it } from '@jest/globals';
import * as core from './index';
import * as wire from './wire/index';

describe('the package index', () => {
  it('exports the wire codecs by name from @jobq/dag-core/wire, and not from the main entry', () => {
    const names = [
      'decodeError',
      'decodeOk',
      'utf8ByteLength',
      'queueSafeText',
      'queueSafeByteLength',
      'ENVELOPE_VERSION',
      'decodeEnvelope',
      'encodeEnvelope',
      'BLOB_REF_PREFIX',
      'INLINE_FALLBACK_MAX_BYTES',
      'INLINE_OUTPUT_MAX_BYTES',
      'blobOutputRef',
      'canonicalOutputBlobPath',
      'decodeInlineOutput',
      'isBase64Md5',
      'isCanonicalOutputRef',
      'isValidContainerName',
      'parseBlobLocation',
      'parseOutputRef',
      'OUTPUT_BLOB_PREFIX',
      'canonicalOutputAttempt',
      'legacyOutputBlobPath',
      'parseCanonicalOutputPath',
      'compactUpstreamRefs',
      'decodeCompactUpstreamRefs',
      'decodeUpstreamOverflow',
      'encodeUpstreamOverflow',
      'expandUpstreamRefs',
      'upstreamOverflowBlobPath',
      'ATTEMPT_NO_KWARG',
      'SERVICE_BUS_MAX_MESSAGE_BYTES',
      'STORAGE_QUEUE_MAX_MESSAGE_BYTES',
      'UPSTREAM_BLOB_KWARG',
      'UPSTREAM_COMPACT_KWARG',
      'WORKFLOW_ID_KWARG',
      'WORKFLOW_TASK_KWARG',
      'WORKFLOW_TIMEOUT_KWARG',
      'decodeWorkflowTask',
      'encodeTaskMessage',
      'isReservedKwarg',
      'messageByteLength',
      'parseTaskMessageId',
      'taskMessageId',
      'STASH_BLOB_PREFIX',
      'STASH_MARKER_KEY',
      'findStashMarkers',
      'isPlainFileName',
      'isStashMarkerLike',
      'makeStashMarker',
      'parseStashMarker',
      'stashBlobName',
      'COMPLETION_BODY_KWARG',
      'WAKEUP_KWARG',
      'completionMessageId',
      'decodeCompletionBody',
      'decodeCoordinatorMessage',
      'encodeCompletion',
      'encodeCompletionBody',
      'encodeWakeup',
      'SECRET_ENV_PREFIX',
      'SECRET_NAME_PATTERN',
      'findSecretRefs',
      'resolveSecretRefs',
    ];
    for (const name of names) expect(wire).toHaveProperty(name);
    for (const name of names) expect(core).not.toHaveProperty(name);
  });

  it('exports the API the other packages build on', () => {
    const names = [
      'parseWorkflow',
      'validateWorkflow',
      'workflowJsonSchema',
      'compileCondition',
      'evaluateCondition',
      'sequentializeFanIn',
      'realUpstreamTasks',
      'createRuntime',
      'freshTask',
      'reduce',
      'foldEvents',
      'encodeRuntime',
      'decodeRuntime',
      'taskQueue',
      'taskTimeoutS',
      'toRawDefinition',
      'taskState',
      'taskStatus',
      'tasksIn',
      'taskCount',
      'changedTasks',
      'taskKeyLength',
      'assembleRuntime',
      'withTaskStates',
      'parseParamsFile',
      'matrixTaskName',
      'conditionLiteral',
    ];
    for (const name of names) expect(typeof (core as Record<string, unknown>)[name]).toBe('function');
    for (const name of ['WORKFLOW_ID_PATTERN', 'isValidTaskName', 'isValidWorkflowId']) expect(core).toHaveProperty(name);
  });

  it('exports the storage codecs the adapters build on from @jobq/dag-core/wire', () => {
    const names = [
      'RuntimeDecodeError',
      'canonicalJson',
      'encodeDefinition',
      'decodeDefinition',
      'encodeSnapshot',
      'decodeSnapshot',
      'assembleParts',
      'encodeDeltaRecord',
      'encodeRollRecord',
      'decodeLogRecords',
      'applyDeltaRecord',
      'decodeRuntimeJson',
    ];
    for (const name of names) expect(typeof (wire as Record<string, unknown>)[name]).toBe('function');
  });

  it('exports every definition limit as a number', () => {
    const names = [
      'MAX_DEFINITION_DEPTH',
      'MAX_YAML_ALIAS_EXPANSION',
      'MAX_TASK_NAME_LENGTH',
      'MAX_TASK_KEY_LENGTH',
      'MAX_WORKFLOW_ID_LENGTH',
      'MAX_WORKFLOW_NAME_LENGTH',
      'MAX_WORKFLOW_QUEUES',
      'MERGE_NAME_ROOM',
      'TABLE_KEY_MAX_CHARS',
      'TABLE_ROW_MAX_BYTES',
      'TABLE_STRING_MAX_CHARS',
      'WORST_CASE_ATTEMPT_NO',
      'MAX_MATRIX_TASKS',
      'MAX_MATRIX_AXIS_PRODUCT',
    ];
    for (const name of names) expect(typeof (core as Record<string, unknown>)[name]).toBe('number');
  });
});
