/**
 * When an empty Storage Queue is polled again (Storage Queues have no server-side wait). The state
 * lives across `receive` calls of one queue object, so a caller that receives in a loop pays the
 * fast polling only around activity:
 * - for `hotWindowInMs` after the last message received, every `minIntervalInMs` (a completion or a
 *   newly dispatched task usually follows within a few milliseconds of the previous one);
 * - after that, each pause doubles, up to `maxIntervalInMs`, which bounds what an idle queue costs
 *   (about 60 000 / `maxIntervalInMs` requests per minute while `receive` waits).
 */
export class PollSchedule {
  private lastMessageAt = Number.NEGATIVE_INFINITY;
  private pause: number;

  constructor(
    readonly minIntervalInMs: number,
    readonly maxIntervalInMs: number,
    readonly hotWindowInMs: number,
  ) {
    this.pause = Math.max(1, Math.min(minIntervalInMs, maxIntervalInMs));
  }

  /** A receive returned messages at `now`: polls are fast again. */
  onMessages(now: number): void {
    this.lastMessageAt = now;
    this.pause = Math.max(1, Math.min(this.minIntervalInMs, this.maxIntervalInMs));
  }

  /** The pause before the next poll, after an empty one at `now`. */
  nextPause(now: number): number {
    if (now - this.lastMessageAt < this.hotWindowInMs) return this.pause;
    const pause = this.pause;
    this.pause = Math.min(this.maxIntervalInMs, pause * 2);
    return pause;
  }
}
