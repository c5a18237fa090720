import { JobqError, type Clock } from '@jobq/ports';
import type { CoordinatorShard } from '../coordinator';
import type { ShardRunner } from '../shard-balancer';

/** What fake runners did, shared by the runners of a test. */
export interface RunnerLog {
  /** `start k m`, `stop k m`, `lost k m` (k: shard, m: member), in order. */
  events: string[];
  /** Runners working now (started, neither stopped nor lost), by member. */
  live: Map<string, Set<FakeRunner>>;
}

export function runnerLog(): RunnerLog {
  return { events: [], live: new Map() };
}

/**
 * A {@link ShardRunner} that does no work: it "goes round" on every look at its health unless
 * stalled, stops on `stop()` (releasing the claim's lease, as a Coordinator does) and ends with a
 * `lease-lost` error when the claim's lease is lost.
 */
export class FakeRunner implements ShardRunner {
  stalledAt: number | null = null;
  private stopped = false;
  private readonly done: Promise<void>;
  private finish!: (error?: Error) => void;

  constructor(
    readonly member: string,
    readonly shard: CoordinatorShard,
    private readonly clock: Clock,
    private readonly log: RunnerLog,
    /** Virtual ms a stop takes (its batch finishing, its stats written) while it still works, before it releases. */
    private readonly stopTakesMs = 0,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.finish = (error) => (error === undefined ? resolve() : reject(error));
    });
    void this.done.catch(() => undefined);
  }

  get index(): number {
    return this.shard.index;
  }

  start(): Promise<boolean> {
    this.log.events.push(`start ${this.index} ${this.member}`);
    let set = this.log.live.get(this.member);
    if (set === undefined) this.log.live.set(this.member, (set = new Set()));
    set.add(this);
    const lease = this.shard.claim.lease;
    const onLost = () => {
      if (this.stopped) return;
      this.stopped = true;
      this.log.live.get(this.member)?.delete(this);
      this.log.events.push(`lost ${this.index} ${this.member}`);
      this.finish(lease.lost.reason instanceof Error ? lease.lost.reason : new JobqError('lease-lost', 'lost'));
    };
    if (lease.lost.aborted) onLost();
    else lease.lost.addEventListener('abort', onLost, { once: true });
    return Promise.resolve(true);
  }

  run(): Promise<void> {
    return this.done;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.stopTakesMs > 0) await this.clock.sleep(this.stopTakesMs);
    this.log.live.get(this.member)?.delete(this);
    this.log.events.push(`stop ${this.index} ${this.member}`);
    await this.shard.claim.lease.release();
    this.finish();
  }

  /** Its loop stops going round from now on. */
  stall(): void {
    this.stalledAt ??= this.clock.now();
  }

  health(): { lastTickAt: number } {
    return { lastTickAt: this.stalledAt ?? this.clock.now() };
  }
}
