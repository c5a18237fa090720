/** Options every queue call accepts. */
export interface OperationOptions {
  abortSignal?: AbortSignal;
}

/** A message to send. */
export interface OutgoingMessage {
  /** The message body: for jobq, the JSON envelope of docs/design.md#envelope. */
  body: string;
  /** Idempotency key: Service Bus drops a repeat within its duplicate-detection window. */
  messageId?: string;
  /**
   * How long the message may stay in the queue, from the send, before it expires (deleted unread,
   * or deleted while held): undefined = the backend's default (Storage Queue: 7 days);
   * `Number.POSITIVE_INFINITY` = never; otherwise a positive number of ms (Storage Queue rounds it
   * up to whole seconds). Anything else is `invalid-argument` before anything is sent.
   */
  timeToLiveInMs?: number;
  /**
   * How long after the send the message becomes receivable: undefined or 0 = at once; otherwise a
   * finite number of ms ≥ 0 (Storage Queue rounds it up to whole seconds and takes at most 7 days).
   * Until then the message is in the queue (`approximateMessageCount` counts it) but no `receive`
   * or `peek` returns it. The time to live still counts from the send, so a finite
   * `timeToLiveInMs` must be larger than the delay. Anything else is `invalid-argument` before
   * anything is sent.
   */
  delayInMs?: number;
}

/**
 * A message held under a lock. It is a live handle: {@link TaskQueue.renewLock} updates
 * `lockedUntil` (and the backend's token inside), so always settle with the same object.
 */
export interface ReceivedMessage {
  /** The backend's id of this message (not the envelope id). */
  readonly messageId: string;
  readonly body: string;
  /** 1 on first delivery; grows with every redelivery. */
  readonly deliveryCount: number;
  readonly enqueuedAt: Date | null;
  /** When the lock ends unless renewed. */
  lockedUntil: Date;
}

/** Options of {@link TaskQueue.receive}. */
export interface ReceiveOptions extends OperationOptions {
  /** At most this many messages (Storage Queue: ≤ 32). */
  maxMessages: number;
  /** How long to wait for a first message before returning an empty list. */
  maxWaitTimeInMs: number;
}

/** A message seen without taking it. */
export interface PeekedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly enqueuedAt: Date | null;
  readonly deliveryCount: number;
}

/**
 * A work queue with leased delivery (Storage Queue or Service Bus). Delivery is at-least-once: a
 * message whose lock ends before it is completed is delivered again with a higher delivery count.
 */
export interface TaskQueue {
  /** The queue's name on its backend. */
  readonly name: string;
  /** How long a receive holds a message; fixed when the adapter opens the queue. */
  readonly lockDurationInMs: number;
  /** Largest body accepted, in UTF-8 bytes. */
  readonly maxMessageBytes: number;
  /**
   * Sends messages; a body over {@link maxMessageBytes} fails with `message-too-large`, a bad
   * `timeToLiveInMs` or `delayInMs` with `invalid-argument`, before anything is sent.
   */
  send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void>;
  /** Leases up to `maxMessages` messages; returns `[]` when none arrives within `maxWaitTimeInMs`. */
  receive(options: ReceiveOptions): Promise<ReceivedMessage[]>;
  /** Extends the lock by the lock duration from now; `lock-lost` when it is no longer held. */
  renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void>;
  /** Deletes a message whose lock is held; `lock-lost` otherwise. */
  complete(message: ReceivedMessage, options?: OperationOptions): Promise<void>;
  /** Gives a message back at once, for another delivery. */
  abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void>;
  /**
   * Moves a message to the dead-letter queue (Storage Queue: `{queue}-failed`) with its reason:
   * the copy's body is `deadLetterBody(body, reason, …)` (a JSON object body gains a top-level
   * `"dead_letter_reason"`; any other is wrapped as `{"dead_letter_reason", "body"}`).
   */
  deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void>;
  /** Looks at up to `maxMessages` visible messages without leasing them (oldest first where the backend allows); delayed messages are not shown until their delay has passed. */
  peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]>;
  /** The backend's estimate of the number of messages in the queue, held and delayed ones included. */
  approximateMessageCount(options?: OperationOptions): Promise<number>;
  /** The queue that receives dead-lettered messages. */
  deadLetterQueue(): TaskQueue;
  /** Releases the adapter's resources; the queue itself stays. */
  close(): Promise<void>;
}
