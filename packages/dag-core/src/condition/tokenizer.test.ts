import { describe, expect, it } from '@jest/globals';
import { tokenize, type Token } from './tokenizer';

function tokens(source: string): Token[] {
  const result = tokenize(source);
  if (!result.ok) throw new Error(`unexpected tokenizer error: ${result.error.message}`);
  return result.tokens;
}

function kindsAndValues(source: string): [string, unknown][] {
  return tokens(source).map((token) => [token.kind, token.value]);
}

function error(source: string): { message: string; column: number } {
  const result = tokenize(source);
  if (result.ok) throw new Error('expected a tokenizer error');
  return result.error;
}

describe('tokenize', () => {
  it('splits names, keywords, operators and literals, ending with eof', () => {
    expect(kindsAndValues('inputs.a >= 1 and not x')).toEqual([
      ['name', 'inputs'],
      ['op', '.'],
      ['name', 'a'],
      ['op', '>='],
      ['number', 1],
      ['keyword', 'and'],
      ['keyword', 'not'],
      ['name', 'x'],
      ['eof', ''],
    ]);
  });

  it('records 1-based columns', () => {
    expect(tokens('  a ==  "b"').map((token) => token.column)).toEqual([3, 5, 9, 12]);
  });

  it('recognises every keyword, including the lowercase literal aliases', () => {
    const words = 'and or not in is if else lambda for True False None true false null';
    expect(tokens(words).filter((token) => token.kind === 'keyword')).toHaveLength(15);
    expect(tokens('inputs all len').every((token) => token.kind !== 'keyword')).toBe(true);
  });

  it('prefers the longest operator', () => {
    expect(kindsAndValues('** // << >> <= >= == != := * / < > =').map(([, value]) => value)).toEqual([
      '**',
      '//',
      '<<',
      '>>',
      '<=',
      '>=',
      '==',
      '!=',
      ':=',
      '*',
      '/',
      '<',
      '>',
      '=',
      '',
    ]);
  });

  it('reads integers and floats, flagging integer spelling', () => {
    const numbers = tokens('12 1.5 1e-3 .5 2. 1E3 0 00').filter((token) => token.kind === 'number');
    expect(numbers.map((token) => token.value)).toEqual([12, 1.5, 0.001, 0.5, 2, 1000, 0, 0]);
    expect(numbers.map((token) => (token.kind === 'number' ? token.integer : undefined))).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
    ]);
  });

  it('rejects leading zeros and literals that overflow', () => {
    expect(error('x == 007')).toEqual({ message: expect.stringContaining('leading zeros'), column: 6 });
    expect(error('x == 1e999')).toEqual({ message: expect.stringContaining('out of range'), column: 6 });
  });

  it('decodes single- and double-quoted strings with backslash escapes', () => {
    const values = (source: string): unknown[] =>
      tokens(source)
        .filter((token) => token.kind === 'string')
        .map((token) => token.value);
    expect(values(`'a"b' "a'b" "q\\"q" 'q\\'q'`)).toEqual(['a"b', "a'b", 'q"q', "q'q"]);
    expect(values('"\\n\\t\\r\\\\\\0\\x41\\u00e9\\U0001F600\\101"')).toEqual(['\n\t\r\\\0Aé😀A']);
    // Unknown escapes are kept verbatim, as in Python.
    expect(values('"\\d+"')).toEqual(['\\d+']);
  });

  it('does not treat "inputs.*" inside a string as anything but text', () => {
    expect(kindsAndValues('"inputs.*"')).toEqual([
      ['string', 'inputs.*'],
      ['eof', ''],
    ]);
  });

  it('reports unterminated strings and bad escapes at their column', () => {
    expect(error('x == "abc')).toEqual({ message: 'unterminated string literal', column: 6 });
    expect(error("x == 'a\nb'")).toEqual({ message: 'unterminated string literal', column: 6 });
    expect(error('"\\x4"').column).toBe(2);
    expect(error('"\\U00110000"').message).toContain('\\U');
  });

  it('reports unknown characters with their column', () => {
    expect(error('a $ b')).toEqual({ message: 'unexpected character "$"', column: 3 });
    expect(error('a @ b').column).toBe(3);
    expect(error('a; b').column).toBe(2);
    expect(error('a ` b').column).toBe(3);
    expect(error('é').column).toBe(1);
  });
});
