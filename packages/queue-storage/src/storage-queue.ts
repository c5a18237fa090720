import type { QueueClient, QueueServiceClient } from '@azure/storage-queue';
import {
  JobqError,
  assertMessageFits,
  assertValidDelay,
  assertValidTimeToLive,
  deadLetterBody,
  mapLimit,
  queueSafeText,
  sleep,
  type OperationOptions,
  type OutgoingMessage,
  type PeekedMessage,
  type ReceiveOptions,
  type ReceivedMessage,
  type TaskQueue,
} from '@jobq/ports';
import { translateError } from './errors';
import { PollSchedule } from './poll-schedule';

/** Storage Queue's limit on a message, in bytes of text. */
export const STORAGE_QUEUE_MAX_MESSAGE_BYTES = 64 * 1024;
/** Storage Queue returns at most this many messages per receive. */
export const STORAGE_QUEUE_MAX_RECEIVE = 32;
/** The longest initial visibility timeout (delay) Storage Queue takes, and its default time to live: 7 days, in seconds. */
export const STORAGE_QUEUE_MAX_DELAY_SECONDS = 7 * 24 * 3600;

/** Options of {@link StorageTaskQueue}, fixed when the queue is opened. */
export interface StorageTaskQueueSettings {
  /** How long a receive hides a message (its lock); whole seconds, at least 1 s. */
  lockDurationInMs: number;
  /** Limit of each SDK call. */
  operationTimeoutInMs: number;
  /** Sends in flight at once in a batch. */
  sendConcurrency: number;
  /** Longest pause between polls of an empty queue while `receive` waits (reached once the queue has been quiet a while). */
  maxPollIntervalInMs: number;
  /** Pause between polls of an empty queue while `receive` waits, within `hotPollWindowInMs` of the last message received. */
  minPollIntervalInMs: number;
  /** How long after the last message received the polls stay `minPollIntervalInMs` apart; then they back off to `maxPollIntervalInMs`. */
  hotPollWindowInMs: number;
}

class StorageMessage implements ReceivedMessage {
  constructor(
    readonly messageId: string,
    readonly body: string,
    readonly deliveryCount: number,
    readonly enqueuedAt: Date | null,
    public lockedUntil: Date,
    /** The pop receipt proves the lock; it changes at every renewal. */
    public popReceipt: string,
    readonly queue: StorageTaskQueue,
  ) {}
}

/** A message's time to live as Storage Queue takes it: whole seconds (rounded up), -1 for never, undefined for the service's default (7 days). */
function timeToLiveSeconds(timeToLiveInMs: number | undefined): number | undefined {
  if (timeToLiveInMs === undefined) return undefined;
  if (timeToLiveInMs === Number.POSITIVE_INFINITY) return -1;
  return Math.max(1, Math.ceil(timeToLiveInMs / 1000));
}

/**
 * What `sendMessage` gets for a message: its delay as the initial visibility timeout and its time to
 * live, in whole seconds, both rounded up (so a message never shows before its delay). Storage Queue
 * refuses a visibility timeout over 7 days or not below the time to live, so this refuses them
 * first, with `invalid-argument`: a delay over 7 days, or (with the default time to live of 7 days)
 * of 7 days. The port already keeps the delay below a finite time to live; when rounding makes them
 * the same second, the time to live gets one second more.
 */
export function sendMessageTimes(queue: string, message: OutgoingMessage): { visibilityTimeout?: number; messageTimeToLive?: number } {
  const messageTimeToLive = timeToLiveSeconds(message.timeToLiveInMs);
  const delay = message.delayInMs ?? 0;
  if (delay <= 0) return messageTimeToLive === undefined ? {} : { messageTimeToLive };
  const visibilityTimeout = Math.ceil(delay / 1000);
  const limit = messageTimeToLive === undefined ? STORAGE_QUEUE_MAX_DELAY_SECONDS - 1 : STORAGE_QUEUE_MAX_DELAY_SECONDS;
  if (visibilityTimeout > limit) {
    const which = message.messageId === undefined ? 'a message' : `message "${message.messageId}"`;
    const why = messageTimeToLive === undefined ? 'less than 7 days (the default time to live)' : 'at most 7 days';
    throw new JobqError(
      'invalid-argument',
      `${which} for Storage queue "${queue}": delayInMs must be ${why} on a Storage Queue, got ${delay}`,
    );
  }
  if (messageTimeToLive === undefined) return { visibilityTimeout };
  return { visibilityTimeout, messageTimeToLive: messageTimeToLive === -1 ? -1 : Math.max(messageTimeToLive, visibilityTimeout + 1) };
}

/**
 * The {@link TaskQueue} on an Azure Storage Queue. Bodies travel as raw text (the JSON envelope,
 * no base64), with every character XML 1.0 forbids written as a `\uXXXX` escape (`queueSafeText`):
 * the service carries bodies as XML, and one such character would make every receive and peek of
 * the queue fail. A JSON body decodes to the same value; a received body is the escaped text. The lock is the visibility timeout: renewing extends it and yields a new pop receipt,
 * which the message handle keeps. Dead letters go to `{queue}-failed`, carrying their reason
 * (`deadLetterBody`: a JSON object body gains a top-level `"dead_letter_reason"`).
 */
export class StorageTaskQueue implements TaskQueue {
  readonly maxMessageBytes = STORAGE_QUEUE_MAX_MESSAGE_BYTES;
  readonly lockDurationInMs: number;
  private dlq: StorageTaskQueue | undefined;
  private deadLetterReady: Promise<void> | undefined;
  private readonly polls: PollSchedule;

  /** @internal use {@link openStorageQueue} */
  constructor(
    private readonly service: QueueServiceClient,
    private readonly client: QueueClient,
    readonly name: string,
    private readonly settings: StorageTaskQueueSettings,
  ) {
    this.lockDurationInMs = this.lockSeconds() * 1000;
    this.polls = new PollSchedule(settings.minPollIntervalInMs, settings.maxPollIntervalInMs, settings.hotPollWindowInMs);
  }

  private lockSeconds(): number {
    return Math.max(1, Math.ceil(this.settings.lockDurationInMs / 1000));
  }

  /** Runs one SDK call under the time limit and the caller's signal, translating its errors. */
  async call<T>(
    operation: string,
    options: OperationOptions | undefined,
    fn: (signal: AbortSignal) => Promise<T>,
    messageOperation = false,
  ): Promise<T> {
    const caller = options?.abortSignal;
    if (caller?.aborted) throw new JobqError('aborted', `${operation} on queue "${this.name}" was aborted by the caller`);
    const signal = caller
      ? AbortSignal.any([caller, AbortSignal.timeout(this.settings.operationTimeoutInMs)])
      : AbortSignal.timeout(this.settings.operationTimeoutInMs);
    try {
      return await fn(signal);
    } catch (error) {
      throw translateError(error, { operation, queue: this.name, messageOperation, callerAborted: caller?.aborted ?? false });
    }
  }

  async send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    const list: readonly OutgoingMessage[] = Array.isArray(messages)
      ? (messages as readonly OutgoingMessage[])
      : [messages as OutgoingMessage];
    // Every message is checked before anything goes out, so a refused batch sends nothing.
    for (const m of list) {
      assertMessageFits(this.name, m, this.maxMessageBytes);
      assertValidTimeToLive(this.name, m);
      assertValidDelay(this.name, m);
    }
    const times = list.map((m) => sendMessageTimes(this.name, m));
    await mapLimit(list, this.settings.sendConcurrency, (message, i) =>
      this.call('send', options, (abortSignal) => this.client.sendMessage(queueSafeText(message.body), { ...times[i], abortSignal })),
    );
  }

  async receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const wanted = Math.max(1, Math.min(STORAGE_QUEUE_MAX_RECEIVE, Math.floor(options.maxMessages)));
    const deadline = Date.now() + options.maxWaitTimeInMs;
    for (;;) {
      const response = await this.call('receive', options, (abortSignal) =>
        this.client.receiveMessages({ numberOfMessages: wanted, visibilityTimeout: this.lockSeconds(), abortSignal }),
      );
      if (response.receivedMessageItems.length > 0) {
        this.polls.onMessages(Date.now());
        return response.receivedMessageItems.map(
          (m) => new StorageMessage(m.messageId, m.messageText, m.dequeueCount, m.insertedOn ?? null, m.nextVisibleOn, m.popReceipt, this),
        );
      }
      // Storage Queues have no long polling: poll until the wait is over, fast right after
      // activity, backing off while the queue stays empty (PollSchedule).
      const now = Date.now();
      const left = deadline - now;
      if (left <= 0 || options.abortSignal?.aborted) return [];
      await sleep(Math.min(this.polls.nextPause(now), left), options.abortSignal);
    }
  }

  async renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    const m = this.own(message);
    const response = await this.call(
      'renew lock',
      options,
      (abortSignal) => this.client.updateMessage(m.messageId, m.popReceipt, undefined, this.lockSeconds(), { abortSignal }),
      true,
    );
    if (response.popReceipt) m.popReceipt = response.popReceipt;
    if (response.nextVisibleOn) m.lockedUntil = response.nextVisibleOn;
  }

  async complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    const m = this.own(message);
    await this.call('complete', options, (abortSignal) => this.client.deleteMessage(m.messageId, m.popReceipt, { abortSignal }), true);
  }

  async abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    const m = this.own(message);
    const response = await this.call(
      'abandon',
      options,
      (abortSignal) => this.client.updateMessage(m.messageId, m.popReceipt, undefined, 0, { abortSignal }),
      true,
    );
    if (response.popReceipt) m.popReceipt = response.popReceipt;
    m.lockedUntil = new Date();
  }

  async deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    const m = this.own(message);
    const dlq = this.deadLetterQueue();
    this.deadLetterReady ??= dlq.ensureExists(options);
    await this.deadLetterReady;
    // Copy first, then delete: a crash in between leaves a duplicate, never a loss.
    await dlq.send({ body: deadLetterBody(m.body, reason, dlq.maxMessageBytes) }, options);
    try {
      await this.complete(m, options);
    } catch (error) {
      throw new JobqError(
        'lock-lost',
        `dead-lettering message ${m.messageId} on queue "${this.name}" (${reason}): copied to "${dlq.name}" but could not delete the original`,
        {
          cause: error,
        },
      );
    }
  }

  async peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    const n = Math.max(1, Math.min(STORAGE_QUEUE_MAX_RECEIVE, Math.floor(maxMessages)));
    const response = await this.call('peek', options, (abortSignal) => this.client.peekMessages({ numberOfMessages: n, abortSignal }));
    return response.peekedMessageItems.map((m) => ({
      messageId: m.messageId,
      body: m.messageText,
      enqueuedAt: m.insertedOn ?? null,
      deliveryCount: m.dequeueCount,
    }));
  }

  async approximateMessageCount(options?: OperationOptions): Promise<number> {
    const properties = await this.call('count', options, (abortSignal) => this.client.getProperties({ abortSignal }));
    return properties.approximateMessagesCount ?? 0;
  }

  deadLetterQueue(): StorageTaskQueue {
    const name = `${this.name}-failed`;
    this.dlq ??= new StorageTaskQueue(this.service, this.service.getQueueClient(name), name, this.settings);
    return this.dlq;
  }

  /** Creates the queue when it does not exist yet. */
  async ensureExists(options?: OperationOptions): Promise<void> {
    await this.call('create', options, (abortSignal) => this.client.createIfNotExists({ abortSignal }));
  }

  /** Deletes the queue and its dead-letter queue (tests and teardown). */
  async deleteQueue(options?: OperationOptions): Promise<void> {
    await this.call('delete', options, (abortSignal) => this.client.deleteIfExists({ abortSignal }));
    if (this.dlq) await this.dlq.deleteQueue(options);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private own(message: ReceivedMessage): StorageMessage {
    if (!(message instanceof StorageMessage) || message.queue !== this) {
      throw new JobqError('invalid-argument', `message ${message.messageId} was not received from queue "${this.name}"`);
    }
    return message;
  }
}
