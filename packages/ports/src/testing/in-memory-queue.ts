import { JobqError } from '../errors';
import { deadLetterBody } from '../dead-letter';
import { assertMessageFits, assertValidTimeToLive } from '../message-size';
import type { OperationOptions, OutgoingMessage, PeekedMessage, ReceiveOptions, ReceivedMessage, TaskQueue } from '../task-queue';

interface Stored {
  messageId: string;
  body: string;
  enqueuedAt: Date;
  deliveryCount: number;
  visibleAt: number;
  /** When the message expires (`Date.now()` time); Infinity for never. */
  expiresAt: number;
  /** Changes at every delivery, so a handle from an earlier delivery is recognisably stale. */
  lockToken: number;
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

/** Options of {@link InMemoryTaskQueue}. */
export interface InMemoryTaskQueueOptions {
  name?: string;
  lockDurationInMs?: number;
  maxMessageBytes?: number;
  /** Queue that dead-lettered messages go to; one is made when absent. */
  deadLetter?: InMemoryTaskQueue;
}

/**
 * A {@link TaskQueue} in memory, for fast unit tests of services. It passes the same contract
 * suite as the Azure adapters. Not for production: nothing survives the process.
 */
export class InMemoryTaskQueue implements TaskQueue {
  readonly name: string;
  readonly lockDurationInMs: number;
  readonly maxMessageBytes: number;
  private readonly messages = new Map<string, Stored>();
  private nextId = 1;
  private nextToken = 1;
  private dlq: InMemoryTaskQueue | undefined;
  private closed = false;

  constructor(options: InMemoryTaskQueueOptions = {}) {
    this.name = options.name ?? 'memory';
    this.lockDurationInMs = options.lockDurationInMs ?? 30_000;
    this.maxMessageBytes = options.maxMessageBytes ?? 64 * 1024;
    this.dlq = options.deadLetter;
  }

  send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    return settle(() => {
      this.check(options);
      const list = Array.isArray(messages) ? (messages as readonly OutgoingMessage[]) : [messages as OutgoingMessage];
      for (const m of list) {
        assertMessageFits(this.name, m, this.maxMessageBytes);
        assertValidTimeToLive(this.name, m);
      }
      const now = Date.now();
      for (const m of list) {
        const messageId = String(this.nextId++);
        const expiresAt = now + (m.timeToLiveInMs ?? Number.POSITIVE_INFINITY);
        this.messages.set(messageId, { messageId, body: m.body, enqueuedAt: new Date(now), deliveryCount: 0, visibleAt: 0, expiresAt, lockToken: 0 });
      }
    });
  }

  async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const deadline = Date.now() + options.maxWaitTimeInMs;
    for (;;) {
      this.check(options);
      const now = Date.now();
      this.dropExpired(now);
      const out: ReceivedMessage[] = [];
      for (const m of this.messages.values()) {
        if (out.length >= options.maxMessages) break;
        if (m.visibleAt > now) continue;
        m.deliveryCount++;
        m.lockToken = this.nextToken++;
        m.visibleAt = now + this.lockDurationInMs;
        out.push(new Handle(m.messageId, m.body, m.deliveryCount, m.enqueuedAt, new Date(m.visibleAt), m.lockToken));
      }
      if (out.length > 0 || Date.now() >= deadline) return out;
      await new Promise((resolve) => setTimeout(resolve, Math.min(20, Math.max(1, deadline - Date.now()))));
    }
  }

  renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      const stored = this.held(message, 'renew the lock of', options);
      stored.visibleAt = Date.now() + this.lockDurationInMs;
      message.lockedUntil = new Date(stored.visibleAt);
    });
  }

  complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      this.held(message, 'complete', options);
      this.messages.delete(message.messageId);
    });
  }

  abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return settle(() => {
      const stored = this.held(message, 'abandon', options);
      stored.visibleAt = 0;
      stored.lockToken = 0;
    });
  }

  async deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    await settle(() => this.held(message, 'dead-letter', options));
    const dlq = this.deadLetterQueue();
    await dlq.send({ body: deadLetterBody(message.body, reason, dlq.maxMessageBytes) }, options);
    this.messages.delete(message.messageId);
  }

  peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    return settle(() => {
      this.check(options);
      const now = Date.now();
      this.dropExpired(now);
      const visible = [...this.messages.values()].filter((m) => m.visibleAt <= now).slice(0, maxMessages);
      return visible.map((m) => ({ messageId: m.messageId, body: m.body, enqueuedAt: m.enqueuedAt, deliveryCount: m.deliveryCount }));
    });
  }

  approximateMessageCount(options?: OperationOptions): Promise<number> {
    return settle(() => {
      this.check(options);
      this.dropExpired(Date.now());
      return this.messages.size;
    });
  }

  deadLetterQueue(): InMemoryTaskQueue {
    this.dlq ??= new InMemoryTaskQueue({ name: `${this.name}-failed`, lockDurationInMs: this.lockDurationInMs, maxMessageBytes: this.maxMessageBytes });
    return this.dlq;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private check(options: OperationOptions | undefined): void {
    if (options?.abortSignal?.aborted) throw new JobqError('aborted', `operation on queue "${this.name}" was aborted`);
    if (this.closed) throw new JobqError('invalid-argument', `queue "${this.name}" is closed`);
  }

  /** Deletes the messages whose time to live has run out, held or not, as Storage Queues do. */
  private dropExpired(now: number): void {
    for (const [id, m] of this.messages) if (m.expiresAt <= now) this.messages.delete(id);
  }

  private held(message: ReceivedMessage, what: string, options: OperationOptions | undefined): Stored {
    this.check(options);
    this.dropExpired(Date.now());
    const stored = this.messages.get(message.messageId);
    const token = message instanceof Handle ? message.lockToken : -1;
    if (!stored || stored.lockToken !== token || token === 0) {
      throw new JobqError('lock-lost', `cannot ${what} message ${message.messageId} on queue "${this.name}": its lock is no longer held`);
    }
    return stored;
  }
}
