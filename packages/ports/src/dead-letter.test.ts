import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { decodeEnvelope, encodeEnvelope, messageByteLength } from '@jobq/dag-core/wire';
import { deadLetterBody } from './dead-letter';

const LIMIT = 64 * 1024;

describe('deadLetterBody', () => {
  it('adds the reason as one more top-level key of a JSON object body, keeping its text', () => {
    expect(deadLetterBody('{"poison":true}', 'exhausted its retries', LIMIT)).toBe(
      '{"poison":true,"dead_letter_reason":"exhausted its retries"}',
    );
    expect(deadLetterBody(' { } \n', 'why', LIMIT)).toBe(' { "dead_letter_reason":"why"}');
    expect(deadLetterBody('{"n":1.0, "big": 12345678901234567890}', 'r', LIMIT)).toBe(
      '{"n":1.0, "big": 12345678901234567890,"dead_letter_reason":"r"}',
    );
    // A copy dead-lettered again: the new reason wins.
    expect(JSON.parse(deadLetterBody('{"a":1,"dead_letter_reason":"old"}', 'new', LIMIT))).toEqual({ a: 1, dead_letter_reason: 'new' });
  });

  it('keeps an envelope decodable, with the same content', () => {
    const envelope = encodeEnvelope({ id: 'wf/t/1', kwargs: { cmd: 'echo hi', __workflow_id: 'wf' }, numRetries: 0 });
    const copy = deadLetterBody(envelope, 'delivered 21 times (more than JOBQ_MAX_DELIVERIES=20)', LIMIT);
    expect(JSON.parse(copy)).toMatchObject({ dead_letter_reason: 'delivered 21 times (more than JOBQ_MAX_DELIVERIES=20)' });
    expect(decodeEnvelope(copy)).toEqual(decodeEnvelope(envelope));
  });

  it('wraps any other body, with the original text under "body"', () => {
    for (const body of ['plain text', '[1,2]', '42', '"s"', 'null', '{"broken"', '']) {
      expect(JSON.parse(deadLetterBody(body, 'bad', LIMIT))).toEqual({ dead_letter_reason: 'bad', body });
    }
  });

  it('puts the reason on one line', () => {
    expect(JSON.parse(deadLetterBody('{}', 'first line\nsecond\r\n\tthird\u2028', LIMIT))).toEqual({
      dead_letter_reason: 'first line second third',
    });
  });

  it('cuts the reason so the copy fits the limit, and keeps the body unchanged when even an empty reason does not fit', () => {
    const body = JSON.stringify({ output: 'x'.repeat(LIMIT - 100) });
    const copy = deadLetterBody(body, `because ${'é'.repeat(500)}`, LIMIT);
    expect(messageByteLength(copy)).toBeLessThanOrEqual(LIMIT);
    const reason = (JSON.parse(copy) as { dead_letter_reason: string }).dead_letter_reason;
    expect(reason.startsWith('because é')).toBe(true);
    expect(reason.endsWith('…')).toBe(true);
    const full = JSON.stringify({ output: 'x'.repeat(LIMIT - 20) });
    expect(deadLetterBody(full, 'no room', LIMIT)).toBe(full);
  });

  it('always fits when it can, keeps the body, and says a start of the reason (property)', () => {
    const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('a', '"', '\\', '\n', '\uffff', '😀', 'é') }));
    const body = fc.oneof(
      text,
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }).map((o) => JSON.stringify(o)),
    );
    fc.assert(
      fc.property(body, text, fc.integer({ min: 0, max: 400 }), (original, reason, room) => {
        const limit = messageByteLength(original) + room;
        const copy = deadLetterBody(original, reason, limit);
        if (copy === original) return;
        expect(messageByteLength(copy)).toBeLessThanOrEqual(limit);
        const parsed = JSON.parse(copy) as Record<string, unknown>;
        const said = String(parsed.dead_letter_reason);
        expect(said).not.toMatch(/[\n\r]/);
        // eslint-disable-next-line no-control-regex
        const line = reason.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
        expect(said === line || line.startsWith(said.slice(0, -1).trimEnd())).toBe(true);
        const objectBody = (() => {
          try {
            const v: unknown = JSON.parse(original);
            return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
          } catch {
            return null;
          }
        })();
        if (objectBody === null) expect(parsed).toEqual({ dead_letter_reason: said, body: original });
        else expect(parsed).toEqual({ ...objectBody, dead_letter_reason: said });
      }),
      { numRuns: 500 },
    );
  });
});
