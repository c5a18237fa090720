import type { Clock } from './clock';

interface Sleeper {
  due: number;
  seq: number;
  resolve: () => void;
  done: boolean;
}

/** Options of {@link VirtualClock.advanceUntil}. */
export interface AdvanceUntilOptions {
  /** Give up (false) when the condition still fails this much virtual time after the call. Default 24 h. */
  withinMs?: number;
  /**
   * With no timer pending, how long (real ms) to let real work (file or process I/O) go on before the
   * loop counts as idle and the call gives up (false). Default 5 000.
   */
  realWaitInMs?: number;
}

/** Options of {@link VirtualClock}. */
export interface VirtualClockOptions {
  /** The clock's time at first (ms since the epoch). Default 2026-01-01T00:00:00Z. */
  startMs?: number;
  /**
   * Event-loop turns (`setImmediate`) given to the code a timer woke before the next timer fires.
   * Promise chains finish within one turn; more turns let short real I/O complete. Default 3.
   */
  settleTurns?: number;
}

const DAY_IN_MS = 24 * 3_600_000;

/** One event-loop turn: every promise continuation queued before it has run when it resolves. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A real pause, for real I/O to progress while no virtual timer is due. */
function realPause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A {@link Clock} whose time moves only when a test (or a simulation) moves it: `sleep` registers a
 * timer, and {@link advance} runs the timers that fall due in order of their time (ties in the order
 * they were set), letting the code each one wakes run (promise continuations, a few event-loop
 * turns) before the next fires, so that a loop that sleeps again is woken again within the same
 * advance. Nothing happens between advances. Not thread-safe and not for production.
 *
 * ```ts
 * const clock = new VirtualClock();
 * const coordinator = new Coordinator({ ..., options: { clock } });
 * await coordinator.start();
 * await clock.advanceUntil(async () => (await store.getWorkflow(id))?.status === 'completed');
 * ```
 */
export class VirtualClock implements Clock {
  private time: number;
  private seq = 0;
  private live = 0;
  private readonly settleTurns: number;
  /** Finite timers, a binary min-heap by (due, seq); cancelled ones stay until they reach the top. */
  private readonly heap: Sleeper[] = [];

  constructor(options: VirtualClockOptions = {}) {
    this.time = options.startMs ?? Date.UTC(2026, 0, 1);
    this.settleTurns = Math.max(1, Math.floor(options.settleTurns ?? 3));
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || !(ms > 0)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const sleeper: Sleeper = { due: this.time + ms, seq: this.seq++, resolve, done: false };
      const onAbort = (): void => {
        if (sleeper.done) return;
        sleeper.done = true;
        if (sleeper.due !== Number.POSITIVE_INFINITY) this.live--;
        resolve();
      };
      sleeper.resolve = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (sleeper.due === Number.POSITIVE_INFINITY) return; // only the signal ends it
      this.live++;
      this.push(sleeper);
    });
  }

  /** The number of timers waiting (not cancelled, not `Infinity`). */
  get pendingTimers(): number {
    return this.live;
  }

  /** When the next timer falls due, or null when none is waiting. */
  nextTimerAt(): number | null {
    return this.peek()?.due ?? null;
  }

  /** Lets the code woken so far run (a few event-loop turns), without moving time. */
  async settle(): Promise<void> {
    for (let i = 0; i < this.settleTurns; i++) await turn();
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way (see the class comment). */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.time + Math.max(0, ms));
  }

  /** Moves time forward to `at` (never back), running every timer due by then. */
  async advanceTo(at: number): Promise<void> {
    await this.settle();
    for (let next = this.peek(); next !== undefined && next.due <= at; next = this.peek()) {
      this.fireNext();
      await this.settle();
    }
    if (at > this.time) this.time = at;
  }

  /** Runs timers in order until none is waiting, or until the next one is more than `withinMs` away from now. */
  async runUntilIdle(withinMs = DAY_IN_MS): Promise<void> {
    const limit = this.time + withinMs;
    await this.settle();
    for (let next = this.peek(); next !== undefined && next.due <= limit; next = this.peek()) {
      this.fireNext();
      await this.settle();
    }
  }

  /**
   * Runs timers in order until `condition` holds (true), checking it before each timer. When no
   * timer is due within `withinMs` of the start, only real work (a child process, file I/O) can
   * still make it hold: it gets `realWaitInMs` of real time, after which the call gives up (false:
   * the loop is idle, or the condition needs more virtual time than allowed).
   */
  async advanceUntil(condition: () => boolean | Promise<boolean>, options: AdvanceUntilOptions = {}): Promise<boolean> {
    const limit = this.time + (options.withinMs ?? DAY_IN_MS);
    const realWait = options.realWaitInMs ?? 5_000;
    let idleSince: number | null = null;
    for (;;) {
      await this.settle();
      if (await condition()) return true;
      const next = this.peek();
      if (next === undefined || next.due > limit) {
        // Nothing will happen in virtual time within the window: only real work (a child process,
        // file I/O) may still change something. Give it real time, within bounds.
        idleSince ??= Date.now();
        if (Date.now() - idleSince >= realWait) return false;
        await realPause(2);
        continue;
      }
      idleSince = null;
      this.fireNext();
    }
  }

  /** Like {@link advanceUntil}, but throws (with `describe()`, when given) instead of returning false. */
  async runUntil(condition: () => boolean | Promise<boolean>, describe?: () => string, options: AdvanceUntilOptions = {}): Promise<void> {
    if (await this.advanceUntil(condition, options)) return;
    const at = new Date(this.time).toISOString();
    throw new Error(`the condition never held (virtual time ${at}, ${this.live} timer(s) waiting)${describe ? `: ${describe()}` : ''}`);
  }

  private fireNext(): void {
    const sleeper = this.pop();
    if (sleeper === undefined) return;
    if (sleeper.due > this.time) this.time = sleeper.due;
    sleeper.done = true;
    this.live--;
    sleeper.resolve();
  }

  // ---- the heap -------------------------------------------------------------------------------

  private peek(): Sleeper | undefined {
    while (this.heap.length > 0 && this.heap[0]!.done) this.removeTop();
    return this.heap[0];
  }

  private pop(): Sleeper | undefined {
    const top = this.peek();
    if (top !== undefined) this.removeTop();
    return top;
  }

  private static before(a: Sleeper, b: Sleeper): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  private push(sleeper: Sleeper): void {
    const heap = this.heap;
    heap.push(sleeper);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!VirtualClock.before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private removeTop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < heap.length && VirtualClock.before(heap[l]!, heap[smallest]!)) smallest = l;
      if (r < heap.length && VirtualClock.before(heap[r]!, heap[smallest]!)) smallest = r;
      if (smallest === i) return;
      [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
      i = smallest;
    }
  }
}
