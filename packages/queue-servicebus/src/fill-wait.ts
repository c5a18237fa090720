/**
 * How long a receive's top-up waits for more messages, from the link's measured round trip.
 *
 * Messages already on the broker arrive about one round trip after the top-up issues its credit, so
 * the wait is `factor × round trip + margin`, at least `floorInMs` and at most `ceilingInMs` (the
 * queue's `batchFillWaitInMs`); the ceiling until a round trip has been measured. The round trip is
 * an exponentially weighted average of the durations fed to {@link FillWait.observe} (the queue
 * feeds it its settlements and lock renewals). See the package README.
 */
export interface FillWaitOptions {
  /** The longest wait, and the wait before any measurement. */
  ceilingInMs: number;
  /** The shortest wait (default 5 ms, or the ceiling when that is lower). */
  floorInMs?: number;
  /** Round trips waited (default 2). */
  factor?: number;
  /** Added to the round trips (default 2 ms). */
  marginInMs?: number;
  /** Weight of each new measurement in the average, in (0, 1] (default 0.25). */
  weight?: number;
}

export class FillWait {
  private readonly ceiling: number;
  private readonly floor: number;
  private readonly factor: number;
  private readonly margin: number;
  private readonly weight: number;
  private average: number | undefined;

  constructor(options: FillWaitOptions) {
    this.ceiling = Math.max(0, options.ceilingInMs);
    this.floor = Math.min(this.ceiling, Math.max(0, options.floorInMs ?? 5));
    this.factor = options.factor ?? 2;
    this.margin = options.marginInMs ?? 2;
    this.weight = Math.min(1, Math.max(0.01, options.weight ?? 0.25));
  }

  /** Records one round trip (ms). Past the ceiling it counts as the ceiling, so one stall is soon forgotten. */
  observe(durationInMs: number): void {
    if (!Number.isFinite(durationInMs) || durationInMs < 0) return;
    const sample = Math.min(durationInMs, this.ceiling);
    this.average = this.average === undefined ? sample : this.average + this.weight * (sample - this.average);
  }

  /** The smoothed round trip (ms); undefined before the first measurement. */
  get roundTripInMs(): number | undefined {
    return this.average;
  }

  /** The wait (whole ms) for the next top-up. */
  get waitInMs(): number {
    if (this.average === undefined) return this.ceiling;
    const wait = Math.ceil(this.factor * this.average + this.margin);
    return Math.min(this.ceiling, Math.max(this.floor, wait));
  }
}
