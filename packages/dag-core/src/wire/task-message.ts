import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { encodeEnvelope } from './envelope';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isPlainObject, isPositiveSafeInteger, own, quoteShort } from './internal';
import { parseBlobLocation } from './output-ref';
import { queueSafeByteLength } from './queue-safe';
import { type CompactUpstreamRefs, decodeCompactUpstreamRefs } from './upstream-refs';

/**
 * The Azure Storage Queue message size limit, 64 KiB. Compare it with {@link messageByteLength}
 * of the envelope TEXT. A Storage Queue adapter that base64-encodes the body sends 4/3 as many
 * bytes; taking that into account is the adapter's job.
 */
export const STORAGE_QUEUE_MAX_MESSAGE_BYTES = 65536;

/**
 * The largest envelope text a Service Bus queue takes: Azure's 256 KiB transfer limit (Standard
 * tier) less the 4 KiB the Service Bus adapter keeps for the message's properties, so a task that
 * validates can always be sent.
 */
export const SERVICE_BUS_MAX_MESSAGE_BYTES = 258048;

/** Task-message kwarg: the workflow id. */
export const WORKFLOW_ID_KWARG = '__workflow_id';
/** Task-message kwarg: the task name. */
export const WORKFLOW_TASK_KWARG = '__workflow_task';
/** Task-message kwarg: the attempt number (a JSON number ≥ 1). */
export const ATTEMPT_NO_KWARG = '__attempt_no';
/** Task-message kwarg: the task's `timeout_s`, so the worker enforces it locally too (docs/failure-model.md#timeouts-and-lost-tasks). */
export const WORKFLOW_TIMEOUT_KWARG = '__workflow_timeout_s';
/** Task-message kwarg: the compact upstream refs object ({@link CompactUpstreamRefs}). */
export const UPSTREAM_COMPACT_KWARG = '__upstream_outputs_compact';
/** Task-message kwarg: `"{container}/{path}"` of the overflow blob holding the compact upstream refs. */
export const UPSTREAM_BLOB_KWARG = '__upstream_outputs_blob';

/**
 * True for kwarg names the engine reserves in task messages: every `__workflow_*` and
 * `__upstream_*` name, and `__attempt_no`. User kwargs must not use them.
 */
export function isReservedKwarg(key: string): boolean {
  return key.startsWith('__workflow_') || key.startsWith('__upstream_') || key === ATTEMPT_NO_KWARG;
}

/**
 * The number of bytes a message text takes on the queue, to compare with the queue limits: the
 * UTF-8 bytes of the text as a Storage Queue adapter sends it, each character XML forbids written
 * as a six-byte `\uXXXX` escape (see `queueSafeText`).
 */
export function messageByteLength(text: string): number {
  return queueSafeByteLength(text);
}

/** The parts of a task message id. */
export interface TaskMessageIdParts {
  workflowId: string;
  taskName: string;
  attemptNo: number;
}

function checkIdParts(workflowId: string, taskName: string, attemptNo: number): void {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`task message: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidTaskName(taskName)) {
    throw new RangeError(`task message: task name must be a non-empty string, got ${describeValue(taskName)}`);
  }
  if (!isPositiveSafeInteger(attemptNo)) {
    throw new RangeError(`task message: attempt number must be an integer ≥ 1, got ${describeValue(attemptNo)}`);
  }
}

/**
 * The envelope id of a task message: `{workflow_id}/{task_name}/{attempt_no}`. Every dispatch is a
 * new attempt, so an id is not reused (see docs/failure-model.md, "Delivery and attempts").
 *
 * @throws RangeError on an invalid workflow id, an empty task name, or an attempt number that is not an integer ≥ 1.
 */
export function taskMessageId(workflowId: string, taskName: string, attemptNo: number): string {
  checkIdParts(workflowId, taskName, attemptNo);
  return `${workflowId}/${taskName}/${attemptNo}`;
}

const DECIMAL = /^[1-9][0-9]*$/;

/**
 * Parses a task message id. The workflow id is everything before the first `/`; the last segment
 * is the attempt number; what lies between is the task name, which may itself contain `/`. The
 * number must be written without leading zeros. Never throws.
 */
export function parseTaskMessageId(id: string): DecodeResult<TaskMessageIdParts> {
  if (typeof id !== 'string') {
    return decodeError(`task message id: expected a string, got ${describeValue(id)}`);
  }
  const slash = id.indexOf('/');
  if (slash < 0) return decodeError(`task message id: no "/" in ${describeValue(id)}`);
  const workflowId = id.slice(0, slash);
  if (!isValidWorkflowId(workflowId)) {
    return decodeError(`task message id: invalid workflow id ${describeValue(workflowId)}`);
  }
  const segments = id.slice(slash + 1).split('/');
  const attemptText = segments.pop() ?? '';
  if (!DECIMAL.test(attemptText)) {
    return decodeError(`task message id: expected an attempt number ≥ 1 after the task name, got ${describeValue(attemptText)}`);
  }
  const attemptNo = Number(attemptText);
  if (!Number.isSafeInteger(attemptNo)) {
    return decodeError('task message id: number too large');
  }
  const taskName = segments.join('/');
  if (segments.length === 0 || taskName.length === 0) {
    return decodeError('task message id: empty task name');
  }
  return decodeOk({ workflowId, taskName, attemptNo });
}

/** What {@link encodeTaskMessage} needs. */
export interface TaskMessageInput {
  workflowId: string;
  taskName: string;
  attemptNo: number;
  /** The task's own kwargs; must not use reserved names (see {@link isReservedKwarg}). */
  kwargs: Record<string, unknown>;
  /** Compact upstream refs, for a task with parents whose refs fit in the message. */
  upstream?: CompactUpstreamRefs;
  /** `"{container}/{path}"` of the overflow blob, instead of `upstream`. */
  upstreamBlob?: string;
  /** The task's timeout in seconds, when it has one (sent as `__workflow_timeout_s`). */
  timeoutS?: number | null;
}

/**
 * Encodes a task message (the envelope text) with id {@link taskMessageId}, `num_retries` 0 and
 * `reply_requested` false. kwargs are the task's own kwargs followed by `__workflow_id`,
 * `__workflow_task`, `__attempt_no` and, when given, `__upstream_outputs_compact` or
 * `__upstream_outputs_blob`.
 *
 * @throws RangeError on invalid ids or numbers, user kwargs with reserved names, both `upstream`
 *   and `upstreamBlob` given, or an `upstreamBlob` that is not `{container}/{path}`.
 */
export function encodeTaskMessage(input: TaskMessageInput): string {
  const { workflowId, taskName, attemptNo, kwargs, upstream, upstreamBlob, timeoutS } = input;
  if (timeoutS != null && !isPositiveSafeInteger(timeoutS)) {
    throw new RangeError(`task message: timeoutS must be an integer ≥ 1, got ${describeValue(timeoutS)}`);
  }
  const id = taskMessageId(workflowId, taskName, attemptNo);
  if (!isPlainObject(kwargs)) {
    throw new RangeError(`task message: kwargs must be a plain object, got ${describeValue(kwargs)}`);
  }
  for (const key of Object.keys(kwargs)) {
    if (isReservedKwarg(key)) {
      throw new RangeError(`task message: kwarg ${quoteShort(key)} uses a reserved name`);
    }
  }
  if (upstream !== undefined && upstreamBlob !== undefined) {
    throw new RangeError('task message: give either upstream or upstreamBlob, not both');
  }
  if (upstreamBlob !== undefined && parseBlobLocation(upstreamBlob) === null) {
    throw new RangeError(`task message: upstreamBlob must be "{container}/{path}", got ${describeValue(upstreamBlob)}`);
  }
  const all: Record<string, unknown> = {
    ...kwargs,
    [WORKFLOW_ID_KWARG]: workflowId,
    [WORKFLOW_TASK_KWARG]: taskName,
    [ATTEMPT_NO_KWARG]: attemptNo,
  };
  if (timeoutS != null) all[WORKFLOW_TIMEOUT_KWARG] = timeoutS;
  if (upstream !== undefined) all[UPSTREAM_COMPACT_KWARG] = upstream;
  if (upstreamBlob !== undefined) all[UPSTREAM_BLOB_KWARG] = upstreamBlob;
  return encodeEnvelope({ id, kwargs: all, numRetries: 0 });
}

/** The workflow information found in a task message's kwargs. */
export interface WorkflowTaskInfo {
  workflowId: string;
  taskName: string;
  attemptNo: number;
  /** `__upstream_outputs_compact`, or null when absent. */
  upstream: CompactUpstreamRefs | null;
  /** `__upstream_outputs_blob` (`"{container}/{path}"`), or null when absent. */
  upstreamBlob: string | null;
  /** `__workflow_timeout_s`: the task's timeout in seconds, or null when it has none. */
  timeoutS: number | null;
  /** The kwargs without the reserved `__workflow_*`, `__upstream_*` and `__attempt_no` keys. */
  userKwargs: Record<string, unknown>;
}

/**
 * Reads the workflow information from decoded envelope kwargs. Returns null when neither
 * `__workflow_id` nor `__workflow_task` is present (a plain, non-workflow task). Returns an error
 * when one of them is missing or any reserved key is ill-typed, or when both upstream forms are
 * present. Never throws.
 */
export function decodeWorkflowTask(kwargs: Record<string, unknown>): DecodeResult<WorkflowTaskInfo | null> {
  const ctx = 'task message kwargs';
  if (!isPlainObject(kwargs)) return decodeError(`${ctx}: must be an object, got ${describeValue(kwargs)}`);
  const hasId = Object.hasOwn(kwargs, WORKFLOW_ID_KWARG);
  const hasTask = Object.hasOwn(kwargs, WORKFLOW_TASK_KWARG);
  if (!hasId && !hasTask) return decodeOk(null);

  const workflowId = own(kwargs, WORKFLOW_ID_KWARG);
  if (!isValidWorkflowId(workflowId)) {
    return decodeError(
      `${ctx}: "${WORKFLOW_ID_KWARG}" must be a workflow id (1–128 of [A-Za-z0-9._-], starting with a letter or digit), got ${describeValue(workflowId)}`,
    );
  }
  const taskName = own(kwargs, WORKFLOW_TASK_KWARG);
  if (!isValidTaskName(taskName)) {
    return decodeError(`${ctx}: "${WORKFLOW_TASK_KWARG}" must be a non-empty string, got ${describeValue(taskName)}`);
  }
  const attemptNo = own(kwargs, ATTEMPT_NO_KWARG);
  if (!isPositiveSafeInteger(attemptNo)) {
    return decodeError(`${ctx}: "${ATTEMPT_NO_KWARG}" must be an integer ≥ 1, got ${describeValue(attemptNo)}`);
  }

  const timeoutS = Object.hasOwn(kwargs, WORKFLOW_TIMEOUT_KWARG) ? own(kwargs, WORKFLOW_TIMEOUT_KWARG) : null;
  if (timeoutS !== null && !isPositiveSafeInteger(timeoutS)) {
    return decodeError(`${ctx}: "${WORKFLOW_TIMEOUT_KWARG}" must be an integer ≥ 1, got ${describeValue(timeoutS)}`);
  }

  const hasCompact = Object.hasOwn(kwargs, UPSTREAM_COMPACT_KWARG);
  const hasBlob = Object.hasOwn(kwargs, UPSTREAM_BLOB_KWARG);
  if (hasCompact && hasBlob) {
    return decodeError(`${ctx}: "${UPSTREAM_COMPACT_KWARG}" and "${UPSTREAM_BLOB_KWARG}" must not both be present`);
  }
  let upstream: CompactUpstreamRefs | null = null;
  if (hasCompact) {
    const r = decodeCompactUpstreamRefs(own(kwargs, UPSTREAM_COMPACT_KWARG));
    if (!r.ok) return decodeError(`${ctx}: "${UPSTREAM_COMPACT_KWARG}": ${r.error}`);
    upstream = r.value;
  }
  let upstreamBlob: string | null = null;
  if (hasBlob) {
    const b = own(kwargs, UPSTREAM_BLOB_KWARG);
    if (typeof b !== 'string' || parseBlobLocation(b) === null) {
      return decodeError(`${ctx}: "${UPSTREAM_BLOB_KWARG}" must be "{container}/{path}", got ${describeValue(b)}`);
    }
    upstreamBlob = b;
  }

  const userKwargs = Object.fromEntries(Object.entries(kwargs).filter(([key]) => !isReservedKwarg(key)));
  return decodeOk({ workflowId, taskName, attemptNo, upstream, upstreamBlob, timeoutS, userKwargs });
}
