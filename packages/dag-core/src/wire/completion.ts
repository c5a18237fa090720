import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { decodeEnvelope, encodeEnvelope, type EnvelopeTrace } from './envelope';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isPlainObject, isPositiveSafeInteger, own, parseJson, quoteShort } from './internal';

/** Envelope kwarg of a completion message: the completion body as JSON text. */
export const COMPLETION_BODY_KWARG = '__completion_body';
/** Envelope kwarg of a wake-up message: the workflow id. */
export const WAKEUP_KWARG = '__workflow_wakeup';

/** A task's completion, as reported by a worker to the coordinator. */
export interface Completion {
  workflowId: string;
  taskName: string;
  success: boolean;
  /** The attempt that completed; null means "the current attempt". */
  attemptNo: number | null;
  /** The `output_ref` (inline JSON or blob ref), or null when there is no output. */
  outputRef: string | null;
  /** The error text of a failure, or null. */
  error: string | null;
  /**
   * When the worker started running the attempt (ISO-8601), or null/absent when it never started it
   * (a task refused before it ran). Written as `started_at` only when set.
   */
  startedAt?: string | null;
  /**
   * True when the failure was caused by a cancel request the worker saw (the task was not started,
   * or was stopped). Such a failure never spends the retry budget. Written as `cancelled` only when true.
   */
  cancelled?: boolean;
}

/** What the coordinator finds on its completion queue. */
export type CoordinatorMessage =
  /** `trace`: the envelope's top-level `traceparent`/`tracestate` as found (unchecked), when it has them. */
  | { kind: 'completion'; completion: Completion; trace?: EnvelopeTrace }
  | { kind: 'wakeup'; workflowId: string }
  | { kind: 'poison'; reason: string };

function checkCompletion(c: Completion): void {
  if (!isValidWorkflowId(c.workflowId)) {
    throw new RangeError(`completion: invalid workflow id ${describeValue(c.workflowId)}`);
  }
  if (!isValidTaskName(c.taskName)) {
    throw new RangeError(`completion: task name must be a non-empty string, got ${describeValue(c.taskName)}`);
  }
  if (typeof c.success !== 'boolean') throw new RangeError('completion: success must be a boolean');
  if (c.attemptNo !== null && !isPositiveSafeInteger(c.attemptNo)) {
    throw new RangeError(`completion: attempt number must be an integer ≥ 1 or null, got ${describeValue(c.attemptNo)}`);
  }
  if (c.outputRef !== null && typeof c.outputRef !== 'string') throw new RangeError('completion: outputRef must be a string or null');
  if (c.error !== null && typeof c.error !== 'string') throw new RangeError('completion: error must be a string or null');
  if (c.startedAt !== undefined && c.startedAt !== null && typeof c.startedAt !== 'string')
    throw new RangeError('completion: startedAt must be a string or null');
  if (c.cancelled !== undefined && typeof c.cancelled !== 'boolean') throw new RangeError('completion: cancelled must be a boolean');
}

/**
 * The envelope id of a completion message: `{workflow_id}/{task_name}/{attempt_no}/done`, or
 * `{workflow_id}/{task_name}/current/done` when the attempt number is null.
 *
 * @throws RangeError on an invalid completion.
 */
export function completionMessageId(c: Completion): string {
  checkCompletion(c);
  return `${c.workflowId}/${c.taskName}/${c.attemptNo === null ? 'current' : String(c.attemptNo)}/done`;
}

/**
 * The completion body as JSON text, keys in this order: `workflow_id`, `task_name`, `success`,
 * `attempt_no`, `output_ref`, `error` (null values are written as null), then `started_at` and
 * `cancelled` only when set (readers that do not know them ignore them).
 *
 * @throws RangeError on an invalid completion.
 */
export function encodeCompletionBody(c: Completion): string {
  checkCompletion(c);
  const body: Record<string, unknown> = {
    workflow_id: c.workflowId,
    task_name: c.taskName,
    success: c.success,
    attempt_no: c.attemptNo,
    output_ref: c.outputRef,
    error: c.error,
  };
  if (c.startedAt !== undefined && c.startedAt !== null) body.started_at = c.startedAt;
  if (c.cancelled === true) body.cancelled = true;
  return JSON.stringify(body);
}

/**
 * Encodes a completion message: an envelope (id {@link completionMessageId}, `num_retries` 0)
 * whose kwargs are `{"__completion_body": "<body JSON text>"}`.
 *
 * The body is escaped twice more on the way (body string in kwargs, kwargs string in the
 * envelope), so an inline `output_ref` can take several times its own size: check the result
 * with `messageByteLength` against the queue limit. `trace`: the sending span's context, added as
 * the envelope's top-level keys (never as a kwarg: a completion with another kwarg is poison).
 *
 * @throws RangeError on an invalid completion.
 */
export function encodeCompletion(c: Completion, trace?: EnvelopeTrace): string {
  return encodeEnvelope({
    id: completionMessageId(c),
    kwargs: { [COMPLETION_BODY_KWARG]: encodeCompletionBody(c) },
    numRetries: 0,
    ...(trace === undefined ? {} : { trace }),
  });
}

/**
 * Encodes a wake-up message for a workflow: kwargs `{"__workflow_wakeup": "<workflow_id>"}`, id
 * `wakeup/{workflow_id}`, or `wakeup/{workflow_id}/{suffix}` when a non-empty `suffix` is given
 * (pass a nonce for unique ids; nothing random happens here).
 *
 * @throws RangeError on an invalid workflow id.
 */
export function encodeWakeup(workflowId: string, suffix?: string): string {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`wakeup: invalid workflow id ${describeValue(workflowId)}`);
  }
  const id = suffix === undefined || suffix === '' ? `wakeup/${workflowId}` : `wakeup/${workflowId}/${suffix}`;
  return encodeEnvelope({ id, kwargs: { [WAKEUP_KWARG]: workflowId }, numRetries: 0 });
}

/**
 * Decodes a completion body (JSON text). `attempt_no`, `output_ref`, `error` and `started_at` may
 * be absent, which reads as null (`cancelled` as false); unknown extra keys are ignored. Never throws; errors start with
 * `completion body:`.
 */
export function decodeCompletionBody(text: string): DecodeResult<Completion> {
  const ctx = 'completion body';
  if (typeof text !== 'string') return decodeError(`${ctx}: expected JSON text, got ${describeValue(text)}`);
  const parsed = parseJson(text);
  if (!parsed.ok) return decodeError(`${ctx}: not valid JSON (${parsed.error})`);
  const body = parsed.value;
  if (!isPlainObject(body)) return decodeError(`${ctx}: must be a JSON object, got ${describeValue(body)}`);

  const workflowId = own(body, 'workflow_id');
  if (!isValidWorkflowId(workflowId)) {
    return decodeError(
      `${ctx}: "workflow_id" must be a non-empty workflow id (1–128 of [A-Za-z0-9._-], starting with a letter or digit), got ${describeValue(workflowId)}`,
    );
  }
  const taskName = own(body, 'task_name');
  if (!isValidTaskName(taskName)) {
    return decodeError(`${ctx}: "task_name" must be a non-empty string, got ${describeValue(taskName)}`);
  }
  const success = own(body, 'success');
  if (typeof success !== 'boolean') {
    return decodeError(`${ctx}: "success" must be a boolean, got ${describeValue(success)}`);
  }
  const attempt = own(body, 'attempt_no') ?? null;
  if (attempt !== null && !isPositiveSafeInteger(attempt)) {
    return decodeError(`${ctx}: "attempt_no" must be an integer ≥ 1 or null, got ${describeValue(attempt)}`);
  }
  const outputRef = own(body, 'output_ref') ?? null;
  if (outputRef !== null && typeof outputRef !== 'string') {
    return decodeError(`${ctx}: "output_ref" must be a string or null, got ${describeValue(outputRef)}`);
  }
  const error = own(body, 'error') ?? null;
  if (error !== null && typeof error !== 'string') {
    return decodeError(`${ctx}: "error" must be a string or null, got ${describeValue(error)}`);
  }
  const startedAt = own(body, 'started_at') ?? null;
  if (startedAt !== null && typeof startedAt !== 'string') {
    return decodeError(`${ctx}: "started_at" must be a timestamp string or null, got ${describeValue(startedAt)}`);
  }
  const cancelled = own(body, 'cancelled') ?? false;
  if (typeof cancelled !== 'boolean') {
    return decodeError(`${ctx}: "cancelled" must be a boolean, got ${describeValue(cancelled)}`);
  }
  return decodeOk({ workflowId, taskName, success, attemptNo: attempt, outputRef, error, startedAt, cancelled });
}

/**
 * Classifies a message from the completion queue. Never throws: anything that is not a
 * well-formed completion or wake-up (bad JSON, a bad envelope, kwargs other than exactly one of
 * `__completion_body` / `__workflow_wakeup`, an ill-typed body field, an invalid workflow id…) is
 * `poison`, with a one-line reason.
 */
export function decodeCoordinatorMessage(text: string): CoordinatorMessage {
  const envelope = decodeEnvelope(text);
  if (!envelope.ok) return { kind: 'poison', reason: envelope.error };
  const kwargs = envelope.value.kwargs;
  const keys = Object.keys(kwargs);
  if (keys.length !== 1) {
    const shown = keys.length === 0 ? 'none' : keys.slice(0, 5).map(quoteShort).join(', ') + (keys.length > 5 ? ', …' : '');
    return {
      kind: 'poison',
      reason: `coordinator message: kwargs must hold exactly one of "${COMPLETION_BODY_KWARG}" or "${WAKEUP_KWARG}", got ${shown}`,
    };
  }
  const key = keys[0] ?? '';
  const value = own(kwargs, key);
  if (key === COMPLETION_BODY_KWARG) {
    if (typeof value !== 'string') {
      return {
        kind: 'poison',
        reason: `coordinator message: "${COMPLETION_BODY_KWARG}" must be a string of JSON, got ${describeValue(value)}`,
      };
    }
    const body = decodeCompletionBody(value);
    if (!body.ok) return { kind: 'poison', reason: body.error };
    const { traceparent, tracestate } = envelope.value;
    if (traceparent === undefined) return { kind: 'completion', completion: body.value };
    return { kind: 'completion', completion: body.value, trace: tracestate === undefined ? { traceparent } : { traceparent, tracestate } };
  }
  if (key === WAKEUP_KWARG) {
    if (!isValidWorkflowId(value)) {
      return {
        kind: 'poison',
        reason: `wakeup: "${WAKEUP_KWARG}" must be a non-empty workflow id (1–128 of [A-Za-z0-9._-], starting with a letter or digit), got ${describeValue(value)}`,
      };
    }
    return { kind: 'wakeup', workflowId: value };
  }
  return {
    kind: 'poison',
    reason: `coordinator message: unknown kwarg ${quoteShort(key)} (expected "${COMPLETION_BODY_KWARG}" or "${WAKEUP_KWARG}")`,
  };
}
