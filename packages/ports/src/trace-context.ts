/**
 * The W3C trace context jobq carries in messages and in the runtime (docs/observability.md#tracing),
 * as plain data: the worker and the coordinator turn it into OpenTelemetry contexts.
 */

/** The parts of a `traceparent` header. */
export interface TraceparentParts {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero. */
  spanId: string;
  /** The trace flags byte (bit 0: sampled). */
  traceFlags: number;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** A later version may append fields after a `-`; its first four are read as version 00's. */
const LATER_VERSION = /^([0-9a-e][0-9a-f]|f[0-9a-e])-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The longest `tracestate` carried on (the W3C limit is 32 members of at most 256 characters; 512 characters is what propagators keep). */
export const MAX_TRACESTATE_LENGTH = 512;

/**
 * Reads a W3C `traceparent` (`00-{trace id}-{span id}-{flags}`). Anything else (not a string,
 * upper-case hex, zero ids, version `ff`, extra text on version 00) gives null: a malformed trace
 * context is ignored, never an error.
 */
export function parseTraceparent(text: unknown): TraceparentParts | null {
  if (typeof text !== 'string' || text.length < 55 || text.length > 512) return null;
  const match = VERSION_00.exec(text) ?? (text.startsWith('00') ? null : LATER_VERSION.exec(text));
  if (match === null) return null;
  const [traceId, spanId, flags] = match[0].startsWith('00') ? [match[1]!, match[2]!, match[3]!] : [match[2]!, match[3]!, match[4]!];
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/** A `tracestate` worth carrying: a string of printable ASCII no longer than {@link MAX_TRACESTATE_LENGTH}; else undefined. */
export function cleanTracestate(text: unknown): string | undefined {
  if (typeof text !== 'string' || text === '' || text.length > MAX_TRACESTATE_LENGTH || !/^[\x20-\x7e]*$/.test(text)) return undefined;
  return text;
}

/** The version-00 `traceparent` of these parts. */
export function formatTraceparent(parts: TraceparentParts): string {
  return `00-${parts.traceId}-${parts.spanId}-${(parts.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * The `messaging.system` of a queue spec's backend: `servicebus` for `sb://` queues, else
 * `azure_storage_queue` (OpenTelemetry registers no value for Storage Queues).
 */
export function messagingSystemOf(queueSpec: string): 'servicebus' | 'azure_storage_queue' {
  return queueSpec.startsWith('sb://') ? 'servicebus' : 'azure_storage_queue';
}
