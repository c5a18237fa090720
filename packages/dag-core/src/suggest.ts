/**
 * "Did you mean …?": the known name closest to a misspelt one (docs/workflow-language.md#diagnostics).
 * Pure and small: an edit distance and a rule for how far a suggestion may be.
 */

/**
 * The optimal string alignment distance of `a` and `b` (Levenshtein plus the swap of two adjacent
 * characters): the fewest insertions, deletions, substitutions and swaps that turn one into the
 * other. Counts UTF-16 code units. Stops early, returning `limit + 1`, once the distance is known to
 * exceed `limit`.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before = new Int32Array(b.length + 1);
  let previous = new Int32Array(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  let current = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)) {
        value = Math.min(value, before[j - 2]! + 1);
      }
      current[j] = value;
      if (value < best) best = value;
    }
    if (best > limit) return limit + 1;
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length]!;
}

/** Options of {@link closestName}. */
export interface ClosestNameOptions {
  /** Other spellings of a candidate (`needs` → `depends_on`), matched exactly, ignoring case. */
  aliases?: Readonly<Record<string, string>>;
  /**
   * Candidates this short or shorter are suggested only for one inserted, deleted or swapped
   * character (not a substituted one): `cmds` → `cmd`, but a kwarg `end` is not taken for `env`.
   * Default 0 (the rule applies to no candidate).
   */
  strictUpTo?: number;
}

function normalize(name: string): string {
  return name.toLowerCase().replace(/-/g, '_');
}

/**
 * The candidate `name` is most likely a misspelling of, or undefined: one equal but for case or
 * `-`/`_`, an alias, or one within `max(1, ⌊length/3⌋)` edits (the rule rustc uses); the nearest
 * wins, the first listed on a tie. `name` itself (when a candidate) is never suggested.
 */
export function closestName(name: string, candidates: Iterable<string>, options: ClosestNameOptions = {}): string | undefined {
  const key = normalize(name);
  const list = [...candidates].filter((c) => c !== name);
  const exact = list.find((c) => c.length === key.length && normalize(c) === key);
  if (exact !== undefined) return exact;
  const alias =
    options.aliases === undefined ? undefined : Object.entries(options.aliases).find(([spelling]) => normalize(spelling) === key)?.[1];
  if (alias !== undefined && list.includes(alias)) return alias;
  const strictUpTo = options.strictUpTo ?? 0;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of list) {
    const limit = Math.min(Math.max(1, Math.floor(candidate.length / 3)), bestDistance - 1);
    if (Math.abs(candidate.length - key.length) > limit) continue;
    const distance = editDistance(key, normalize(candidate), limit);
    if (distance > limit || distance >= bestDistance) continue;
    if (candidate.length <= strictUpTo && key.length === candidate.length && !sameLetters(key, normalize(candidate))) continue;
    best = candidate;
    bestDistance = distance;
  }
  return best;
}

function sameLetters(a: string, b: string): boolean {
  return [...a].sort().join('') === [...b].sort().join('');
}

/** The hint of an issue that suggests `name`: `did you mean "name"?`. */
export function didYouMean(name: string): string {
  return `did you mean ${JSON.stringify(name)}?`;
}
