import { createRequire } from 'node:module';
import type {
  PeekMessagesOptions,
  ServiceBusAdministrationClient,
  ServiceBusMessage,
  ServiceBusMessageBatch,
  ServiceBusReceivedMessage,
  ServiceBusReceiver,
  ServiceBusSender,
} from '@azure/service-bus';
import {
  JobqError,
  assertMessageFits,
  assertValidDelay,
  assertValidTimeToLive,
  deadLetterBody,
  isJobqError,
  sleep,
  utf8ByteLength,
  type Instruments,
  type OperationOptions,
  type OutgoingMessage,
  type PeekedMessage,
  type ReceiveOptions,
  type ReceivedMessage,
  type TaskQueue,
} from '@jobq/ports';
import { disableNagle, type ClientLease } from './connection';
import { translateError } from './errors';
import { FillWait } from './fill-wait';
import { parseIsoDuration } from './iso-duration';
import { serviceBusMessageId } from './message-id';

/** Azure's limit on a message (Standard tier), body and properties together. */
export const SERVICE_BUS_MAX_TRANSFER_BYTES = 262_144;
/** Room kept for the message's properties and annotations under the transfer limit. */
export const SERVICE_BUS_PROPERTY_RESERVE_BYTES = 4_096;
/** Service Bus answers a peek with at most this many messages; jobq counts by peeking up to it. */
export const SERVICE_BUS_MAX_PEEK = 250;
/** Longest dead-letter reason kept (the first line of the reason), in characters. */
export const DEAD_LETTER_REASON_MAX_CHARS = 256;
/** Longest dead-letter description kept (the whole reason), in UTF-8 bytes. */
export const DEAD_LETTER_DESCRIPTION_MAX_BYTES = 4_096;

/** Options of {@link ServiceBusTaskQueue}, fixed when the queue is opened. */
export interface ServiceBusTaskQueueSettings {
  /** The lock duration the queue is believed to have (lowered when a received lock is shorter). */
  lockDurationInMs: number;
  /** Limit of each administration call. */
  operationTimeoutInMs: number;
  /** The longest `receive` waits for more messages once the first one is there (see {@link FillWait}). */
  batchFillWaitInMs: number;
  /** Counts each call to the broker (`jobq_storage_requests_total`, `service="servicebus"`); default nowhere. */
  instruments?: Instruments;
}

/** A queue's settings as the administration client reads them (times in ms; `Infinity` = never). */
export interface ServiceBusQueueProperties {
  lockDurationInMs: number;
  maxDeliveryCount: number;
  requiresDuplicateDetection: boolean;
  /** The duplicate detection window; null when duplicate detection is off. */
  duplicateDetectionHistoryTimeWindowInMs: number | null;
  /** `Infinity` when messages never expire (as on the queues jobq creates). */
  defaultMessageTimeToLiveInMs: number;
}

/** What {@link ServiceBusTaskQueue.describe} reports of a queue. */
export interface ServiceBusQueueDescription {
  queueName: string;
  /** Null when they cannot be read: no Data Owner (Manage) role, or a local broker without its admin endpoint. */
  properties: ServiceBusQueueProperties | null;
  /** Messages in the queue (locked ones included). */
  activeMessageCount: number;
  /** Messages in its dead-letter queue. */
  deadLetterMessageCount: number;
  /** `administration`: exact counts; `peek`: counted by peeking, each at most {@link SERVICE_BUS_MAX_PEEK}. */
  countedBy: 'administration' | 'peek';
}

/** Durations past this many ms (about 10 000 years; .NET writes "never" as TimeSpan.MaxValue) are "never". */
const NEVER_MS = 10_000 * 365 * 86_400_000;

type SequenceNumber = NonNullable<PeekMessagesOptions['fromSequenceNumber']>;
/** The `Long` class the SDK itself uses for sequence numbers (a dependency of the SDK, not of jobq). */
const Long = createRequire(require.resolve('@azure/service-bus'))('long') as { fromNumber(value: number): SequenceNumber };
const FIRST_SEQUENCE_NUMBER = Long.fromNumber(1);

/** State shared by a queue and its dead-letter view: the client, the admin client, what was learnt of the queue. */
export class QueueCore {
  sender: ServiceBusSender | undefined;
  /** The link's own limit, once a sender has attached. */
  linkMaxBytes: number | undefined;
  /** True once the administration client was refused (401/403): counts fall back to peeking. */
  adminRefused = false;
  closed = false;
  lockDurationInMs: number;

  constructor(
    readonly lease: ClientLease,
    readonly admin: ServiceBusAdministrationClient | null,
    readonly queueName: string,
    readonly settings: ServiceBusTaskQueueSettings,
  ) {
    this.lockDurationInMs = settings.lockDurationInMs;
  }

  get maxMessageBytes(): number {
    return (
      Math.min(this.linkMaxBytes ?? SERVICE_BUS_MAX_TRANSFER_BYTES, SERVICE_BUS_MAX_TRANSFER_BYTES) - SERVICE_BUS_PROPERTY_RESERVE_BYTES
    );
  }

  /** Lowers the lock duration when a lock just received is clearly shorter than believed. */
  noteLock(observedInMs: number): void {
    const tolerance = Math.max(250, this.lockDurationInMs * 0.05);
    if (observedInMs > 0 && observedInMs + tolerance < this.lockDurationInMs)
      this.lockDurationInMs = Math.max(1_000, Math.floor(observedInMs));
  }
}

class ServiceBusReceivedHandle implements ReceivedMessage {
  /** Completed, abandoned or dead-lettered through this handle: any further settlement is `lock-lost`. */
  settled = false;
  constructor(
    readonly messageId: string,
    readonly body: string,
    readonly deliveryCount: number,
    readonly enqueuedAt: Date | null,
    public lockedUntil: Date,
    readonly raw: ServiceBusReceivedMessage,
    readonly queue: ServiceBusTaskQueue,
  ) {}
}

/** The text of a body read with `skipParsingBodyAsJson`: a data section is UTF-8 bytes. */
export function bodyText(body: unknown): string {
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (typeof body === 'string') return body;
  if (body === undefined || body === null) return '';
  return JSON.stringify(body) ?? '';
}

function idText(id: unknown): string {
  if (typeof id === 'string') return id;
  if (typeof id === 'number') return String(id);
  if (Buffer.isBuffer(id)) return id.toString('hex');
  // A Long (AMQP ulong) or a UUID object: both print themselves.
  if (id !== null && typeof id === 'object') return (id as { toString(): string }).toString();
  return '';
}

/** The start of `text` of at most `max` code points, ending in `…` when cut. */
function cutChars(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, max - 1).join('')}…`;
}

/** The start of `text` of at most `max` UTF-8 bytes, ending in `…` when cut. */
function cutBytes(text: string, max: number): string {
  if (utf8ByteLength(text) <= max) return text;
  let used = utf8ByteLength('…');
  let kept = '';
  for (const ch of text) {
    const size = utf8ByteLength(ch);
    if (used + size > max) break;
    used += size;
    kept += ch;
  }
  return `${kept}…`;
}

/** What jobq puts on a dead-lettered message: the reason's first line (≤ 256 characters) and the whole reason (≤ 4 KiB). */
export function deadLetterProperties(reason: string): { deadLetterReason: string; deadLetterErrorDescription: string } {
  const firstLine = (reason.split(/\r\n|\r|\n/)[0] ?? '').trim();
  return {
    deadLetterReason: cutChars(firstLine, DEAD_LETTER_REASON_MAX_CHARS),
    deadLetterErrorDescription: cutBytes(reason, DEAD_LETTER_DESCRIPTION_MAX_BYTES),
  };
}

/**
 * The reason a dead-lettered message carries, from its two properties: the description when it is
 * the whole reason jobq wrote (it starts with the first line), else both (as the service writes
 * them, e.g. `MaxDeliveryCountExceeded: Message could not be consumed after 10 delivery attempts.`).
 */
export function deadLetterReasonText(reason: string | undefined, description: string | undefined): string | undefined {
  if (!description) return reason || undefined;
  if (!reason) return description;
  const head = reason.endsWith('…') ? reason.slice(0, -1) : reason;
  return description.startsWith(head) ? description : `${reason}: ${description}`;
}

/**
 * The {@link TaskQueue} on an Azure Service Bus queue (peek-lock), or the dead-letter view of one.
 * See the package README for the mapping of each operation to Service Bus.
 */
export class ServiceBusTaskQueue implements TaskQueue {
  readonly name: string;
  private receiver: ServiceBusReceiver | undefined;
  /** `receiveMessages` may not overlap on one receiver: receives wait for each other. */
  private receiving: Promise<unknown> = Promise.resolve();
  private dlq: ServiceBusTaskQueue | undefined;
  /** The top-up wait, from the round trips of this queue's settlements and renewals. */
  private readonly fillWait: FillWait;

  /** @internal use {@link openServiceBusQueue} */
  constructor(
    private readonly core: QueueCore,
    private readonly deadLetterView = false,
    /** The queue whose dead-letter view this is. */
    private readonly main?: ServiceBusTaskQueue,
  ) {
    this.name = deadLetterView ? `${core.queueName}/$DeadLetterQueue` : core.queueName;
    this.fillWait = new FillWait({ ceilingInMs: core.settings.batchFillWaitInMs });
  }

  /**
   * Diagnostic: how long the next receive waits for more messages after its first one (ms) —
   * `batchFillWaitInMs` until a settlement or renewal has measured the link's round trip, then
   * about two round trips (see the package README).
   */
  get fillWaitInMs(): number {
    return this.fillWait.waitInMs;
  }

  /** Runs one request-response call on the receiver link, feeding its duration to the fill wait. */
  private async timed<T>(fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    const result = await fn();
    this.fillWait.observe(performance.now() - start);
    return result;
  }

  get lockDurationInMs(): number {
    return this.core.lockDurationInMs;
  }

  get maxMessageBytes(): number {
    return this.core.maxMessageBytes;
  }

  /**
   * Runs one SDK call under the caller's signal, translating its errors. Each call that reaches the
   * SDK counts once in `jobq_storage_requests_total` (`method` the operation, `status_class` ok or
   * error; docs/metrics.md), unless `counted` is false (a call that sends nothing to the broker).
   */
  private async call<T>(operation: string, options: OperationOptions | undefined, fn: () => Promise<T>, counted = true): Promise<T> {
    const caller = options?.abortSignal;
    if (caller?.aborted) throw new JobqError('aborted', `${operation} on Service Bus queue "${this.name}" was aborted by the caller`);
    if (this.core.closed) throw new JobqError('invalid-argument', `${operation} on Service Bus queue "${this.name}": the queue was closed`);
    const instruments = counted ? this.core.settings.instruments : undefined;
    try {
      const result = await fn();
      instruments?.inc('jobq_storage_requests_total', {
        service: 'servicebus',
        method: operation.replace(/[ -]/g, '_'),
        status_class: 'ok',
      });
      return result;
    } catch (error) {
      instruments?.inc('jobq_storage_requests_total', {
        service: 'servicebus',
        method: operation.replace(/[ -]/g, '_'),
        status_class: 'error',
      });
      throw translateError(error, { operation, queue: this.name, callerAborted: caller?.aborted ?? false });
    }
  }

  private getSender(): ServiceBusSender {
    this.core.sender ??= this.core.lease.client.createSender(this.core.queueName);
    return this.core.sender;
  }

  private getReceiver(): ServiceBusReceiver {
    this.receiver ??= this.core.lease.client.createReceiver(this.core.queueName, {
      receiveMode: 'peekLock',
      // Renewal is explicit (renewLock), so a lost lock reaches the worker.
      maxAutoLockRenewalDurationInMs: 0,
      skipParsingBodyAsJson: true,
      ...(this.deadLetterView ? { subQueueType: 'deadLetter' as const } : {}),
    });
    return this.receiver;
  }

  private async newBatch(options: OperationOptions | undefined): Promise<ServiceBusMessageBatch> {
    // Not counted: it sends no message (the link attaches on the first one).
    const batch = await this.call(
      'send',
      options,
      () => this.getSender().createMessageBatch(options?.abortSignal ? { abortSignal: options.abortSignal } : {}),
      false,
    );
    if (this.core.linkMaxBytes === undefined || batch.maxSizeInBytes < this.core.linkMaxBytes)
      this.core.linkMaxBytes = batch.maxSizeInBytes;
    return batch;
  }

  private tooLarge(message: OutgoingMessage): JobqError {
    const which = message.messageId === undefined ? 'a message' : `message "${message.messageId}"`;
    return new JobqError(
      'message-too-large',
      `${which} for Service Bus queue "${this.name}" does not fit one transfer with its properties`,
      {
        details: { queue: this.name, limit: this.maxMessageBytes },
      },
    );
  }

  async send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    const list: readonly OutgoingMessage[] = Array.isArray(messages)
      ? (messages as readonly OutgoingMessage[])
      : [messages as OutgoingMessage];
    if (this.deadLetterView) {
      throw new JobqError('invalid-argument', `"${this.name}" is a dead-letter queue: Service Bus does not take sends to it`);
    }
    if (options?.abortSignal?.aborted) throw new JobqError('aborted', `send on Service Bus queue "${this.name}" was aborted by the caller`);
    // Every message is checked before anything goes out, so a refused batch sends nothing.
    for (const m of list) {
      assertMessageFits(this.name, m, this.maxMessageBytes);
      assertValidTimeToLive(this.name, m);
      assertValidDelay(this.name, m);
    }
    if (list.length === 0) return;
    const scoped = callSignal(options?.abortSignal);
    try {
      await this.sendAll(list, scoped.signal ? { abortSignal: scoped.signal } : undefined);
    } finally {
      scoped.release();
    }
  }

  private async sendAll(list: readonly OutgoingMessage[], options: OperationOptions | undefined): Promise<void> {
    const sendOptions = options?.abortSignal ? { abortSignal: options.abortSignal } : {};
    // Delays count from the start of the send: delayed and immediate messages share the batches.
    const now = Date.now();
    // Packed into as few transfers as the link's limit allows (sendMessages(array) would need them all in one).
    let batch = await this.newBatch(options);
    for (const m of list) {
      const message = toServiceBusMessage(m, now);
      if (batch.tryAddMessage(message)) continue;
      if (batch.count === 0) throw this.tooLarge(m);
      const full = batch;
      await this.call('send', options, () => this.getSender().sendMessages(full, sendOptions));
      batch = await this.newBatch(options);
      if (!batch.tryAddMessage(message)) throw this.tooLarge(m);
    }
    const last = batch;
    if (last.count > 0) await this.call('send', options, () => this.getSender().sendMessages(last, sendOptions));
  }

  async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const wanted = Math.max(1, Math.floor(options.maxMessages));
    const turn = this.receiving.then(() => this.receiveNow(wanted, options));
    this.receiving = turn.catch(() => undefined);
    return turn;
  }

  private async receiveNow(wanted: number, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const scoped = callSignal(options.abortSignal);
    try {
      return await this.receiveWith(wanted, options, scoped.signal);
    } finally {
      scoped.release();
    }
  }

  private async receiveWith(wanted: number, options: ReceiveOptions, signal: AbortSignal | undefined): Promise<ReceivedMessage[]> {
    const receiver = this.getReceiver();
    const abort = signal ? { abortSignal: signal } : {};
    // One message with the whole wait, then a short top-up: the SDK lingers up to 1 s after the
    // first message of a multi-message receive, which would delay a lone message. The top-up waits
    // about two round trips of the link (messages already on the broker come one round trip after
    // the credit); when it ends, the SDK drains the credit, which still brings what the broker holds.
    const first = await this.call('receive', options, () =>
      receiver.receiveMessages(1, { maxWaitTimeInMs: Math.max(0, options.maxWaitTimeInMs), ...abort }),
    );
    const received = [...first];
    if (received.length > 0 && wanted > 1) {
      disableNagle(this.core.lease.client);
      try {
        received.push(
          ...(await this.call('receive', options, () =>
            receiver.receiveMessages(wanted - 1, { maxWaitTimeInMs: this.fillWait.waitInMs, ...abort }),
          )),
        );
      } catch {
        // The first message is held already: return it; a lasting failure shows on the next receive.
      }
    }
    const now = Date.now();
    return received.map((m) => {
      const lockedUntil = m.lockedUntilUtc ?? new Date(now + this.lockDurationInMs);
      if (m.lockedUntilUtc) this.core.noteLock(m.lockedUntilUtc.getTime() - now);
      return new ServiceBusReceivedHandle(
        idText(m.messageId),
        this.bodyOf(m),
        (m.deliveryCount ?? 0) + 1,
        m.enqueuedTimeUtc ?? null,
        lockedUntil,
        m,
        this,
      );
    });
  }

  /** The body as jobq reads it; in the dead-letter view, with the reason it was dead-lettered for. */
  private bodyOf(m: ServiceBusReceivedMessage): string {
    const text = bodyText(m.body);
    if (!this.deadLetterView) return text;
    const reason = deadLetterReasonText(m.deadLetterReason, m.deadLetterErrorDescription);
    return reason === undefined ? text : deadLetterBody(text, reason, this.maxMessageBytes);
  }

  private async settle(
    operation: string,
    message: ReceivedMessage,
    options: OperationOptions | undefined,
    fn: (raw: ServiceBusReceivedMessage) => Promise<void>,
  ): Promise<void> {
    const m = this.own(message);
    if (m.settled)
      throw new JobqError(
        'lock-lost',
        `${operation} of message ${m.messageId} on Service Bus queue "${this.name}": it was already settled`,
      );
    try {
      await this.call(operation, options, () => this.timed(() => fn(m.raw)));
    } catch (error) {
      if (isJobqError(error, 'lock-lost')) m.settled = true;
      throw error;
    }
    m.settled = true;
  }

  async renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    const m = this.own(message);
    if (m.settled)
      throw new JobqError('lock-lost', `renew lock of message ${m.messageId} on Service Bus queue "${this.name}": it was already settled`);
    m.lockedUntil = await this.call('renew lock', options, () => this.timed(() => this.getReceiver().renewMessageLock(m.raw)));
  }

  async complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    await this.settle('complete', message, options, (raw) => this.getReceiver().completeMessage(raw));
  }

  async abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    await this.settle('abandon', message, options, (raw) => this.getReceiver().abandonMessage(raw));
    message.lockedUntil = new Date();
  }

  async deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    if (this.deadLetterView) {
      throw new JobqError('invalid-argument', `"${this.name}" is a dead-letter queue: its messages cannot be dead-lettered again`);
    }
    await this.settle('dead-letter', message, options, (raw) => this.getReceiver().deadLetterMessage(raw, deadLetterProperties(reason)));
  }

  /**
   * Peeks from the first sequence number on, page by page, up to `max` messages that `keep` accepts,
   * looking at no more than `scanLimit` messages.
   */
  private async peekRaw(
    max: number,
    options: OperationOptions | undefined,
    keep: (m: ServiceBusReceivedMessage) => boolean = () => true,
    scanLimit = max,
  ): Promise<ServiceBusReceivedMessage[]> {
    const receiver = this.getReceiver();
    const out: ServiceBusReceivedMessage[] = [];
    let from = FIRST_SEQUENCE_NUMBER;
    let scanned = 0;
    while (out.length < max && scanned < scanLimit) {
      const count = Math.min(max - out.length, scanLimit - scanned);
      const page = await this.call('peek', options, () =>
        receiver.peekMessages(count, { fromSequenceNumber: from, ...(options?.abortSignal ? { abortSignal: options.abortSignal } : {}) }),
      );
      if (page.length === 0) break;
      scanned += page.length;
      out.push(...page.filter(keep));
      const last = page[page.length - 1]!.sequenceNumber;
      if (last === undefined) break;
      from = last.add(1);
    }
    return out.slice(0, max);
  }

  async peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    const n = Math.max(1, Math.min(SERVICE_BUS_MAX_PEEK, Math.floor(maxMessages)));
    // A scheduled message (sent with a delay not yet passed) is not shown, as on the other backends;
    // the scan looks past up to three pages of them.
    const peeked = await this.peekRaw(n, options, (m) => m.state !== 'scheduled', n + 3 * SERVICE_BUS_MAX_PEEK);
    return peeked.map((m) => ({
      messageId: idText(m.messageId),
      body: this.bodyOf(m),
      enqueuedAt: m.enqueuedTimeUtc ?? null,
      deliveryCount: m.deliveryCount ?? 0,
    }));
  }

  async approximateMessageCount(options?: OperationOptions): Promise<number> {
    const admin = this.core.admin;
    if (admin && !this.core.adminRefused) {
      try {
        const properties = await this.call('count', options, () =>
          admin.getQueueRuntimeProperties(this.core.queueName, { abortSignal: this.adminSignal(options) }),
        );
        return this.deadLetterView ? properties.deadLetterMessageCount : properties.activeMessageCount + properties.scheduledMessageCount;
      } catch (error) {
        // Counting through the administration client needs Data Owner (Manage); without it, peek.
        if (!isJobqError(error, 'auth')) throw error;
        this.core.adminRefused = true;
      }
    }
    return (await this.peekRaw(SERVICE_BUS_MAX_PEEK, options)).length;
  }

  /**
   * The queue's settings and its message and dead-letter counts from the administration client; on
   * 401/403 (no Data Owner role), or with no administration client (a local broker without its
   * admin endpoint), no settings and counts by peeking (at most 250 each). The dead-letter view
   * describes its queue.
   */
  async describe(options?: OperationOptions): Promise<ServiceBusQueueDescription> {
    const admin = this.core.admin;
    const queueName = this.core.queueName;
    if (admin && !this.core.adminRefused) {
      try {
        const [properties, runtime] = await this.call('describe', options, () =>
          Promise.all([
            admin.getQueue(queueName, { abortSignal: this.adminSignal(options) }),
            admin.getQueueRuntimeProperties(queueName, { abortSignal: this.adminSignal(options) }),
          ]),
        );
        const ttl = parseIsoDuration(properties.defaultMessageTimeToLive);
        return {
          queueName,
          properties: {
            lockDurationInMs: parseIsoDuration(properties.lockDuration) ?? this.core.lockDurationInMs,
            maxDeliveryCount: properties.maxDeliveryCount,
            requiresDuplicateDetection: properties.requiresDuplicateDetection,
            duplicateDetectionHistoryTimeWindowInMs: properties.requiresDuplicateDetection
              ? (parseIsoDuration(properties.duplicateDetectionHistoryTimeWindow) ?? null)
              : null,
            defaultMessageTimeToLiveInMs: ttl === undefined || ttl >= NEVER_MS ? Number.POSITIVE_INFINITY : ttl,
          },
          activeMessageCount: runtime.activeMessageCount,
          deadLetterMessageCount: runtime.deadLetterMessageCount,
          countedBy: 'administration',
        };
      } catch (error) {
        if (!isJobqError(error, 'auth')) throw error;
        this.core.adminRefused = true;
      }
    }
    const main = this.main ?? this;
    const [active, dead] = await Promise.all([
      main.peekRaw(SERVICE_BUS_MAX_PEEK, options),
      main.deadLetterQueue().peekRaw(SERVICE_BUS_MAX_PEEK, options),
    ]);
    return { queueName, properties: null, activeMessageCount: active.length, deadLetterMessageCount: dead.length, countedBy: 'peek' };
  }

  private adminSignal(options: OperationOptions | undefined): AbortSignal {
    const limit = AbortSignal.timeout(this.core.settings.operationTimeoutInMs);
    return options?.abortSignal ? AbortSignal.any([options.abortSignal, limit]) : limit;
  }

  deadLetterQueue(): ServiceBusTaskQueue {
    if (this.deadLetterView) return this;
    this.dlq ??= new ServiceBusTaskQueue(this.core, true, this);
    return this.dlq;
  }

  /** Deletes the queue (and with it its dead-letter queue) through the administration client; tests and teardown. */
  async deleteQueue(options?: OperationOptions): Promise<void> {
    const admin = this.core.admin;
    if (!admin)
      throw new JobqError('invalid-config', `deleting Service Bus queue "${this.core.queueName}" needs the administration endpoint`);
    try {
      await this.call('delete', options, () => admin.deleteQueue(this.core.queueName, { abortSignal: this.adminSignal(options) }));
    } catch (error) {
      if (!isJobqError(error, 'not-found')) throw error;
    }
  }

  /** Closes this queue's links and releases the shared client (closed with the last queue on it). */
  async close(): Promise<void> {
    if (this.deadLetterView) {
      await this.closeReceiver();
      return;
    }
    if (this.core.closed) return;
    this.core.closed = true;
    await this.closeReceiver();
    await this.dlq?.closeReceiver();
    await this.core.sender?.close().catch(() => undefined);
    // Let a pending receive settle before the connection goes.
    await Promise.race([this.receiving, sleep(100)]);
    await this.core.lease.release();
  }

  private async closeReceiver(): Promise<void> {
    const receiver = this.receiver;
    this.receiver = undefined;
    await receiver?.close().catch(() => undefined);
  }

  private own(message: ReceivedMessage): ServiceBusReceivedHandle {
    if (!(message instanceof ServiceBusReceivedHandle) || message.queue !== this) {
      throw new JobqError('invalid-argument', `message ${message.messageId} was not received from Service Bus queue "${this.name}"`);
    }
    return message;
  }
}

/** Per caller signal, the controllers of the SDK calls running under it (see {@link callSignal}). */
const callsUnder = new WeakMap<AbortSignal, Set<AbortController>>();

/**
 * A signal of one SDK call's own that aborts with `caller`, let go once the call is over (`release`).
 * The SDK (7.9.5) leaves an abort listener on the signal of every receive that drains its link's
 * credit (an empty receive does), and adds one per send in flight; callers such as the worker and
 * the coordinator pass one long-lived signal to every call, where the first would pile up for the
 * life of the process and the second trip Node's warning at ten concurrent sends. The caller's
 * signal gets one listener, whatever the number of calls.
 */
function callSignal(caller: AbortSignal | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (!caller) return { signal: undefined, release: () => undefined };
  const controller = new AbortController();
  if (caller.aborted) {
    controller.abort(caller.reason);
    return { signal: controller.signal, release: () => undefined };
  }
  let calls = callsUnder.get(caller);
  if (!calls) {
    const running = new Set<AbortController>();
    calls = running;
    callsUnder.set(caller, running);
    caller.addEventListener(
      'abort',
      () => {
        for (const call of running) call.abort(caller.reason);
        running.clear();
      },
      { once: true },
    );
  }
  const own = calls;
  own.add(controller);
  return { signal: controller.signal, release: () => own.delete(controller) };
}

/**
 * The Service Bus message for an outgoing jobq message: the body as UTF-8 bytes (a data section); a
 * delay as `scheduledEnqueueTimeUtc` (`now` + the delay). Service Bus counts a scheduled message's
 * time to live from its scheduled time and the port from the send, so the delay is taken off it
 * (the port keeps the delay below a finite time to live).
 */
export function toServiceBusMessage(message: OutgoingMessage, now = Date.now()): ServiceBusMessage {
  const ttl = message.timeToLiveInMs;
  const delay = message.delayInMs ?? 0;
  return {
    body: Buffer.from(message.body, 'utf8'),
    messageId: serviceBusMessageId(message.messageId),
    // Infinity: no time to live of its own (the queue's default; none on the queues jobq creates).
    ...(ttl === undefined || ttl === Number.POSITIVE_INFINITY ? {} : { timeToLive: Math.max(1, Math.ceil(ttl - delay)) }),
    ...(delay > 0 ? { scheduledEnqueueTimeUtc: new Date(now + Math.ceil(delay)) } : {}),
  };
}
