import { describe, expect, it } from '@jest/globals';
import { encodeRuntime } from '../runtime/codec';
import { createRuntime } from '../runtime/create';
import {
  assembleParts,
  decodeLogRecords,
  decodeSnapshot,
  encodeDeltaRecord,
  encodeSnapshot,
  applyDeltaRecord,
} from '../runtime/snapshot-codec';
import { decodedRuntime, definition } from '../runtime/test-helpers/build';
import { withTaskStates } from '../runtime/assemble';
import { type Completion, decodeCoordinatorMessage, encodeCompletion } from './completion';
import { decodeEnvelope, encodeEnvelope, withEnvelopeTrace } from './envelope';
import { encodeTaskMessage } from './task-message';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const done: Completion = { workflowId: 'wf-1', taskName: 'train', success: true, attemptNo: 2, outputRef: '{"loss":0.1}', error: null };

describe('the trace context keys of an envelope (docs/observability.md#tracing)', () => {
  it('are added at the end, top level, and nothing else changes', () => {
    const plain = encodeTaskMessage({ workflowId: 'wf-1', taskName: 'a', attemptNo: 1, kwargs: { cmd: 'true' } });
    const traced = withEnvelopeTrace(plain, { traceparent: TP });
    expect(traced).toBe(`${plain.slice(0, -1)},"traceparent":"${TP}"}`);
    expect(withEnvelopeTrace(plain, { traceparent: TP, tracestate: 'k=v' })).toBe(
      `${plain.slice(0, -1)},"traceparent":"${TP}","tracestate":"k=v"}`,
    );
    expect(withEnvelopeTrace(plain, { traceparent: TP, tracestate: '' })).toBe(traced);
    expect(encodeEnvelope({ id: 'i', kwargs: {}, numRetries: 0, trace: { traceparent: TP } })).toBe(
      `{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":"i","traceparent":"${TP}"}`,
    );
  });

  it('decode to the same envelope plus the strings as found; the kwargs never hold them', () => {
    const plain = encodeTaskMessage({ workflowId: 'wf-1', taskName: 'a', attemptNo: 1, kwargs: { cmd: 'true' } });
    const a = decodeEnvelope(plain);
    const b = decodeEnvelope(withEnvelopeTrace(plain, { traceparent: 'not-a-traceparent', tracestate: 'x=1' }));
    if (!a.ok || !b.ok) throw new Error('does not decode');
    expect(b.value).toEqual({ ...a.value, traceparent: 'not-a-traceparent', tracestate: 'x=1' });
    expect(Object.keys(b.value.kwargs)).toEqual(Object.keys(a.value.kwargs));
    // Other values are ignored, not poison.
    const odd = decodeEnvelope(`${plain.slice(0, -1)},"traceparent":7,"tracestate":null}`);
    expect(odd.ok && odd.value).toEqual(a.value);
  });

  it('ride on a completion as top-level keys, so it is still a completion (an extra kwarg would be poison)', () => {
    const text = encodeCompletion(done, { traceparent: TP });
    expect(text).toBe(`${encodeCompletion(done).slice(0, -1)},"traceparent":"${TP}"}`);
    expect(decodeCoordinatorMessage(text)).toEqual({
      kind: 'completion',
      completion: expect.objectContaining({ taskName: 'train' }),
      trace: { traceparent: TP },
    });
    expect(decodeCoordinatorMessage(encodeCompletion(done))).not.toHaveProperty('trace');
    expect(decodeCoordinatorMessage(encodeCompletion(done, { traceparent: 'garbage', tracestate: 's=1' }))).toMatchObject({
      kind: 'completion',
      trace: { traceparent: 'garbage', tracestate: 's=1' },
    });
  });

  it('refuse text that is not an object and a traceparent that is not a string', () => {
    expect(() => withEnvelopeTrace('[1]', { traceparent: TP })).toThrow(RangeError);
    expect(() => withEnvelopeTrace('{}', { traceparent: 1 as unknown as string })).toThrow('traceparent');
  });
});

describe("a runtime's traceparent", () => {
  const def = definition([{ name: 'a' }, { name: 'b', depends_on: ['a'] }]);

  it('is stored by both runtime formats and read back; an untraced runtime is written as before', () => {
    const traced = createRuntime(def, { workflowId: 'wf1', now: '2026-01-01T00:00:00.000Z', traceparent: TP });
    const plain = createRuntime(def, { workflowId: 'wf1', now: '2026-01-01T00:00:00.000Z' });
    expect(traced.traceparent).toBe(TP);
    expect(plain.traceparent).toBeNull();
    expect(decodedRuntime(encodeRuntime(traced))).toEqual(traced);
    expect(encodeRuntime(plain)).not.toContain('traceparent');
    expect(decodedRuntime(encodeRuntime(plain)).traceparent).toBeNull();

    const meta = { workflowId: 'wf1', definitionHash: 'a'.repeat(64), generation: 1 };
    const snapshot = encodeSnapshot(traced, meta);
    expect(JSON.parse(snapshot).workflow.traceparent).toBe(TP);
    expect(assembleParts(decodeSnapshot(snapshot, def, meta))).toEqual(traced);
    expect(encodeSnapshot(plain, meta)).not.toContain('traceparent');
    expect(assembleParts(decodeSnapshot(encodeSnapshot(plain, meta), def, meta)).traceparent).toBeNull();
  });

  it('is carried as a string, malformed or not, and replayed from a log record', () => {
    const plain = createRuntime(def, { workflowId: 'wf1', now: '2026-01-01T00:00:00.000Z' });
    const meta = { workflowId: 'wf1', definitionHash: 'a'.repeat(64), generation: 1 };
    const later = withTaskStates(plain, [], { traceparent: 'zz' });
    const parts = decodeSnapshot(encodeSnapshot(plain, meta), def, meta);
    for (const record of decodeLogRecords(encodeDeltaRecord(1, plain, later, []), def))
      if (record.kind === 'delta') applyDeltaRecord(parts, record);
    expect(assembleParts(parts).traceparent).toBe('zz');
  });
});
