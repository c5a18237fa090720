/**
 * What a command opened that keeps the process alive until closed (Service Bus connections): closed
 * by the command base when the command ends, whatever way it ends.
 */
const open = new Set<() => Promise<void>>();

/** Registers `close` to run when the command ends; returns a function that unregisters it. */
export function closeWhenDone(close: () => Promise<void>): () => void {
  open.add(close);
  return () => open.delete(close);
}

/** Runs every registered close (errors ignored: the command's outcome is already decided). */
export async function closeEverything(): Promise<void> {
  const closes = [...open];
  open.clear();
  await Promise.all(closes.map((close) => close().catch(() => undefined)));
}
