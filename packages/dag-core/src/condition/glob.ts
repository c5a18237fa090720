/**
 * Glob matching with the semantics of Python's `fnmatch.fnmatchcase`, which is what users
 * of the Python-like condition language expect from `inputs["train-*"]`.
 *
 * Implemented as a direct matcher rather than by translating to a RegExp: there is no
 * escaping to get wrong and no catastrophic backtracking on patterns like `*a*a*a*b`.
 */

type GlobToken =
  | { kind: 'star' }
  | { kind: 'any' }
  | { kind: 'char'; codePoint: number }
  | { kind: 'set'; negated: boolean; ranges: { from: number; to: number }[] };

/**
 * Whether `name` matches `pattern` as a whole, case-sensitively: `*` matches any sequence
 * (`/` included), `?` one character, `[abc]`/`[a-z]` one character of a set, `[!...]` one
 * character outside it. A `[` without a closing `]` is a literal `[`; a `]` right after
 * `[` or `[!` belongs to the set. Characters are Unicode code points, as in Python.
 */
export function fnmatch(name: string, pattern: string): boolean {
  return matchTokens(
    parseGlob(pattern),
    Array.from(name, (ch) => ch.codePointAt(0) ?? 0),
  );
}

/** Compares strings by UTF-16 code units, independently of locale. */
export function compareCodeUnits(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/**
 * The distinct `names` matching `pattern`, sorted by code units so that aggregates visit
 * them in a deterministic order.
 */
export function matchingNames(pattern: string, names: readonly string[]): string[] {
  const tokens = parseGlob(pattern);
  const matches = new Set<string>();
  for (const name of names) {
    if (
      matchTokens(
        tokens,
        Array.from(name, (ch) => ch.codePointAt(0) ?? 0),
      )
    )
      matches.add(name);
  }
  return [...matches].sort(compareCodeUnits);
}

function parseGlob(pattern: string): GlobToken[] {
  const chars = Array.from(pattern);
  const tokens: GlobToken[] = [];
  let i = 0;
  while (i < chars.length) {
    const ch = chars[i] ?? '';
    i += 1;
    if (ch === '*') {
      // Consecutive stars are equivalent to one; collapsing them keeps matching linear-ish.
      if (tokens[tokens.length - 1]?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (ch === '?') {
      tokens.push({ kind: 'any' });
    } else if (ch === '[') {
      let end = i;
      if (chars[end] === '!') end += 1;
      if (chars[end] === ']') end += 1;
      while (end < chars.length && chars[end] !== ']') end += 1;
      if (end >= chars.length) {
        tokens.push({ kind: 'char', codePoint: codePoint(ch) });
        continue;
      }
      tokens.push(parseSet(chars.slice(i, end)));
      i = end + 1;
    } else {
      tokens.push({ kind: 'char', codePoint: codePoint(ch) });
    }
  }
  return tokens;
}

/** Parses the inside of `[...]`: an optional `!`, then characters and `a-z` ranges. */
function parseSet(content: string[]): GlobToken {
  const negated = content[0] === '!';
  const items = negated ? content.slice(1) : content;
  const ranges: { from: number; to: number }[] = [];
  let i = 0;
  while (i < items.length) {
    const from = items[i] ?? '';
    const to = items[i + 2];
    if (items[i + 1] === '-' && to !== undefined) {
      // A reversed range such as `z-a` matches nothing, as in Python.
      ranges.push({ from: codePoint(from), to: codePoint(to) });
      i += 3;
    } else {
      ranges.push({ from: codePoint(from), to: codePoint(from) });
      i += 1;
    }
  }
  return { kind: 'set', negated, ranges };
}

function codePoint(ch: string): number {
  return ch.codePointAt(0) ?? 0;
}

function matchesOne(token: GlobToken, ch: number): boolean {
  switch (token.kind) {
    case 'any':
      return true;
    case 'char':
      return token.codePoint === ch;
    case 'set':
      return token.ranges.some((range) => range.from <= ch && ch <= range.to) !== token.negated;
    case 'star':
      return false;
  }
}

/**
 * Every token but `star` consumes exactly one character, so the classic two-pointer
 * algorithm (backtrack to the last star only) is complete and runs in O(name × pattern).
 */
function matchTokens(tokens: readonly GlobToken[], name: readonly number[]): boolean {
  let t = 0;
  let n = 0;
  let starToken = -1;
  let starName = 0;
  while (n < name.length) {
    const token = tokens[t];
    const ch = name[n] ?? 0;
    if (token?.kind === 'star') {
      starToken = t;
      starName = n;
      t += 1;
    } else if (token !== undefined && matchesOne(token, ch)) {
      t += 1;
      n += 1;
    } else if (starToken >= 0) {
      t = starToken + 1;
      starName += 1;
      n = starName;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === 'star') t += 1;
  return t === tokens.length;
}
