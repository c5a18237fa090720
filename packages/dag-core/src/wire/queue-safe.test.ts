import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { queueSafeByteLength, queueSafeText } from './queue-safe';

/** Any character XML 1.0 forbids, as a code unit (surrogates here are lone by construction below). */
/* eslint-disable no-control-regex -- the point of this pattern is control characters */
const FORBIDDEN_AFTER =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/* eslint-enable no-control-regex */

/** Characters that matter here: every forbidden kind, their allowed neighbours, and ordinary text. */
const trickyUnit = fc.constantFrom(
  '\u0000',
  '\u0001',
  '\u0008',
  '\u0009',
  '\n',
  '\u000b',
  '\u000c',
  '\r',
  '\u000e',
  '\u001f',
  ' ',
  '\ufffd',
  '\ufffe',
  '\uffff',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '😀',
  'é',
  'a',
  '"',
  '\\',
  'u',
);
const anyText = fc.oneof(fc.string({ unit: trickyUnit }), fc.string({ unit: 'binary' }), fc.string());

/** JSON values whose strings (keys too) are full of forbidden characters. */
const trickyString = fc.oneof(fc.string({ unit: trickyUnit }), fc.string({ unit: 'binary' }));
const jsonValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    trickyString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(trickyString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A JSON text as a producer might write it: raw U+FFFE/U+FFFF and lone surrogates stay raw; JSON.stringify escapes controls (and, since ES2019, lone surrogates). */
function rawJson(value: unknown): string {
  return JSON.stringify(value).replace(/\\\\|\\u(d[89a-f][0-9a-f]{2})/g, (m: string, hex: string | undefined) =>
    hex === undefined ? m : String.fromCharCode(parseInt(hex, 16)),
  );
}

const TE = (globalThis as unknown as { TextEncoder: new () => { encode(s: string): Uint8Array } }).TextEncoder;
const encoder = new TE();

describe('queueSafeText', () => {
  it('escapes each forbidden character as \\uXXXX and leaves the rest alone', () => {
    expect(queueSafeText('{"a":"x\uffffy\ufffe"}')).toBe('{"a":"x\\uffffy\\ufffe"}');
    expect(queueSafeText('\u0000\u0008\u000b\u000c\u000e\u001f')).toBe('\\u0000\\u0008\\u000b\\u000c\\u000e\\u001f');
    expect(queueSafeText('\t\n\r ok é € \ufffd 😀')).toBe('\t\n\r ok é € \ufffd 😀');
    expect(queueSafeText('\ud800x\udc00')).toBe('\\ud800x\\udc00');
    expect(queueSafeText('\udc00\ud83d\ude00\ud800')).toBe('\\udc00😀\\ud800');
    expect(queueSafeText('\ud83d\ud83d\ude00')).toBe('\\ud83d😀');
  });

  it('returns the same string when nothing needs escaping (fast path)', () => {
    const text = '{"version":1,"kwargs":"{\\"cmd\\":\\"echo ✓\\"}"}';
    expect(queueSafeText(text)).toBe(text);
    expect(queueSafeText('')).toBe('');
  });

  it('leaves no character XML forbids (property)', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(FORBIDDEN_AFTER.test(queueSafeText(text))).toBe(false);
      }),
      { numRuns: 1_000 },
    );
  });

  it('keeps the value of every JSON text, nested JSON-in-a-string included (property)', () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const text = rawJson(value);
        expect(JSON.parse(queueSafeText(text))).toEqual(JSON.parse(text));
        // An envelope carries JSON inside a JSON string: both levels decode to the same value.
        const envelope = rawJson({ kwargs: text });
        const inner = (JSON.parse(queueSafeText(envelope)) as { kwargs: string }).kwargs;
        expect(JSON.parse(inner)).toEqual(JSON.parse(text));
      }),
      { numRuns: 1_000 },
    );
  });

  it('is idempotent (property)', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const once = queueSafeText(text);
        expect(queueSafeText(once)).toBe(once);
      }),
      { numRuns: 500 },
    );
  });
});

describe('queueSafeByteLength', () => {
  it('is the UTF-8 size of the escaped text (property)', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(queueSafeByteLength(text)).toBe(encoder.encode(queueSafeText(text)).length);
      }),
      { numRuns: 1_000 },
    );
  });
});
