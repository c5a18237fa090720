import type { WorkflowRuntime } from './types';

/*
 * Progress over time for views that poll a runtime (`jobq workflow watch`, the dashboard): the
 * caller passes the time of each sample, so this stays free of any clock.
 */

/** Finished tasks over a sliding window: the rate and the time left at that rate. */
export class RateWindow {
  private readonly samples: Array<{ at: number; done: number }> = [];

  constructor(private readonly windowInMs = 60_000) {}

  add(at: number, done: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && last.at === at) last.done = done;
    else this.samples.push({ at, done });
    while (this.samples.length > 2 && at - this.samples[0]!.at > this.windowInMs) this.samples.shift();
  }

  /** Tasks finished per second over the window; null before two samples. */
  rate(): number | null {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.at <= first.at) return null;
    return Math.max(0, (last.done - first.done) / ((last.at - first.at) / 1000));
  }

  /** Milliseconds left for `remaining` tasks; 0 when none remain, null when unknown. */
  etaMs(remaining: number): number | null {
    if (remaining <= 0) return 0;
    const rate = this.rate();
    return rate === null || rate <= 0 ? null : (remaining / rate) * 1000;
  }
}

/** Terminal tasks of a runtime (what the rate counts). */
export function doneCount(runtime: WorkflowRuntime): number {
  const c = runtime.counts;
  return c.completed + c.failed + c.upstream_failed + c.skipped + c.cancelled;
}
