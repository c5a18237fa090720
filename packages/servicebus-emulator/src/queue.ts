/**
 * One queue and its dead-letter sub-queue: sequence numbers, locks, delivery counts, dead-lettering,
 * time to live, duplicate detection, deferral and scheduling. Time comes from the broker's clock;
 * expiry is evaluated by `sweep()` and before every operation. See README.md, "Queue semantics".
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { types, type AmqpMessage, encodeMessage, messageIdKey, plainMap, field } from './amqp';
import type { QueueInfo, QueueProperties, QueueRuntimeCounts } from './types';

export type MessageState = 'active' | 'deferred' | 'scheduled';

export interface StoredMessage {
  sequenceNumber: number;
  message: AmqpMessage;
  size: number;
  enqueuedAt: number;
  expiresAt: number;
  /** Failed deliveries so far (abandons and lock expiries): the zero-based AMQP `delivery-count`. */
  deliveryCount: number;
  state: MessageState;
  scheduledAt: number;
  lock: { token: Buffer; until: number } | undefined;
  sub: SubQueue;
}

export type Outcome = 'complete' | 'abandon' | 'defer' | 'dead-letter';

export interface DeadLetterDetails {
  reason?: string | undefined;
  description?: string | undefined;
  propertiesToModify?: Record<string, unknown> | undefined;
}

/** Counters and counts of one queue (its dead-letter queue included), as `stats().queues[name]` reports them. */
export interface QueueStats {
  messagesIn: number;
  framesIn: number;
  deliveries: number;
  dispositions: { complete: number; abandon: number; deadLetter: number; defer: number; lockLost: number };
  managementOps: Record<string, number>;
  cbsPuts: number;
  dedupDrops: number;
  lockExpiries: number;
  autoDeadLetters: { maxDeliveryCount: number; ttlExpired: number };
  ttlDrops: number;
  bytesHeld: number;
  active: number;
  locked: number;
  deferred: number;
  scheduled: number;
  deadLetter: number;
}

/** Why an operation was refused, as an AMQP condition. */
export class BrokerError extends Error {
  constructor(
    readonly condition: string,
    description: string,
  ) {
    super(description);
    this.name = 'BrokerError';
  }
}

export const LOCK_LOST = 'com.microsoft:message-lock-lost';

/** The lock token as a key, in the byte order sent and in .NET GUID byte order. */
export function lockKeys(token: Buffer): [string, string] {
  const g = Buffer.from(token);
  g.subarray(0, 4).reverse();
  g.subarray(4, 6).reverse();
  g.subarray(6, 8).reverse();
  return [token.toString('hex'), g.toString('hex')];
}

const MB = 1024 * 1024;

/** A list of sequence numbers ready for delivery, in order; entries are checked when taken. */
class ReadyList {
  private items: number[] = [];
  private head = 0;

  push(seq: number): void {
    const items = this.items;
    if (items.length === this.head || items[items.length - 1]! < seq) {
      items.push(seq);
      return;
    }
    let lo = this.head;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    items.splice(lo, 0, seq);
  }

  shift(): number | undefined {
    if (this.head >= this.items.length) return undefined;
    const seq = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return seq;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

/** The main queue or its dead-letter queue. */
export class SubQueue {
  readonly messages = new Map<number, StoredMessage>();
  readonly locks = new Map<string, StoredMessage>();
  private readonly ready = new ReadyList();
  /** Called when messages may have become available. */
  onAvailable: () => void = () => undefined;

  constructor(
    readonly queue: Queue,
    readonly isDeadLetter: boolean,
  ) {}

  get path(): string {
    return this.isDeadLetter ? `${this.queue.name}/$DeadLetterQueue` : this.queue.name;
  }

  /** Adds a message that is ready now (or scheduled, per its state). */
  put(m: StoredMessage): void {
    m.sub = this;
    this.messages.set(m.sequenceNumber, m);
    if (m.state === 'active') this.ready.push(m.sequenceNumber);
    if (m.state === 'scheduled') this.noteDeadline(m.scheduledAt);
    else if (!this.isDeadLetter) this.noteDeadline(m.expiresAt);
  }

  private dropLock(m: StoredMessage): void {
    if (m.lock) for (const key of lockKeys(m.lock.token)) this.locks.delete(key);
    m.lock = undefined;
  }

  remove(m: StoredMessage): void {
    this.dropLock(m);
    this.messages.delete(m.sequenceNumber);
    this.queue.bytesHeld -= m.size;
  }

  /** The next deliverable message, locked (peek-lock) or removed (receive-and-delete). */
  take(mode: 'peekLock' | 'receiveAndDelete'): StoredMessage | undefined {
    const now = this.queue.now();
    for (;;) {
      const seq = this.ready.shift();
      if (seq === undefined) return undefined;
      const m = this.messages.get(seq);
      if (!m || m.state !== 'active' || m.lock) continue;
      if (!this.isDeadLetter && m.expiresAt <= now) {
        this.queue.expire(m);
        continue;
      }
      this.queue.stats.deliveries++;
      if (mode === 'receiveAndDelete') {
        this.remove(m);
      } else {
        this.lock(m, now);
      }
      return m;
    }
  }

  lock(m: StoredMessage, now: number): void {
    this.dropLock(m);
    const token = randomBytes(16);
    m.lock = { token, until: now + this.queue.properties.lockDurationMs };
    this.noteDeadline(m.lock.until);
    for (const key of lockKeys(token)) this.locks.set(key, m);
  }

  /** The locked message for a token in either byte order, when its lock is still held. */
  locked(token: Buffer): StoredMessage | undefined {
    const m = this.locks.get(token.toString('hex'));
    if (!m || !m.lock || m.lock.until <= this.queue.now()) return undefined;
    return m;
  }

  renew(token: Buffer): number | undefined {
    const m = this.locked(token);
    if (!m || !m.lock) return undefined;
    m.lock.until = this.queue.now() + this.queue.properties.lockDurationMs;
    return m.lock.until;
  }

  /** Settles a locked message; false when the lock is unknown or expired. */
  settle(token: Buffer, outcome: Outcome, details: DeadLetterDetails = {}): boolean {
    const m = this.locked(token);
    const d = this.queue.stats.dispositions;
    if (!m) {
      d.lockLost++;
      return false;
    }
    if (outcome === 'dead-letter' && this.isDeadLetter) {
      throw new BrokerError('amqp:not-allowed', `a message in the dead-letter queue of "${this.queue.name}" cannot be dead-lettered`);
    }
    this.dropLock(m);
    switch (outcome) {
      case 'complete':
        d.complete++;
        this.remove(m);
        break;
      case 'abandon':
        d.abandon++;
        this.modifyProperties(m, details.propertiesToModify);
        this.failDelivery(m);
        break;
      case 'defer':
        d.defer++;
        this.modifyProperties(m, details.propertiesToModify);
        m.state = 'deferred';
        // As in Azure, the next delivery (receive-by-sequence-number) shows one more; never dead-letters.
        m.deliveryCount++;
        break;
      case 'dead-letter':
        d.deadLetter++;
        this.queue.deadLetter(m, details.reason, details.description, details.propertiesToModify);
        break;
    }
    return true;
  }

  /** `propertiesToModify` of an abandon or defer: merged into the application properties, as Service Bus does. */
  private modifyProperties(m: StoredMessage, props: Record<string, unknown> | undefined): void {
    if (!props || Object.keys(props).length === 0) return;
    m.message.application_properties = { ...plainMap(m.message.application_properties), ...props };
  }

  /** A delivery attempt failed (abandon or lock expiry): count it, dead-letter past MaxDeliveryCount. */
  failDelivery(m: StoredMessage): void {
    m.deliveryCount++;
    if (!this.isDeadLetter && m.deliveryCount >= this.queue.properties.maxDeliveryCount) {
      this.queue.stats.autoDeadLetters.maxDeliveryCount++;
      this.queue.deadLetter(
        m,
        'MaxDeliveryCountExceeded',
        `Message could not be consumed after ${this.queue.properties.maxDeliveryCount} delivery attempts.`,
      );
      return;
    }
    if (!this.isDeadLetter) this.noteDeadline(m.expiresAt);
    if (m.state === 'active') {
      this.ready.push(m.sequenceNumber);
      this.onAvailable();
    }
  }

  /** Expired locks, expired messages and scheduled messages that fell due. */
  sweep(now: number): boolean {
    if (now < this.nextDeadline) return false;
    this.nextDeadline = Infinity;
    let available = false;
    for (const m of this.messages.values()) {
      if (m.lock) {
        if (m.lock.until > now) {
          this.noteDeadline(m.lock.until);
          continue;
        }
        this.dropLock(m);
        this.queue.stats.lockExpiries++;
        this.failDelivery(m);
        available = true;
      } else if (m.state === 'scheduled') {
        if (m.scheduledAt > now) {
          this.noteDeadline(m.scheduledAt);
          continue;
        }
        m.state = 'active';
        m.enqueuedAt = m.scheduledAt;
        this.ready.push(m.sequenceNumber);
        this.noteDeadline(m.expiresAt);
        available = true;
      } else if (!this.isDeadLetter) {
        if (m.expiresAt <= now) this.queue.expire(m);
        else this.noteDeadline(m.expiresAt);
      }
    }
    return available;
  }

  /** The earliest time a lock, a schedule or a time to live may need the sweep. */
  private nextDeadline = Infinity;

  private noteDeadline(t: number): void {
    if (t < this.nextDeadline) this.nextDeadline = t;
  }

  /** Messages by sequence number from `from` on, locked and deferred ones included. */
  peek(from: number, count: number): StoredMessage[] {
    const list = [...this.messages.values()].filter((m) => m.sequenceNumber >= from);
    list.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
    return list.slice(0, count);
  }

  clear(): void {
    for (const m of [...this.messages.values()]) this.remove(m);
    this.ready.clear();
  }
}

/** A {@link QueueStats} with every counter and count at zero. */
export function emptyQueueStats(): QueueStats {
  return {
    messagesIn: 0,
    framesIn: 0,
    deliveries: 0,
    dispositions: { complete: 0, abandon: 0, deadLetter: 0, defer: 0, lockLost: 0 },
    managementOps: {},
    cbsPuts: 0,
    dedupDrops: 0,
    lockExpiries: 0,
    autoDeadLetters: { maxDeliveryCount: 0, ttlExpired: 0 },
    ttlDrops: 0,
    bytesHeld: 0,
    active: 0,
    locked: 0,
    deferred: 0,
    scheduled: 0,
    deadLetter: 0,
  };
}

export interface EnqueueResult {
  sequenceNumber: number | undefined;
  duplicate: boolean;
}

export class Queue {
  readonly main: SubQueue;
  readonly deadLetterQueue: SubQueue;
  readonly stats = emptyQueueStats();
  bytesHeld = 0;
  readonly createdAt: Date;
  updatedAt: Date;
  accessedAt: Date;
  /** Message ids seen within the duplicate detection window → when they leave it, in insertion (= time) order. */
  private readonly seen = new Map<string, number>();

  constructor(
    public name: string,
    public properties: QueueProperties,
    readonly now: () => number,
    private readonly nextSequenceNumber: () => number,
  ) {
    this.main = new SubQueue(this, false);
    this.deadLetterQueue = new SubQueue(this, true);
    this.createdAt = new Date(now());
    this.updatedAt = this.createdAt;
    this.accessedAt = this.createdAt;
  }

  /** Checks that `bytes` more fit in the queue; throws `amqp:resource-limit-exceeded`. */
  checkRoom(bytes: number): void {
    const max = this.properties.maxSizeInMegabytes * MB;
    if (this.bytesHeld + bytes > max) {
      throw new BrokerError(
        'amqp:resource-limit-exceeded',
        `The queue "${this.name}" is full: it holds ${this.bytesHeld} bytes of its ${this.properties.maxSizeInMegabytes} MB (MaxSizeInMegabytes).`,
      );
    }
  }

  /** The message id as a duplicate detection key; undefined when detection is off or there is no id. */
  private dedupKey(message: AmqpMessage): string | undefined {
    if (!this.properties.requiresDuplicateDetection) return undefined;
    return messageIdKey(message.message_id);
  }

  /** True when the id was seen within the duplicate detection window. */
  private isDuplicate(key: string, now: number): boolean {
    this.forgetSeen(now);
    const until = this.seen.get(key);
    return until !== undefined && until > now;
  }

  /** Records an accepted message's id; it goes to the end, so the map stays in time order. */
  private rememberSeen(key: string, now: number): void {
    this.seen.delete(key);
    this.seen.set(key, now + this.properties.duplicateDetectionHistoryTimeWindowMs);
  }

  /**
   * Drops ids that left the window: from the oldest, up to the first still inside it (the window is
   * the same for every entry, so the rest are newer). Constant time per send on average.
   */
  private forgetSeen(now: number): void {
    for (const [key, until] of this.seen) {
      if (until > now) break;
      this.seen.delete(key);
    }
  }

  /** Adds a message sent to the queue (scheduled when it carries a future `x-opt-scheduled-enqueue-time`). */
  enqueue(message: AmqpMessage, size: number, scheduledAt?: number): EnqueueResult {
    const now = this.now();
    this.accessedAt = new Date(now);
    this.stats.messagesIn++;
    const dedupKey = this.dedupKey(message);
    if (dedupKey !== undefined && this.isDuplicate(dedupKey, now)) {
      this.stats.dedupDrops++;
      return { sequenceNumber: undefined, duplicate: true };
    }
    this.checkRoom(size);
    // Only a message the queue took counts as seen: one refused for room may be sent again.
    if (dedupKey !== undefined) this.rememberSeen(dedupKey, now);
    // Delivery annotations are for one hop only.
    delete message.delivery_annotations;
    // Service Bus gives every message an id; the SDK's lock renewal keys on it.
    if (message.message_id === undefined || message.message_id === null) message.message_id = randomUUID().replace(/-/g, '');
    const annotations = plainMap(message.message_annotations);
    let at = scheduledAt;
    if (at === undefined) {
      const s = annotations['x-opt-scheduled-enqueue-time'];
      if (s instanceof Date) at = s.getTime();
      else if (typeof s === 'number') at = s;
    }
    const scheduled = at !== undefined && at > now;
    const enqueuedAt = scheduled ? (at as number) : now;
    const ttlHeader = typeof message.ttl === 'number' && message.ttl > 0 ? message.ttl : Infinity;
    const ttl = Math.min(ttlHeader, this.properties.defaultMessageTimeToLiveMs);
    const m: StoredMessage = {
      sequenceNumber: this.nextSequenceNumber(),
      message,
      size,
      enqueuedAt,
      expiresAt: enqueuedAt + ttl,
      deliveryCount: 0,
      state: scheduled ? 'scheduled' : 'active',
      scheduledAt: scheduled ? (at as number) : 0,
      lock: undefined,
      sub: this.main,
    };
    this.bytesHeld += size;
    this.main.put(m);
    if (!scheduled) this.main.onAvailable();
    return { sequenceNumber: m.sequenceNumber, duplicate: false };
  }

  /** Moves a message to the dead-letter queue, keeping reason and description as application properties. */
  deadLetter(
    m: StoredMessage,
    reason: string | undefined,
    description: string | undefined,
    propertiesToModify?: Record<string, unknown>,
  ): void {
    m.sub.remove(m);
    const appProps = { ...plainMap(m.message.application_properties), ...(propertiesToModify ?? {}) };
    if (reason !== undefined) appProps.DeadLetterReason = reason;
    if (description !== undefined) appProps.DeadLetterErrorDescription = description;
    // The SDK reads the queue it was dead-lettered from as deadLetterSource.
    const annotations = { ...plainMap(m.message.message_annotations), 'x-opt-deadletter-source': this.name };
    const message: AmqpMessage = { ...m.message, application_properties: appProps, message_annotations: annotations };
    const size = encodeMessage(message).length;
    const moved: StoredMessage = { ...m, message, size, state: 'active', lock: undefined, sub: this.deadLetterQueue };
    this.bytesHeld += size;
    this.deadLetterQueue.put(moved);
    this.deadLetterQueue.onAvailable();
  }

  /** A message whose time to live passed: dropped, or dead-lettered with `TTLExpiredException`. */
  expire(m: StoredMessage): void {
    if (this.properties.deadLetteringOnMessageExpiration) {
      this.stats.autoDeadLetters.ttlExpired++;
      this.deadLetter(m, 'TTLExpiredException', 'The message expired and was dead lettered.');
    } else {
      this.stats.ttlDrops++;
      m.sub.remove(m);
    }
  }

  sweep(): void {
    const now = this.now();
    if (this.main.sweep(now)) this.main.onAvailable();
    if (this.deadLetterQueue.sweep(now)) this.deadLetterQueue.onAvailable();
  }

  /** Removes a scheduled message; false when there is none with that number. */
  cancelScheduled(sequenceNumber: number): boolean {
    const m = this.main.messages.get(sequenceNumber);
    if (!m || m.state !== 'scheduled') return false;
    this.main.remove(m);
    return true;
  }

  counts(): QueueRuntimeCounts {
    let active = 0;
    let scheduled = 0;
    let deferred = 0;
    for (const m of this.main.messages.values()) {
      if (m.state === 'active') active++;
      else if (m.state === 'scheduled') scheduled++;
      else deferred++;
    }
    const deadLetter = this.deadLetterQueue.messages.size;
    return { active, deadLetter, scheduled, total: active + deadLetter + scheduled + deferred, sizeInBytes: this.bytesHeld };
  }

  snapshot(): QueueStats {
    const c = this.counts();
    let locked = 0;
    let deferred = 0;
    for (const m of this.main.messages.values()) {
      if (m.lock) locked++;
      if (m.state === 'deferred') deferred++;
    }
    return {
      ...this.stats,
      dispositions: { ...this.stats.dispositions },
      managementOps: { ...this.stats.managementOps },
      autoDeadLetters: { ...this.stats.autoDeadLetters },
      bytesHeld: this.bytesHeld,
      active: c.active,
      locked,
      deferred,
      scheduled: c.scheduled,
      deadLetter: c.deadLetter,
    };
  }

  info(): QueueInfo {
    return {
      name: this.name,
      properties: { ...this.properties },
      createdAt: this.createdAt,
      updatedAt: this.updatedAt,
      accessedAt: this.accessedAt,
      counts: this.counts(),
    };
  }

  clear(): void {
    this.main.clear();
    this.deadLetterQueue.clear();
  }
}

const MESSAGE_STATE: Record<MessageState, number> = { active: 0, deferred: 1, scheduled: 2 };

/** The message as a receiver or a peek sees it: header delivery-count and the broker's annotations added. */
export function deliveredMessage(m: StoredMessage, withLock: boolean): AmqpMessage {
  const annotations: Record<string, unknown> = {
    ...plainMap(m.message.message_annotations),
    'x-opt-sequence-number': types.wrap_long(m.sequenceNumber),
    'x-opt-enqueued-time': new Date(m.enqueuedAt),
  };
  if (m.state !== 'active') annotations['x-opt-message-state'] = types.wrap_int(MESSAGE_STATE[m.state]);
  if (withLock && m.lock) annotations['x-opt-locked-until'] = new Date(m.lock.until);
  else delete annotations['x-opt-locked-until'];
  if (m.state === 'scheduled') annotations['x-opt-scheduled-enqueue-time'] = new Date(m.scheduledAt);
  const out = { ...m.message, delivery_count: m.deliveryCount, message_annotations: annotations } as AmqpMessage;
  const ttl = m.expiresAt - m.enqueuedAt;
  if (field(out, 'ttl') === undefined && Number.isFinite(ttl) && ttl <= 0xffffffff) out.ttl = ttl;
  return out;
}
