/**
 * The message of anything thrown, for logs, issues, failure reasons and one-line reports (never
 * throws): an `Error`'s message (its name when the message is empty), a string as it is, anything
 * else as JSON. `@jobq/ports` re-exports it.
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
