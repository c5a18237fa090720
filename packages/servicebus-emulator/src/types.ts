/**
 * The queue model shared by the AMQP side and the admin (HTTP) side of the emulator: properties,
 * runtime counts, and the registry through which the admin endpoint creates, reads, updates,
 * deletes and lists queues.
 */

/** Properties of a queue, as the admin client and the defaults/limits options name them (times in ms). */
export interface QueueProperties {
  /** How long a peek-lock delivery stays locked (Azure: 5 s – 5 min, default 1 min). */
  lockDurationMs: number;
  /** Deliveries after which a message is dead-lettered with `MaxDeliveryCountExceeded` (default 10). */
  maxDeliveryCount: number;
  requiresDuplicateDetection: boolean;
  /** Duplicate detection window (Azure: 20 s – 7 d, default 10 min). */
  duplicateDetectionHistoryTimeWindowMs: number;
  /** Time to live of a message without its own (default: never, `Infinity`). */
  defaultMessageTimeToLiveMs: number;
  /** Expired messages go to the dead-letter queue (`TTLExpiredException`) instead of being dropped. */
  deadLetteringOnMessageExpiration: boolean;
  /** Bytes the queue may hold, in MiB (default 1 024). */
  maxSizeInMegabytes: number;
}

/** Counts of one queue at one moment. `active` includes locked messages. */
export interface QueueRuntimeCounts {
  active: number;
  deadLetter: number;
  scheduled: number;
  /** Every message the queue holds: active + dead-letter + scheduled (+ deferred). */
  total: number;
  /** Bytes held (on this emulator's encoding). */
  sizeInBytes: number;
}

/** A queue as the registry describes it. */
export interface QueueInfo {
  name: string;
  properties: QueueProperties;
  createdAt: Date;
  updatedAt: Date;
  accessedAt: Date;
  counts: QueueRuntimeCounts;
}

/** Why a registry operation was refused; the admin endpoint maps these to HTTP statuses. */
export type QueueErrorCode =
  | 'bad-request' // 400: an illegal name, or a property outside its range
  | 'not-found' // 404
  | 'conflict' // 409: create of an existing queue
  | 'limit'; // 403 (Azure: QuotaExceeded): over the profile's entity limit

export class QueueRegistryError extends Error {
  constructor(
    readonly code: QueueErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'QueueRegistryError';
  }
}

/**
 * What the admin endpoint needs from the broker. Names are case-insensitive as in Azure (the
 * registry keeps the spelling of the create); every method throws {@link QueueRegistryError}.
 */
export interface QueueRegistry {
  create(name: string, properties: Partial<QueueProperties>): QueueInfo;
  get(name: string): QueueInfo | undefined;
  /** Replaces the given properties; the rest keep their values. `requiresDuplicateDetection` cannot change (`bad-request`), as in Azure. */
  update(name: string, properties: Partial<QueueProperties>): QueueInfo;
  /** Deletes the queue and its messages (dead-letter queue included); false when there was none. */
  delete(name: string): boolean;
  list(): QueueInfo[];
}
