import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { describeValue, isNonNegativeSafeInteger, isPlainObject, own, parseJson } from './internal';

/**
 * The envelope version this module writes. Readers accept {@link ENVELOPE_VERSION} (1) and 0.
 */
export const ENVELOPE_VERSION = 1;

/** The envelope versions {@link decodeEnvelope} accepts. */
export type EnvelopeVersion = 0 | 1;

/**
 * A decoded queue message body, the format of the Python `ai4s-jobq` library's `Task`:
 * `{"version":1,"reply_requested":false,"kwargs":"<JSON text>","num_retries":N,"id":"<id>"}`.
 */
export interface Envelope {
  /** The version found on the wire (0 or 1). */
  version: EnvelopeVersion;
  /** The message id (`id`). */
  id: string;
  /** The keyword arguments, decoded from the JSON text held in `kwargs`. */
  kwargs: Record<string, unknown>;
  /** `num_retries`: how many times the message was retried so far. */
  numRetries: number;
  /** `reply_requested`; always false for a version-0 envelope. */
  replyRequested: boolean;
  /**
   * The top-level `traceparent` (W3C trace context of the span that sent the message), when the
   * envelope has one as a string; carried as found, not checked (docs/observability.md#tracing).
   */
  traceparent?: string;
  /** The top-level `tracestate`, when the envelope has one as a string (sent only with a `traceparent`). */
  tracestate?: string;
}

/**
 * The trace context a message carries in the top-level `traceparent` (and `tracestate`) keys of its
 * envelope, after `id`: only on messages sent from a sampled span, so every other message is byte
 * for byte what it was without tracing. Readers (jobq's and ai4s-jobq's) ignore unknown top-level
 * keys; kwargs never carry it.
 */
export interface EnvelopeTrace {
  traceparent: string;
  /** Left out when empty. */
  tracestate?: string;
}

/** What {@link encodeEnvelope} needs. */
export interface EnvelopeInput {
  /** The message id; non-empty. */
  id: string;
  /** Keyword arguments; must be a plain object of JSON-serialisable values. */
  kwargs: Record<string, unknown>;
  /** An integer ≥ 0. */
  numRetries: number;
  /** Defaults to false. */
  replyRequested?: boolean;
  /** The trace context to add as top-level keys (see {@link EnvelopeTrace}); none when absent. */
  trace?: EnvelopeTrace;
}

/**
 * Encodes a version-1 envelope. The keys come in exactly this order:
 * `version`, `reply_requested`, `kwargs` (the kwargs object serialised as a JSON string),
 * `num_retries`, `id`. The output is compact JSON (no spaces), which Python's `json.loads` reads.
 *
 * Values in `kwargs` go through `JSON.stringify`, so `undefined` members disappear and
 * `toJSON` methods apply, as usual.
 *
 * @throws RangeError when `id` is empty, `numRetries` is not an integer ≥ 0 or `kwargs` is not
 *   a plain object (input outside the typed contract).
 */
export function encodeEnvelope(input: EnvelopeInput): string {
  if (typeof input.id !== 'string' || input.id.length === 0) {
    throw new RangeError(`envelope: "id" must be a non-empty string, got ${describeValue(input.id)}`);
  }
  if (!isNonNegativeSafeInteger(input.numRetries)) {
    throw new RangeError(`envelope: "num_retries" must be an integer ≥ 0, got ${describeValue(input.numRetries)}`);
  }
  if (!isPlainObject(input.kwargs)) {
    throw new RangeError(`envelope: "kwargs" must be a plain object, got ${describeValue(input.kwargs)}`);
  }
  const text = JSON.stringify({
    version: ENVELOPE_VERSION,
    reply_requested: input.replyRequested ?? false,
    kwargs: JSON.stringify(input.kwargs),
    num_retries: input.numRetries,
    id: input.id,
  });
  return input.trace === undefined ? text : withEnvelopeTrace(text, input.trace);
}

/**
 * An envelope text (as {@link encodeEnvelope} writes it: one JSON object) with the top-level
 * `traceparent` key, and `tracestate` when non-empty, added at its end: the same bytes as encoding
 * it with `trace`. The text is not parsed (cheap on the dispatch path).
 *
 * @throws RangeError when `text` does not end with `}` or the traceparent is not a string.
 */
export function withEnvelopeTrace(text: string, trace: EnvelopeTrace): string {
  if (!text.endsWith('}')) throw new RangeError('envelope: expected the text of a JSON object');
  if (typeof trace.traceparent !== 'string')
    throw new RangeError(`envelope: "traceparent" must be a string, got ${describeValue(trace.traceparent)}`);
  const state = typeof trace.tracestate === 'string' && trace.tracestate !== '' ? `,"tracestate":${JSON.stringify(trace.tracestate)}` : '';
  return `${text.slice(0, -1)},"traceparent":${JSON.stringify(trace.traceparent)}${state}}`;
}

/**
 * Decodes a queue message body. Accepts version 1 (with a boolean `reply_requested`) and
 * version 0 (no `reply_requested`; it reads as false, as in Python, and is ignored if present).
 * Unknown extra keys (such as the `min_version` newer Python writers add) are ignored; a string
 * `traceparent` or `tracestate` is returned as found (any other value of them is ignored).
 * Never throws; every problem comes back as a one-line error starting with `envelope:`.
 */
export function decodeEnvelope(text: string): DecodeResult<Envelope> {
  if (typeof text !== 'string') {
    return decodeError(`envelope: expected JSON text, got ${describeValue(text)}`);
  }
  const parsed = parseJson(text);
  if (!parsed.ok) return decodeError(`envelope: not valid JSON (${parsed.error})`);
  const body = parsed.value;
  if (!isPlainObject(body)) {
    return decodeError(`envelope: must be a JSON object, got ${describeValue(body)}`);
  }

  const version = own(body, 'version');
  if (version !== 0 && version !== 1) {
    return decodeError(`envelope: "version" must be 0 or 1, got ${describeValue(version)}`);
  }

  const id = own(body, 'id');
  if (typeof id !== 'string' || id.length === 0) {
    return decodeError(`envelope: "id" must be a non-empty string, got ${describeValue(id)}`);
  }

  const kwargsText = own(body, 'kwargs');
  if (typeof kwargsText !== 'string') {
    return decodeError(`envelope: "kwargs" must be a string holding a JSON object, got ${describeValue(kwargsText)}`);
  }
  const kwargsParsed = parseJson(kwargsText);
  if (!kwargsParsed.ok) {
    return decodeError(`envelope: "kwargs" is not valid JSON (${kwargsParsed.error})`);
  }
  const kwargs = kwargsParsed.value;
  if (!isPlainObject(kwargs)) {
    return decodeError(`envelope: "kwargs" must encode a JSON object, got ${describeValue(kwargs)}`);
  }

  const numRetries = own(body, 'num_retries');
  if (!isNonNegativeSafeInteger(numRetries)) {
    return decodeError(`envelope: "num_retries" must be an integer ≥ 0, got ${describeValue(numRetries)}`);
  }

  let replyRequested = false;
  if (version === 1) {
    const rr = own(body, 'reply_requested');
    if (typeof rr !== 'boolean') {
      return decodeError(`envelope: "reply_requested" must be a boolean in a version-1 envelope, got ${describeValue(rr)}`);
    }
    replyRequested = rr;
  }

  const envelope: Envelope = { version, id, kwargs, numRetries, replyRequested };
  const traceparent = own(body, 'traceparent');
  if (typeof traceparent === 'string') envelope.traceparent = traceparent;
  const tracestate = own(body, 'tracestate');
  if (typeof tracestate === 'string') envelope.tracestate = tracestate;
  return decodeOk(envelope);
}
