import { errorMessage } from '@jobq/dag-core';
import { isJobqError } from './errors';

// The message of anything thrown (an Error's, a string, else JSON): one rule, kept in the core.
export { errorMessage };

/** {@link errorMessage} with the code of a `JobqError` in front: `not-found: workflow "x" does not exist`. */
export function describeError(error: unknown): string {
  return isJobqError(error) ? `${error.code}: ${error.message}` : errorMessage(error);
}

/** `a, b, c and 4 more`: the first `max` items (each as `show` writes it) joined with commas, and how many were left out. */
export function listSome<T>(items: readonly T[], max: number, show: (item: T) => string = String): string {
  const shown = items.slice(0, max).map(show).join(', ');
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}
