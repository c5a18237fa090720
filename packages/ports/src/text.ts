import { isJobqError } from './errors';

/**
 * The message of an error, for logs, failure reasons and one-line reports (never throws): an `Error`'s message
 * (its name when the message is empty), a string as it is, anything else as JSON.
 */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  // Errors from another realm (a vm context, a worker thread) are not `instanceof Error` here.
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    const { message, name } = error as { message: string; name?: unknown };
    return message || (typeof name === 'string' ? name : 'error');
  }
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** {@link errorMessage} with the code of a `JobqError` in front: `not-found: workflow "x" does not exist`. */
export function describeError(error: unknown): string {
  return isJobqError(error) ? `${error.code}: ${error.message}` : errorMessage(error);
}

/** `a, b, c and 4 more`: the first `max` items (each as `show` writes it) joined with commas, and how many were left out. */
export function listSome<T>(items: readonly T[], max: number, show: (item: T) => string = String): string {
  const shown = items.slice(0, max).map(show).join(', ');
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}
