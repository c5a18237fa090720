/**
 * A small in-memory {@link QueueRegistry} for the admin endpoint's tests: queue records in a Map,
 * with the ranges and name rules of the package README (LockDuration 5 s – 5 min, MaxDeliveryCount
 * ≥ 1, duplicate detection window 20 s – 7 d, Azure's entity names). It holds no messages: tests
 * set the runtime counts with `setCounts`.
 */
import { QueueRegistryError, type QueueInfo, type QueueProperties, type QueueRegistry, type QueueRuntimeCounts } from '../types';

export const DEFAULT_PROPERTIES: QueueProperties = {
  lockDurationMs: 60_000,
  maxDeliveryCount: 10,
  requiresDuplicateDetection: false,
  duplicateDetectionHistoryTimeWindowMs: 10 * 60_000,
  defaultMessageTimeToLiveMs: Infinity,
  deadLetteringOnMessageExpiration: false,
  maxSizeInMegabytes: 1024,
};

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._/-]*[A-Za-z0-9])?$/;

function checkName(name: string): void {
  if (name.length > 260 || !NAME.test(name) || name.includes('//')) {
    throw new QueueRegistryError(
      'bad-request',
      `"${name.slice(0, 64)}" is not a valid queue name: up to 260 letters, digits, periods, hyphens, underscores and slashes, starting and ending with a letter or digit`,
    );
  }
}

function checkProperties(p: QueueProperties): void {
  const range = (ok: boolean, message: string): void => {
    if (!ok) throw new QueueRegistryError('bad-request', message);
  };
  range(p.lockDurationMs >= 5_000 && p.lockDurationMs <= 300_000, `LockDuration ${p.lockDurationMs} ms is outside 5 s – 5 min`);
  range(Number.isInteger(p.maxDeliveryCount) && p.maxDeliveryCount >= 1, `MaxDeliveryCount ${p.maxDeliveryCount} is below 1`);
  range(
    p.duplicateDetectionHistoryTimeWindowMs >= 20_000 && p.duplicateDetectionHistoryTimeWindowMs <= 7 * 86_400_000,
    `DuplicateDetectionHistoryTimeWindow ${p.duplicateDetectionHistoryTimeWindowMs} ms is outside 20 s – 7 d`,
  );
  range(p.defaultMessageTimeToLiveMs > 0, 'DefaultMessageTimeToLive must be positive');
  range(Number.isInteger(p.maxSizeInMegabytes) && p.maxSizeInMegabytes >= 1, `MaxSizeInMegabytes ${p.maxSizeInMegabytes} is below 1`);
}

const ZERO: QueueRuntimeCounts = { active: 0, deadLetter: 0, scheduled: 0, total: 0, sizeInBytes: 0 };

export class MapQueueRegistry implements QueueRegistry {
  private readonly queues = new Map<string, QueueInfo>();

  constructor(private readonly options: { now?: () => number; entityLimit?: number } = {}) {}

  private now(): Date {
    return new Date((this.options.now ?? Date.now)());
  }

  private copy(info: QueueInfo): QueueInfo {
    return { ...info, properties: { ...info.properties }, counts: { ...info.counts } };
  }

  create(name: string, properties: Partial<QueueProperties>): QueueInfo {
    checkName(name);
    if (this.queues.has(name.toLowerCase())) throw new QueueRegistryError('conflict', `The messaging entity '${name}' already exists.`);
    if (this.options.entityLimit !== undefined && this.queues.size >= this.options.entityLimit) {
      throw new QueueRegistryError('limit', `The maximum entity count of ${this.options.entityLimit} has been reached.`);
    }
    const merged = { ...DEFAULT_PROPERTIES, ...properties };
    checkProperties(merged);
    const at = this.now();
    const info: QueueInfo = { name, properties: merged, createdAt: at, updatedAt: at, accessedAt: at, counts: { ...ZERO } };
    this.queues.set(name.toLowerCase(), info);
    return this.copy(info);
  }

  get(name: string): QueueInfo | undefined {
    const info = this.queues.get(name.toLowerCase());
    return info && this.copy(info);
  }

  update(name: string, properties: Partial<QueueProperties>): QueueInfo {
    const info = this.queues.get(name.toLowerCase());
    if (!info) throw new QueueRegistryError('not-found', `The messaging entity '${name}' could not be found.`);
    const merged = { ...info.properties, ...properties };
    checkProperties(merged);
    info.properties = merged;
    info.updatedAt = this.now();
    return this.copy(info);
  }

  delete(name: string): boolean {
    return this.queues.delete(name.toLowerCase());
  }

  list(): QueueInfo[] {
    return [...this.queues.values()].map((info) => this.copy(info));
  }

  /** Test hook standing in for messages: sets the counts `get` and `list` report. */
  setCounts(name: string, counts: Omit<QueueRuntimeCounts, 'total'>): void {
    const info = this.queues.get(name.toLowerCase());
    if (!info) throw new Error(`no queue ${name}`);
    info.counts = { ...counts, total: counts.active + counts.deadLetter + counts.scheduled };
    info.accessedAt = this.now();
  }
}
