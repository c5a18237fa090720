/**
 * The message of anything thrown, for replies and stderr lines (never throws): an `Error`'s message (its
 * name when the message is empty), a string as it is, anything else as `String` writes it.
 */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string') {
    return (err as { message: string }).message || 'error';
  }
  try {
    return String(err);
  } catch {
    return 'error';
  }
}
