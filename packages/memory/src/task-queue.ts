import {
  JobqError,
  assertMessageFits,
  assertValidDelay,
  assertValidTimeToLive,
  deadLetterBody,
  realClock,
  type Clock,
  type OperationOptions,
  type OutgoingMessage,
  type PeekedMessage,
  type ReceiveOptions,
  type ReceivedMessage,
  type TaskQueue,
} from '@jobq/ports';
import { Fifo, MinHeap } from './heap';

interface Stored {
  readonly messageId: string;
  readonly body: string;
  readonly enqueuedAt: Date;
  deliveryCount: number;
  /** When the current lock ends, or the delay of a delayed message (clock time); meaningful while `held` or `delayed`. */
  visibleAt: number;
  /** When the message expires (clock time); Infinity for never. */
  readonly expiresAt: number;
  /** The token of the last delivery (0: given back); a handle of an older delivery no longer matches. */
  lockToken: number;
  /** Under a lock (true) or waiting for a receive (false). */
  held: boolean;
  /** Sent with a delay that has not passed yet (never delivered so far). */
  delayed: boolean;
  /** The ticket of the one ready-list or lock-heap entry that is current; older entries are skipped. */
  ticket: number;
}

interface LockEntry {
  stored: Stored;
  ticket: number;
  /** When the lock ends as far as this entry knows (a renewal moves the real end later). */
  at: number;
}

interface ExpiryEntry {
  stored: Stored;
  at: number;
}

/** Runs `fn` so that a throw becomes a rejected promise, as callers of an async API expect. */
function settle<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}

class Handle implements ReceivedMessage {
  constructor(
    readonly messageId: string,
    readonly body: string,
    readonly deliveryCount: number,
    readonly enqueuedAt: Date,
    public lockedUntil: Date,
    readonly lockToken: number,
  ) {}
}

/** Options of {@link MemoryTaskQueue}. */
export interface MemoryTaskQueueOptions {
  /** Default `memory`. */
  name?: string;
  /** Default 30 000. */
  lockDurationInMs?: number;
  /** Default 64 KiB (a Storage Queue's). */
  maxMessageBytes?: number;
  /** Queue that dead-lettered messages go to; one (`{name}-failed`) is made on first use when absent. */
  deadLetter?: MemoryTaskQueue;
  /** The time locks, delays, time to live and receive waits run on. Default the real clock. */
  clock?: Clock;
}

/** How many messages a {@link MemoryTaskQueue} holds, after dropping the expired ones. */
export interface MemoryQueueCounts {
  /** Every message (what `approximateMessageCount` says). */
  messages: number;
  /** Waiting for a receive. */
  visible: number;
  /** Under a lock. */
  held: number;
  /** Sent with a delay that has not passed yet. */
  delayed: number;
}

/**
 * A {@link TaskQueue} in memory, with the semantics of a Storage Queue: leased delivery with a
 * lock (visibility timeout) that `renewLock` extends, redelivery with a higher delivery count when a
 * lock ends, a handle that stays valid until the message is delivered again, delayed sends (the
 * initial visibility timeout), time to live (held or not), and dead letters carrying their reason. It passes the same contract suite as the Azure
 * adapters.
 *
 * Built for a million messages: `send`, `receive`, `complete` cost O(log n) per message (a ready
 * list, a heap of lock ends and delays, a heap of expiries), never a scan. A `receive` that finds
 * nothing waits on the clock until a message is sent or given back, a lock or a delay ends, or its
 * wait is over. Nothing
 * survives the process.
 */
export class MemoryTaskQueue implements TaskQueue {
  readonly name: string;
  readonly lockDurationInMs: number;
  readonly maxMessageBytes: number;
  readonly clock: Clock;
  private readonly messages = new Map<string, Stored>();
  private readonly ready = new Fifo<{ stored: Stored; ticket: number }>();
  private readonly locks = new MinHeap<LockEntry>((a, b) => a.at < b.at);
  private readonly expiries = new MinHeap<ExpiryEntry>((a, b) => a.at < b.at);
  /** Receives waiting for a message: aborted by a send or a give-back to wake them. */
  private readonly waiters = new Set<AbortController>();
  private nextId = 1;
  private nextToken = 1;
  private nextTicket = 1;
  private held = 0;
  private delayed = 0;
  /** Heap entries of deleted messages, dropped in bulk once they are half of a heap (memory stays O(messages)). */
  private staleEntries = 0;
  private dlq: MemoryTaskQueue | undefined;
  private closed = false;

  constructor(options: MemoryTaskQueueOptions = {}) {
    this.name = options.name ?? 'memory';
    this.lockDurationInMs = options.lockDurationInMs ?? 30_000;
    this.maxMessageBytes = options.maxMessageBytes ?? 64 * 1024;
    this.clock = options.clock ?? realClock;
    this.dlq = options.deadLetter;
    if (!(this.lockDurationInMs > 0))
      throw new JobqError('invalid-config', `lockDurationInMs must be positive, got ${this.lockDurationInMs}`);
  }

  send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    return settle(() => {
      this.check(options);
      const list = Array.isArray(messages) ? (messages as readonly OutgoingMessage[]) : [messages as OutgoingMessage];
      for (const m of list) {
        assertMessageFits(this.name, m, this.maxMessageBytes);
        assertValidTimeToLive(this.name, m);
        assertValidDelay(this.name, m);
      }
      const now = this.clock.now();
      const enqueuedAt = new Date(now);
      for (const m of list) {
        // Both count from the send (the delay is smaller than the time to live, checked above).
        const expiresAt = now + (m.timeToLiveInMs ?? Number.POSITIVE_INFINITY);
        const delay = m.delayInMs ?? 0;
        const stored: Stored = {
          messageId: String(this.nextId++),
          body: m.body,
          enqueuedAt,
          deliveryCount: 0,
          visibleAt: now + delay,
          expiresAt,
          lockToken: 0,
          held: false,
          delayed: false,
          ticket: 0,
        };
        this.messages.set(stored.messageId, stored);
        if (delay > 0) this.holdBack(stored);
        else this.makeReady(stored);
        if (expiresAt !== Number.POSITIVE_INFINITY) this.expiries.push({ stored, at: expiresAt });
      }
      if (list.length > 0) this.wakeReceivers();
    });
  }

  async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const max = Math.max(0, Math.floor(options.maxMessages));
    const deadline = this.clock.now() + Math.max(0, options.maxWaitTimeInMs);
    for (;;) {
      this.check(options);
      const now = this.clock.now();
      this.tidy(now);
      const out: ReceivedMessage[] = [];
      while (out.length < max) {
        const entry = this.ready.shift();
        if (entry === undefined) break;
        const { stored, ticket } = entry;
        if (stored.ticket !== ticket || stored.held || this.messages.get(stored.messageId) !== stored) continue;
        stored.deliveryCount++;
        stored.lockToken = this.nextToken++;
        stored.visibleAt = now + this.lockDurationInMs;
        this.hold(stored);
        out.push(
          new Handle(stored.messageId, stored.body, stored.deliveryCount, stored.enqueuedAt, new Date(stored.visibleAt), stored.lockToken),
        );
      }
      if (out.length > 0 || max === 0 || now >= deadline) return out;
      const nextLockEnd = this.locks.peek()?.at ?? Number.POSITIVE_INFINITY;
      await this.waitForWork(Math.max(1, Math.min(deadline, nextLockEnd) - now), options.abortSignal);
    }
  }

  renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      const stored = this.heldMessage(message, 'renew the lock of', options);
      stored.visibleAt = this.clock.now() + this.lockDurationInMs;
      // Its lock entry stays and is moved when it reaches the top; a message whose lock had ended
      // (and was not delivered again: the handle still matches) is held again.
      if (!stored.held) this.hold(stored);
      message.lockedUntil = new Date(stored.visibleAt);
    });
  }

  complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      this.delete(this.heldMessage(message, 'complete', options));
    });
  }

  abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      const stored = this.heldMessage(message, 'abandon', options);
      stored.lockToken = 0;
      if (stored.held) {
        stored.held = false;
        this.held--;
        this.makeReady(stored);
      }
      this.wakeReceivers();
    });
  }

  async deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    await settle(() => this.heldMessage(message, 'dead-letter', options));
    const dlq = this.deadLetterQueue();
    await dlq.send({ body: deadLetterBody(message.body, reason, dlq.maxMessageBytes) }, options);
    const stored = this.messages.get(message.messageId);
    if (stored !== undefined) this.delete(stored);
  }

  peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    return settle(() => {
      this.check(options);
      this.tidy(this.clock.now());
      const out: PeekedMessage[] = [];
      for (const { stored, ticket } of this.ready.values()) {
        if (out.length >= maxMessages) break;
        if (stored.ticket !== ticket || stored.held || this.messages.get(stored.messageId) !== stored) continue;
        out.push({ messageId: stored.messageId, body: stored.body, enqueuedAt: stored.enqueuedAt, deliveryCount: stored.deliveryCount });
      }
      return out;
    });
  }

  approximateMessageCount(options?: OperationOptions): Promise<number> {
    return settle(() => {
      this.check(options);
      this.tidy(this.clock.now());
      return this.messages.size;
    });
  }

  /** How many messages are visible, held and delayed now (expired ones dropped first). Synchronous, for tests and simulations. */
  counts(): MemoryQueueCounts {
    this.tidy(this.clock.now());
    return { messages: this.messages.size, visible: this.messages.size - this.held - this.delayed, held: this.held, delayed: this.delayed };
  }

  deadLetterQueue(): MemoryTaskQueue {
    this.dlq ??= new MemoryTaskQueue({
      name: `${this.name}-failed`,
      lockDurationInMs: this.lockDurationInMs,
      maxMessageBytes: this.maxMessageBytes,
      clock: this.clock,
    });
    return this.dlq;
  }

  close(): Promise<void> {
    this.closed = true;
    this.wakeReceivers();
    return Promise.resolve();
  }

  // ---- internals -------------------------------------------------------------------------------

  private check(options: OperationOptions | undefined): void {
    if (options?.abortSignal?.aborted) throw new JobqError('aborted', `operation on queue "${this.name}" was aborted`);
    if (this.closed) throw new JobqError('invalid-argument', `queue "${this.name}" is closed`);
  }

  private makeReady(stored: Stored): void {
    stored.ticket = this.nextTicket++;
    this.ready.push({ stored, ticket: stored.ticket });
  }

  /** Keeps a message sent with a delay out of reach until `visibleAt`: an entry of the lock heap, which `tidy` releases like an ended lock. */
  private holdBack(stored: Stored): void {
    stored.delayed = true;
    this.delayed++;
    stored.ticket = this.nextTicket++;
    this.locks.push({ stored, ticket: stored.ticket, at: stored.visibleAt });
  }

  private hold(stored: Stored): void {
    stored.held = true;
    this.held++;
    stored.ticket = this.nextTicket++;
    this.locks.push({ stored, ticket: stored.ticket, at: stored.visibleAt });
  }

  private delete(stored: Stored): void {
    if (this.messages.get(stored.messageId) !== stored) return;
    this.messages.delete(stored.messageId);
    if (stored.held) this.held--;
    if (stored.delayed) this.delayed--;
    stored.held = false;
    stored.delayed = false;
    stored.ticket = 0;
    if (++this.staleEntries >= 1_024 && this.staleEntries * 2 >= this.locks.size + this.expiries.size) {
      const live = (entry: { stored: Stored }): boolean => this.messages.get(entry.stored.messageId) === entry.stored;
      this.locks.retain((entry) => live(entry) && entry.stored.ticket === entry.ticket);
      this.expiries.retain(live);
      this.staleEntries = 0;
    }
  }

  /**
   * Drops the messages whose time to live has run out (held or not, as Storage Queues do) and makes
   * the messages whose lock or delay ended visible.
   */
  private tidy(now: number): void {
    for (let top = this.expiries.peek(); top !== undefined && top.at <= now; top = this.expiries.peek()) {
      this.expiries.pop();
      this.delete(top.stored);
    }
    let released = false;
    for (let top = this.locks.peek(); top !== undefined && top.at <= now; top = this.locks.peek()) {
      this.locks.pop();
      const { stored, ticket } = top;
      if (stored.ticket !== ticket || !(stored.held || stored.delayed) || this.messages.get(stored.messageId) !== stored) continue;
      if (stored.visibleAt > now) {
        // Renewed since this entry was made: its lock ends later.
        this.locks.push({ stored, ticket, at: stored.visibleAt });
        continue;
      }
      if (stored.delayed) {
        stored.delayed = false;
        this.delayed--;
      } else {
        stored.held = false;
        this.held--;
      }
      this.makeReady(stored);
      released = true;
    }
    if (released) this.wakeReceivers();
  }

  /** The stored message a handle holds the lock of; `lock-lost` when it no longer does. */
  private heldMessage(message: ReceivedMessage, what: string, options: OperationOptions | undefined): Stored {
    this.check(options);
    this.tidy(this.clock.now());
    const stored = this.messages.get(message.messageId);
    const token = message instanceof Handle ? message.lockToken : -1;
    if (stored === undefined || stored.lockToken !== token || token === 0) {
      throw new JobqError('lock-lost', `cannot ${what} message ${message.messageId} on queue "${this.name}": its lock is no longer held`);
    }
    return stored;
  }

  /** Waits up to `ms` on the clock, or until a message is sent or given back, or `signal` fires. */
  private async waitForWork(ms: number, signal: AbortSignal | undefined): Promise<void> {
    const wake = new AbortController();
    const onAbort = (): void => wake.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.waiters.add(wake);
    try {
      await this.clock.sleep(ms, wake.signal);
    } finally {
      this.waiters.delete(wake);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private wakeReceivers(): void {
    if (this.waiters.size === 0) return;
    for (const waiter of this.waiters) waiter.abort();
    this.waiters.clear();
  }
}
