import { quoteShort } from './internal';

/**
 * Secret references: `${{ secrets.NAME }}` as a whole `kwargs.env` value or inside one. The
 * definition, the runtime and the task message keep the reference; the worker resolves it when it
 * starts the task, from its own environment variable `JOBQ_SECRET_<NAME>`, so a resolved value is
 * never stored or sent.
 */

const NAME_CHARS = '[A-Za-z_][A-Za-z0-9_]*';

/** What a secret's NAME must match: a letter or `_`, then letters, digits and `_`. */
export const SECRET_NAME_PATTERN = `^${NAME_CHARS}$`;

/** One reference, unanchored, NAME captured: spaces and tabs may surround `secrets.NAME`. */
export const SECRET_REF_PATTERN = `\\$\\{\\{[ \\t]*secrets\\.(${NAME_CHARS})[ \\t]*\\}\\}`;

/** The worker reads secret NAME from its environment variable `JOBQ_SECRET_<NAME>`. */
export const SECRET_ENV_PREFIX = 'JOBQ_SECRET_';

/** One well-formed reference found in a text. */
export interface SecretRef {
  /** The secret's NAME. */
  name: string;
  /** Offset (0-based, in UTF-16 code units) of the reference's `${{`. */
  index: number;
  /** Length of the whole reference, `${{` to `}}`. */
  length: number;
}

/** A `${{` that does not start a well-formed reference. */
export interface SecretRefProblem {
  /** Offset (0-based) of the `${{`. */
  index: number;
  /** One line saying what is wrong. */
  message: string;
}

/** Everything {@link findSecretRefs} found, in text order. */
export interface SecretRefScan {
  refs: SecretRef[];
  problems: SecretRefProblem[];
}

const OPEN = '${{';
const CLOSE = '}}';
const NAME = new RegExp(SECRET_NAME_PATTERN);

function problemAt(text: string, index: number): { problem: SecretRefProblem; next: number } {
  const close = text.indexOf(CLOSE, index + OPEN.length);
  if (close < 0) {
    return { problem: { index, message: '"${{" is not closed by "}}": a secret reference is ${{ secrets.NAME }}' }, next: text.length };
  }
  const inner = text.slice(index + OPEN.length, close).trim();
  const named = /^secrets\.(.*)$/s.exec(inner);
  const message =
    named !== null && !NAME.test(named[1] ?? '')
      ? `${quoteShort(named[1] ?? '')} is not a secret name: use letters, digits and "_", not starting with a digit`
      : `${quoteShort(`${OPEN} ${inner} ${CLOSE}`)} is not a secret reference: write ${OPEN} secrets.NAME ${CLOSE}`;
  return { problem: { index, message }, next: close + CLOSE.length };
}

/**
 * Finds the secret references in `text`, and every `${{` that does not start one (an env value
 * cannot hold a literal `${{` otherwise). Never throws.
 */
export function findSecretRefs(text: string): SecretRefScan {
  const scan: SecretRefScan = { refs: [], problems: [] };
  // A sticky expression keeps its position between calls: use a fresh one per scan.
  const reference = new RegExp(SECRET_REF_PATTERN, 'y');
  let from = 0;
  for (;;) {
    const index = text.indexOf(OPEN, from);
    if (index < 0) return scan;
    reference.lastIndex = index;
    const match = reference.exec(text);
    if (match !== null) {
      scan.refs.push({ name: match[1]!, index, length: match[0].length });
      from = index + match[0].length;
      continue;
    }
    const { problem, next } = problemAt(text, index);
    scan.problems.push(problem);
    from = next;
  }
}

/** The outcome of {@link resolveSecretRefs}. */
export type SecretResolution =
  | { ok: true; value: string }
  /** `missing`: the names `lookup` did not know, each once, in text order; `problems`: malformed references. */
  | { ok: false; missing: string[]; problems: SecretRefProblem[] };

/**
 * Replaces every secret reference in `text` with `lookup(NAME)`. Fails, naming them, when a
 * reference is malformed or `lookup` returns undefined for a NAME; an empty string is a value.
 * Resolved values are inserted as they are (a `${{` inside a secret is not resolved again).
 */
export function resolveSecretRefs(text: string, lookup: (name: string) => string | undefined): SecretResolution {
  const { refs, problems } = findSecretRefs(text);
  const missing: string[] = [];
  const parts: string[] = [];
  let from = 0;
  for (const ref of refs) {
    const value = lookup(ref.name);
    if (value === undefined) {
      if (!missing.includes(ref.name)) missing.push(ref.name);
      continue;
    }
    parts.push(text.slice(from, ref.index), value);
    from = ref.index + ref.length;
  }
  if (missing.length > 0 || problems.length > 0) return { ok: false, missing, problems };
  parts.push(text.slice(from));
  return { ok: true, value: parts.join('') };
}
