/**
 * Time, as the coordinator and worker loops see it. Production uses {@link realClock}; tests and
 * simulations hand in a {@link VirtualClock} (`./virtual-clock`) whose time moves only when they
 * say so, so a test that waits for a sweep, a lock expiry or a back-off waits for nothing.
 */
export interface Clock {
  /** Milliseconds since the epoch (as `Date.now()`). */
  now(): number;
  /**
   * Resolves after `ms` milliseconds of this clock's time (any length: `Infinity` waits until
   * `signal` fires; 0, a negative number or NaN resolves at once), or as soon as `signal` fires.
   * Never rejects.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The longest delay `setTimeout` honours: 2^31 − 1 ms (about 24.8 days). Node fires a longer one
 * after 1 ms, so {@link realClock} waits longer delays out as a chain of shorter timers.
 */
export const MAX_TIMEOUT_IN_MS = 2 ** 31 - 1;

/** Wall-clock time: `Date.now()` and `setTimeout` (looked up at each call, so jest's fake timers apply). */
export const realClock: Clock = Object.freeze({
  now: (): number => Date.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted || !(ms > 0)) {
        resolve();
        return;
      }
      let remaining = ms;
      let handle: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        if (handle !== undefined) clearTimeout(handle);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const arm = (): void => {
        const step = Math.min(remaining, MAX_TIMEOUT_IN_MS);
        remaining -= step;
        handle = setTimeout(() => (remaining > 0 ? arm() : done()), step);
      };
      if (remaining !== Number.POSITIVE_INFINITY) arm();
      signal?.addEventListener('abort', done, { once: true });
    });
  },
});

/**
 * A signal that fires (with a `TimeoutError` DOMException as its reason, as `AbortSignal.timeout`
 * does) after `ms` of `clock`'s time, or when `parent` fires; `clear()` stops the clock's timer
 * (call it once the guarded call is over).
 */
export function clockTimeout(clock: Clock, ms: number, parent?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const cancel = new AbortController();
  const onParent = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  void clock.sleep(ms, cancel.signal).then(() => {
    if (!cancel.signal.aborted) controller.abort(new DOMException('The operation timed out.', 'TimeoutError'));
  });
  return {
    signal: controller.signal,
    clear: () => {
      cancel.abort();
      parent?.removeEventListener('abort', onParent);
    },
  };
}
