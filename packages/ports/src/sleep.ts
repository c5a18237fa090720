import { setTimeout as wait } from 'node:timers/promises';

/** Options of {@link sleep}. */
export interface SleepOptions {
  /** Do not keep the process alive for this timer alone. */
  unref?: boolean;
}

/**
 * Waits `ms` milliseconds of real time, or less when `signal` fires; never rejects (an abort ends the wait, it
 * is not an error). For the short waits of adapters and tests; a wait that must follow a `Clock` (and so a
 * `VirtualClock` in tests), or may be longer than `setTimeout`'s 24.8 days, is `clock.sleep`.
 */
export async function sleep(ms: number, signal?: AbortSignal, options: SleepOptions = {}): Promise<void> {
  if (signal?.aborted || !(ms > 0)) return;
  try {
    await wait(ms, undefined, { ...(signal ? { signal } : {}), ref: options.unref !== true });
  } catch (error) {
    // Node's AbortError may come from another realm (jest's), so it is told by its name.
    if ((error as { name?: unknown } | null)?.name !== 'AbortError') throw error;
  }
}
