/**
 * Small helpers shared by the wire codecs. Not exported from the package.
 * @internal
 * @packageDocumentation
 */

import { errorMessage } from '../error-text';

/** @internal True for a non-null, non-array object whose prototype is `Object.prototype` or null (what `JSON.parse` gives). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** @internal Own-property lookup that never reaches into the prototype chain. */
export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** @internal True for an integer in [1, 2^53 - 1]. */
export function isPositiveSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

/** @internal True for an integer in [0, 2^53 - 1]. */
export function isNonNegativeSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** @internal Collapses control characters (newlines included) to spaces and truncates. */
export function oneLine(text: string, max = 160): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** @internal A string as a short JSON literal (truncated to 40 characters). */
export function quoteShort(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** @internal A short, single-line description of a value for error messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string': {
      return `the string ${quoteShort(value)}`;
    }
    case 'number':
      return `the number ${String(value)}`;
    case 'boolean':
      return String(value);
    case 'object':
      return Array.isArray(value) ? 'an array' : 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** @internal `JSON.parse` that reports failure instead of throwing. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    const message = errorMessage(e);
    return { ok: false, error: oneLine(message) };
  }
}
