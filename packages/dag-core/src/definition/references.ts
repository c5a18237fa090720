import { quoteShort } from '../wire/internal';

/**
 * `${{ NAMESPACE.NAME }}` references in the strings of a workflow file: `params.NAME` (a workflow
 * parameter), `matrix.KEY` (a value of a matrix task's combination) and `secrets.NAME` (resolved
 * by the worker, in kwargs.env values only). Spaces and tabs may surround `NAMESPACE.NAME`. Every
 * `${{` starts a reference: there is no escape for a literal one.
 */

/** The namespaces a reference can read. */
export type ReferenceNamespace = 'params' | 'matrix' | 'secrets';

/** What a parameter name, a matrix key and a secret name must match. */
export const REFERENCE_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

const NAME = new RegExp(REFERENCE_NAME_PATTERN);
const NAMESPACES: readonly string[] = ['params', 'matrix', 'secrets'];
const OPEN = '${{';
const CLOSE = '}}';

/** One well-formed reference, or a `${{` that does not start one. */
export type ReferenceSite =
  | { ok: true; namespace: ReferenceNamespace; name: string; index: number; length: number }
  | { ok: false; index: number; length: number; message: string };

/** True when `text` holds a `${{` (cheap test before {@link findReferences}). */
export function hasReference(text: string): boolean {
  return text.includes(OPEN);
}

/** Every `${{` of `text`, in order: well-formed references and what is wrong with the others. Never throws. */
export function findReferences(text: string): ReferenceSite[] {
  const sites: ReferenceSite[] = [];
  let from = 0;
  for (;;) {
    const index = text.indexOf(OPEN, from);
    if (index < 0) return sites;
    const close = text.indexOf(CLOSE, index + OPEN.length);
    if (close < 0) {
      sites.push({ ok: false, index, length: text.length - index, message: '"${{" is not closed by "}}"' });
      return sites;
    }
    const length = close + CLOSE.length - index;
    const inner = text.slice(index + OPEN.length, close).replace(/^[ \t]+|[ \t]+$/g, '');
    const dot = inner.indexOf('.');
    const namespace = dot < 0 ? '' : inner.slice(0, dot);
    const name = dot < 0 ? '' : inner.slice(dot + 1);
    if (!NAMESPACES.includes(namespace)) {
      sites.push({
        ok: false,
        index,
        length,
        message: `${quoteShort(text.slice(index, index + length))} is not a reference: write \${{ params.NAME }}, \${{ matrix.KEY }} or, in kwargs.env, \${{ secrets.NAME }}`,
      });
    } else if (!NAME.test(name)) {
      sites.push({
        ok: false,
        index,
        length,
        message: `${quoteShort(name)} is not a ${namespace === 'matrix' ? 'matrix key' : namespace === 'params' ? 'parameter name' : 'secret name'}: use letters, digits and "_", not starting with a digit`,
      });
    } else {
      sites.push({ ok: true, namespace: namespace as ReferenceNamespace, name, index, length });
    }
    from = index + length;
  }
}

/**
 * Replaces the references of `text` by what `replace` returns for each (undefined keeps the
 * reference as written). One pass: a replacement is never read again.
 */
export function replaceReferences(
  text: string,
  sites: readonly ReferenceSite[],
  replace: (site: Extract<ReferenceSite, { ok: true }>) => string | undefined,
): string {
  const parts: string[] = [];
  let from = 0;
  for (const site of sites) {
    if (!site.ok) continue;
    const value = replace(site);
    if (value === undefined) continue;
    parts.push(text.slice(from, site.index), value);
    from = site.index + site.length;
  }
  if (from === 0) return text;
  parts.push(text.slice(from));
  return parts.join('');
}
