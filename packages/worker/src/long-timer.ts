import { realClock, type Clock } from '@jobq/ports';

/**
 * The longest delay `setTimeout` honours: 2^31 − 1 ms (about 24.8 days). Node fires a longer one
 * after 1 ms (with a TimeoutOverflowWarning), so a 30-day task timeout would stop the task at once.
 */
export const MAX_TIMER_DELAY_IN_MS = 2 ** 31 - 1;

/** A timer from {@link setLongTimeout}. */
export interface LongTimer {
  /** Cancels the timer (harmless after it fired). */
  clear(): void;
  /** Lets the process exit while only this timer is pending (like `Timeout.unref`). */
  unref(): LongTimer;
}

/**
 * `setTimeout` for any delay: a delay past {@link MAX_TIMER_DELAY_IN_MS} is waited out as a chain of
 * shorter timers, so it fires when it should instead of after 1 ms. `Infinity` never fires; a
 * negative or NaN delay fires on the next turn, as with `setTimeout`. Use it for every delay that
 * comes from configuration or from a task. On a `clock` other than the real one (a `VirtualClock`)
 * the timer is a sleep of that clock (`unref` does nothing there).
 */
export function setLongTimeout(callback: () => void, delayInMs: number, clock: Clock = realClock): LongTimer {
  if (clock !== realClock) return clockTimer(callback, delayInMs, clock);
  let remaining = Number.isNaN(delayInMs) ? 0 : Math.max(0, delayInMs);
  let handle: NodeJS.Timeout | undefined;
  let unref = false;
  let cleared = false;
  const arm = () => {
    const step = Math.min(remaining, MAX_TIMER_DELAY_IN_MS);
    remaining -= step;
    handle = setTimeout(() => {
      if (cleared) return;
      if (remaining > 0) arm();
      else callback();
    }, step);
    if (unref) handle.unref();
  };
  if (remaining !== Infinity) arm();
  const timer: LongTimer = {
    clear() {
      cleared = true;
      if (handle) clearTimeout(handle);
    },
    unref() {
      unref = true;
      handle?.unref();
      return timer;
    },
  };
  return timer;
}

/** A {@link LongTimer} on any clock: a sleep that `clear()` ends without calling back. */
function clockTimer(callback: () => void, delayInMs: number, clock: Clock): LongTimer {
  const cancel = new AbortController();
  void clock.sleep(Number.isNaN(delayInMs) ? 0 : Math.max(0, delayInMs), cancel.signal).then(() => {
    if (!cancel.signal.aborted) callback();
  });
  const timer: LongTimer = {
    clear: () => cancel.abort(),
    unref: () => timer,
  };
  return timer;
}
