import { describe, expect, it } from '@jest/globals';
import { cleanTracestate, formatTraceparent, messagingSystemOf, parseTraceparent } from './trace-context';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';

describe('parseTraceparent', () => {
  it('reads a version-00 traceparent and formats it back', () => {
    const text = `00-${TRACE}-${SPAN}-01`;
    expect(parseTraceparent(text)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    expect(formatTraceparent(parseTraceparent(text)!)).toBe(text);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.traceFlags).toBe(0);
  });

  it('reads the first four fields of a later version', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-what-comes-next`)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
  });

  it.each([
    ['not a string', 42],
    ['empty', ''],
    ['garbage', 'not-a-traceparent'],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['a zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['extra text on version 00', `00-${TRACE}-${SPAN}-01-x`],
    ['a short span id', `00-${TRACE}-${SPAN.slice(1)}-01`],
  ])('gives null for %s', (_what, text) => {
    expect(parseTraceparent(text)).toBeNull();
  });
});

describe('cleanTracestate', () => {
  it('keeps printable ASCII up to 512 characters, drops the rest', () => {
    expect(cleanTracestate('a=1,b=2')).toBe('a=1,b=2');
    expect(cleanTracestate('')).toBeUndefined();
    expect(cleanTracestate(7)).toBeUndefined();
    expect(cleanTracestate('a=\n')).toBeUndefined();
    expect(cleanTracestate('a='.padEnd(513, 'x'))).toBeUndefined();
  });
});

describe('messagingSystemOf', () => {
  it('names Service Bus for sb:// queues and Storage Queues otherwise', () => {
    expect(messagingSystemOf('sb://ns/q')).toBe('servicebus');
    expect(messagingSystemOf('cpu')).toBe('azure_storage_queue');
    expect(messagingSystemOf('account/cpu')).toBe('azure_storage_queue');
  });
});
