import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { decodeEnvelope, encodeEnvelope, ENVELOPE_VERSION } from './envelope';
import { jsonNormalize, kwargsArb } from './test-helpers/arbitraries';

function expectError(text: string, fragment: string): void {
  const r = decodeEnvelope(text);
  expect(r.ok).toBe(false);
  if (!r.ok) {
    expect(r.error).toContain(fragment);
    expect(r.error).not.toMatch(/[\n\r]/);
  }
}

describe('encodeEnvelope', () => {
  it('writes the exact Python-compatible text, keys in order', () => {
    expect(encodeEnvelope({ id: 'abc', kwargs: { x: 1, y: 'two' }, numRetries: 3 })).toBe(
      '{"version":1,"reply_requested":false,"kwargs":"{\\"x\\":1,\\"y\\":\\"two\\"}","num_retries":3,"id":"abc"}',
    );
    expect(ENVELOPE_VERSION).toBe(1);
  });

  it('writes reply_requested when asked', () => {
    const text = encodeEnvelope({ id: 'i', kwargs: {}, numRetries: 0, replyRequested: true });
    expect(text).toBe('{"version":1,"reply_requested":true,"kwargs":"{}","num_retries":0,"id":"i"}');
  });

  it('rejects input outside the typed contract', () => {
    expect(() => encodeEnvelope({ id: '', kwargs: {}, numRetries: 0 })).toThrow(RangeError);
    expect(() => encodeEnvelope({ id: 'x', kwargs: {}, numRetries: -1 })).toThrow('num_retries');
    expect(() => encodeEnvelope({ id: 'x', kwargs: {}, numRetries: 0.5 })).toThrow('num_retries');
    expect(() => encodeEnvelope({ id: 'x', kwargs: [] as unknown as Record<string, unknown>, numRetries: 0 })).toThrow('kwargs');
  });
});

describe('decodeEnvelope', () => {
  it('round-trips (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), kwargsArb, fc.nat(), fc.boolean(), (id, kwargs, numRetries, replyRequested) => {
        const r = decodeEnvelope(encodeEnvelope({ id, kwargs, numRetries, replyRequested }));
        expect(r).toEqual({ ok: true, value: { version: 1, id, kwargs: jsonNormalize(kwargs), numRetries, replyRequested } });
      }),
    );
  });

  it('keeps a "__proto__" kwarg as an ordinary own key', () => {
    const r = decodeEnvelope('{"version":1,"reply_requested":false,"kwargs":"{\\"__proto__\\":{\\"a\\":1}}","num_retries":0,"id":"p"}');
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(Object.getPrototypeOf(r.value.kwargs)).toBe(Object.prototype);
      expect(Object.keys(r.value.kwargs)).toEqual(['__proto__']);
    }
  });

  it('accepts a version-0 envelope written by hand (reply_requested reads false)', () => {
    const v0 = '{"version": 0, "kwargs": "{\\"cmd\\": \\"echo hi\\"}", "num_retries": 2, "id": "legacy-1"}';
    expect(decodeEnvelope(v0)).toEqual({
      ok: true,
      value: { version: 0, id: 'legacy-1', kwargs: { cmd: 'echo hi' }, numRetries: 2, replyRequested: false },
    });
    const v0WithReply = '{"version":0,"reply_requested":true,"kwargs":"{}","num_retries":0,"id":"x"}';
    const r = decodeEnvelope(v0WithReply);
    expect(r.ok && r.value.replyRequested).toBe(false);
  });

  it('accepts what Python json.dumps writes, with spaces, escapes and min_version', () => {
    const py =
      '{"version": 1, "reply_requested": true, "kwargs": "{\\"name\\": \\"caf\\\\u00e9\\"}", "num_retries": 0, "min_version": null, "id": "5d41402abc4b2a76b9719d911017c592"}';
    expect(decodeEnvelope(py)).toEqual({
      ok: true,
      value: { version: 1, id: '5d41402abc4b2a76b9719d911017c592', kwargs: { name: 'café' }, numRetries: 0, replyRequested: true },
    });
  });

  it('reports each malformed field with a readable one-line error', () => {
    expectError('not json', 'envelope: not valid JSON');
    expectError('{"a":\n', 'envelope: not valid JSON');
    expectError('[1,2]', 'envelope: must be a JSON object, got an array');
    expectError('null', 'envelope: must be a JSON object, got null');
    expectError('"str"', 'envelope: must be a JSON object, got the string "str"');
    expectError(
      '{"version":2,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":"x"}',
      '"version" must be 0 or 1, got the number 2',
    );
    expectError('{"version":"1","reply_requested":false,"kwargs":"{}","num_retries":0,"id":"x"}', '"version" must be 0 or 1');
    expectError('{"version":true,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":"x"}', '"version" must be 0 or 1, got true');
    expectError('{"reply_requested":false,"kwargs":"{}","num_retries":0,"id":"x"}', '"version" must be 0 or 1, got nothing');
    expectError('{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":0}', '"id" must be a non-empty string, got nothing');
    expectError('{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":""}', '"id" must be a non-empty string');
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":7}',
      '"id" must be a non-empty string, got the number 7',
    );
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":{},"num_retries":0,"id":"x"}',
      '"kwargs" must be a string holding a JSON object, got an object',
    );
    expectError('{"version":1,"reply_requested":false,"num_retries":0,"id":"x"}', '"kwargs" must be a string');
    expectError('{"version":1,"reply_requested":false,"kwargs":"{oops","num_retries":0,"id":"x"}', '"kwargs" is not valid JSON');
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":"[1]","num_retries":0,"id":"x"}',
      '"kwargs" must encode a JSON object, got an array',
    );
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":"null","num_retries":0,"id":"x"}',
      '"kwargs" must encode a JSON object, got null',
    );
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":-1,"id":"x"}',
      '"num_retries" must be an integer ≥ 0, got the number -1',
    );
    expectError('{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":1.5,"id":"x"}', '"num_retries" must be an integer ≥ 0');
    expectError(
      '{"version":1,"reply_requested":false,"kwargs":"{}","num_retries":"0","id":"x"}',
      '"num_retries" must be an integer ≥ 0, got the string "0"',
    );
    expectError(
      '{"version":1,"kwargs":"{}","num_retries":0,"id":"x"}',
      '"reply_requested" must be a boolean in a version-1 envelope, got nothing',
    );
    expectError('{"version":1,"reply_requested":"no","kwargs":"{}","num_retries":0,"id":"x"}', '"reply_requested" must be a boolean');
  });

  it('does not throw on a non-string argument', () => {
    const r = decodeEnvelope(42 as unknown as string);
    expect(r).toEqual({ ok: false, error: 'envelope: expected JSON text, got the number 42' });
  });

  it('never throws on arbitrary strings and always yields one-line errors (property)', () => {
    const envelopeish = fc
      .record(
        {
          version: fc.oneof(fc.constantFrom(0, 1, 2, '1'), fc.jsonValue()),
          reply_requested: fc.oneof(fc.boolean(), fc.jsonValue()),
          kwargs: fc.oneof(
            fc.string(),
            fc.jsonValue().map((v) => JSON.stringify(v)),
          ),
          num_retries: fc.oneof(fc.nat(), fc.jsonValue()),
          id: fc.oneof(fc.string(), fc.jsonValue()),
        },
        { requiredKeys: [] },
      )
      .map((o) => JSON.stringify(o));
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), envelopeish), (text) => {
        const r = decodeEnvelope(text);
        if (!r.ok) expect(r.error).not.toMatch(/[\n\r]/);
      }),
      { numRuns: 500 },
    );
  });
});
