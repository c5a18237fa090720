/**
 * Narrow, typed access to the parts of `rhea` the broker uses: message encode/decode, outcomes,
 * typed values, and reading fields of the loosely typed objects rhea hands out.
 */
import rhea from 'rhea';
import type * as Rhea from 'rhea';

export type AmqpMessage = Rhea.Message;
export type Typed = Rhea.Typed;

export const types = rhea.types;
export const codec = rhea.message;

/** The message format of a batch transfer: an outer message whose data sections are encoded messages. */
export const BATCH_FORMAT = 0x80013700;

export interface AmqpError {
  condition: string;
  description: string;
  info?: Record<string, unknown>;
}

interface OutcomeFactory {
  accepted(): { described(): unknown };
  rejected(fields: { error?: AmqpError }): { described(): unknown };
  modified(fields: { delivery_failed: boolean; undeliverable_here: boolean }): { described(): unknown };
}
const outcomes = rhea.message as unknown as OutcomeFactory;

export function acceptedState(): unknown {
  return outcomes.accepted().described();
}

/** The state the broker settles a successful disposition with, echoing the client's outcome. */
export function settledState(outcome: 'complete' | 'abandon' | 'defer' | 'dead-letter'): unknown {
  switch (outcome) {
    case 'complete':
      return outcomes.accepted().described();
    case 'abandon':
      return outcomes.modified({ delivery_failed: true, undeliverable_here: false }).described();
    case 'defer':
      return outcomes.modified({ delivery_failed: false, undeliverable_here: true }).described();
    case 'dead-letter':
      return outcomes.rejected({}).described();
  }
}

export function rejectedState(error: AmqpError): unknown {
  return outcomes.rejected({ error }).described();
}

/** A property of an object rhea produced, as `unknown`. */
export function field(o: unknown, key: string): unknown {
  if (o === null || typeof o !== 'object') return undefined;
  return (o as Record<string, unknown>)[key];
}

export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A decoded AMQP map (plain object, or a rhea map value not yet unwrapped) as a plain object. */
export function plainMap(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== 'object') return {};
  if (Array.isArray(field(v, 'value')) && typeof field(v, 'typecode') === 'number') {
    return types.unwrap_map_simple(v);
  }
  return v as Record<string, unknown>;
}

/** A sequence number or other long as rhea decodes it (number, 8-byte buffer, Long-like). */
export function toLong(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (Buffer.isBuffer(v) && v.length === 8) return Number(v.readBigInt64BE(0));
  if (v !== null && typeof v === 'object') {
    const inner = field(v, 'value');
    if (inner !== undefined && inner !== v) return toLong(inner);
  }
  return undefined;
}

export function toBuffer(v: unknown): Buffer | undefined {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'string') {
    const hex = v.replace(/-/g, '');
    if (/^[0-9a-fA-F]{32}$/.test(hex)) return Buffer.from(hex, 'hex');
  }
  const inner = field(v, 'value');
  if (inner !== undefined && inner !== v) return toBuffer(inner);
  return undefined;
}

export function encodeMessage(message: AmqpMessage): Buffer {
  return codec.encode(message);
}

export function decodeMessage(bytes: Buffer): AmqpMessage {
  return codec.decode(bytes) as unknown as AmqpMessage;
}

/** The encoded messages inside a batch transfer. */
export function unpackBatch(bytes: Buffer): Buffer[] {
  const outer = decodeMessage(bytes);
  const body: unknown = outer.body;
  const typecode = field(body, 'typecode');
  const content = field(body, 'content');
  if (typecode !== 0x75) throw new Error('a batch transfer must carry data sections');
  const parts = field(body, 'multiple') === true && Array.isArray(content) ? (content as unknown[]) : [content];
  return parts.map((part) => {
    const buf = toBuffer(part);
    if (buf === undefined) throw new Error('a batch data section is not binary');
    return buf;
  });
}

/** A message id as a dedup key. */
export function messageIdKey(id: unknown): string | undefined {
  if (id === undefined || id === null) return undefined;
  if (typeof id === 'string') return `s:${id}`;
  if (typeof id === 'number' || typeof id === 'bigint') return `n:${String(id)}`;
  if (Buffer.isBuffer(id)) return `b:${id.toString('hex')}`;
  const inner = field(id, 'value');
  if (inner !== undefined && inner !== id) return messageIdKey(inner);
  return undefined;
}
