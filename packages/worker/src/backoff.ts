import { realClock, type Clock } from '@jobq/ports';
import { setLongTimeout } from './long-timer';

/** Exponential back-off: `initialInMs`, doubling (× `factor`) up to `maxInMs`; `reset()` after success. */
export class Backoff {
  private current: number;

  constructor(
    readonly initialInMs = 100,
    readonly maxInMs = 30_000,
    readonly factor = 2,
  ) {
    this.current = Math.min(initialInMs, maxInMs);
  }

  /** The delay to wait now; the following call returns a longer one (up to the cap). */
  next(): number {
    const delay = this.current;
    this.current = Math.min(this.maxInMs, Math.max(1, this.current * this.factor));
    return delay;
  }

  /** Back to the initial delay (work arrived, or a call succeeded). */
  reset(): void {
    this.current = Math.min(this.initialInMs, this.maxInMs);
  }
}

/** Options of {@link sleep}. */
export interface SleepOptions {
  /** Ends the sleep early (resolves, never rejects). */
  signal?: AbortSignal;
  /** Do not keep the process alive for this timer (real clock only). */
  unref?: boolean;
  /** The clock to wait on (default the real one). */
  clock?: Clock;
}

/** Waits `ms` milliseconds (any length, see {@link setLongTimeout}), or less when `signal` fires. Always resolves. */
export function sleep(ms: number, options: SleepOptions = {}): Promise<void> {
  const { signal, clock = realClock } = options;
  if (clock !== realClock) return clock.sleep(ms, signal);
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) {
      resolve();
      return;
    }
    const done = () => {
      timer.clear();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setLongTimeout(done, ms);
    if (options.unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}
