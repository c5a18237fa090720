/**
 * Lexical analysis of condition expressions.
 *
 * The tokenizer recognises more than the condition language allows (arithmetic, bitwise
 * operators, `{`, `:=`…) so that the parser can name the construct and point at it with a
 * `condition-disallowed` issue instead of a vague syntax error.
 */

/** Words with a grammatical role; they cannot be used as bare names. */
export const KEYWORDS = [
  'and',
  'or',
  'not',
  'in',
  'is',
  'if',
  'else',
  'lambda',
  'for',
  'True',
  'False',
  'None',
  'true',
  'false',
  'null',
] as const;

/** One of {@link KEYWORDS}. */
export type Keyword = (typeof KEYWORDS)[number];

/**
 * Every operator and punctuation token, longest first: the scanner takes the first entry that
 * matches, so `**` must be tried before `*` and `//` before `/`.
 */
export const OPERATORS = [
  '**',
  '//',
  '<<',
  '>>',
  '<=',
  '>=',
  '==',
  '!=',
  ':=',
  // C-style logic operators: not part of the language, tokens only so that "did you mean" can name them.
  '&&',
  '||',
  '+',
  '-',
  '*',
  '/',
  '%',
  '&',
  '|',
  '^',
  '~',
  '!',
  '<',
  '>',
  '=',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '.',
] as const;

/** One of {@link OPERATORS}. */
export type Operator = (typeof OPERATORS)[number];

interface TokenBase {
  /** The token exactly as written, for messages. */
  text: string;
  /** 1-based position of the first character (UTF-16 code units) in the expression. */
  column: number;
}

/** A lexical token. `eof` closes every token list so the parser never reads past the end. */
export type Token =
  | (TokenBase & {
      kind: 'number';
      value: number;
      /** Written without `.` or exponent: only such literals are accepted as indexes and K. */
      integer: boolean;
    })
  | (TokenBase & { kind: 'string'; value: string })
  | (TokenBase & { kind: 'name'; value: string })
  | (TokenBase & { kind: 'keyword'; value: Keyword })
  | (TokenBase & { kind: 'op'; value: Operator })
  | (TokenBase & { kind: 'eof'; value: '' });

/** A tokenizer failure, positioned at the offending character. */
export interface TokenizeError {
  message: string;
  column: number;
}

/** The tokens of an expression (ending with `eof`), or the first lexical error. */
export type TokenizeResult = { ok: true; tokens: Token[] } | { ok: false; error: TokenizeError };

const KEYWORD_SET: ReadonlySet<string> = new Set(KEYWORDS);
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
// Python's decimal literals; hex/octal/underscores are deliberately not part of the language.
const NUMBER = /(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/y;
const WHITESPACE = /[ \t\r\n\f\v]+/y;

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '\n': '', // backslash-newline continues the string, as in Python
};

const HEX_ESCAPE_LENGTH: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** Quotes a character or token for an error message; JSON escaping keeps control characters visible. */
export function describeText(text: string): string {
  return JSON.stringify(text);
}

/**
 * Splits an expression into tokens. Never throws: the first character that cannot start a
 * token, an unterminated string or a malformed escape is reported with its column.
 */
export function tokenize(source: string): TokenizeResult {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < source.length) {
    WHITESPACE.lastIndex = pos;
    if (WHITESPACE.test(source)) {
      pos = WHITESPACE.lastIndex;
      continue;
    }
    const column = pos + 1;
    const ch = source.charAt(pos);

    if (ch === '"' || ch === "'") {
      const scanned = scanString(source, pos);
      if (!scanned.ok) return scanned;
      tokens.push({ kind: 'string', value: scanned.value, text: source.slice(pos, scanned.end), column });
      pos = scanned.end;
      continue;
    }

    NUMBER.lastIndex = pos;
    const number = NUMBER.exec(source);
    if (number !== null) {
      const text = number[0];
      const value = Number(text);
      // Infinity does not survive JSON serialisation of the compiled condition.
      if (!Number.isFinite(value)) {
        return { ok: false, error: { message: `number literal ${text} is out of range`, column } };
      }
      const integer = /^[0-9]+$/.test(text);
      if (integer && /^0+[1-9]/.test(text)) {
        return {
          ok: false,
          error: { message: `leading zeros are not allowed in integer literal ${text}`, column },
        };
      }
      tokens.push({ kind: 'number', value, integer, text, column });
      pos += text.length;
      continue;
    }

    IDENTIFIER.lastIndex = pos;
    const identifier = IDENTIFIER.exec(source);
    if (identifier !== null) {
      const text = identifier[0];
      if (KEYWORD_SET.has(text)) {
        tokens.push({ kind: 'keyword', value: text as Keyword, text, column });
      } else {
        tokens.push({ kind: 'name', value: text, text, column });
      }
      pos += text.length;
      continue;
    }

    const operator = OPERATORS.find((op) => source.startsWith(op, pos));
    if (operator !== undefined) {
      tokens.push({ kind: 'op', value: operator, text: operator, column });
      pos += operator.length;
      continue;
    }

    const codePoint = source.codePointAt(pos) ?? 0;
    return {
      ok: false,
      error: { message: `unexpected character ${describeText(String.fromCodePoint(codePoint))}`, column },
    };
  }
  tokens.push({ kind: 'eof', value: '', text: '', column: source.length + 1 });
  return { ok: true, tokens };
}

type ScanResult = { ok: true; value: string; end: number } | { ok: false; error: TokenizeError };

/** Reads a quoted string starting at `start` (the quote) with Python's escape rules. */
function scanString(source: string, start: number): ScanResult {
  const quote = source.charAt(start);
  let value = '';
  let pos = start + 1;
  while (pos < source.length) {
    const ch = source.charAt(pos);
    if (ch === quote) return { ok: true, value, end: pos + 1 };
    if (ch === '\n' || ch === '\r') break;
    if (ch !== '\\') {
      value += ch;
      pos += 1;
      continue;
    }
    const escape = source.charAt(pos + 1);
    if (escape === '') break;
    const simple = SIMPLE_ESCAPES[escape];
    if (simple !== undefined) {
      value += simple;
      pos += 2;
      continue;
    }
    const hexLength = HEX_ESCAPE_LENGTH[escape];
    if (hexLength !== undefined) {
      const digits = source.slice(pos + 2, pos + 2 + hexLength);
      const codePoint = /^[0-9a-fA-F]+$/.test(digits) && digits.length === hexLength ? parseInt(digits, 16) : NaN;
      if (!(codePoint <= 0x10ffff)) {
        return {
          ok: false,
          error: { message: `invalid \\${escape} escape: expected ${hexLength} hex digits`, column: pos + 1 },
        };
      }
      value += String.fromCodePoint(codePoint);
      pos += 2 + hexLength;
      continue;
    }
    const octal = /^[0-7]{1,3}/.exec(source.slice(pos + 1, pos + 4));
    if (octal !== null) {
      value += String.fromCodePoint(parseInt(octal[0], 8));
      pos += 1 + octal[0].length;
      continue;
    }
    // Python keeps unknown escapes such as `\d` verbatim; doing the same keeps regex-like text intact.
    value += '\\' + escape;
    pos += 2;
  }
  return { ok: false, error: { message: 'unterminated string literal', column: start + 1 } };
}
