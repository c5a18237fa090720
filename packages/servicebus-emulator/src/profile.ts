/**
 * Profiles, limits and queue property defaults and ranges. `azure` follows a Standard-tier
 * namespace; `emulator` follows Microsoft's Service Bus emulator. See README.md, "Limits".
 */
import { QueueRegistryError, type QueueProperties } from './types';

export type ServiceBusProfile = 'azure' | 'emulator';

/** Namespace-wide limits. */
export interface ServiceBusLimits {
  /** Queues the namespace may hold (dead-letter queues not counted). */
  maxEntities: number;
  /** Concurrent AMQP connections. */
  maxConnections: number;
  /** Largest message (and batch transfer) a sender may send, in bytes; announced as the link's max_message_size. */
  maxMessageSizeInBytes: number;
  /** Largest message time to live, in ms (Infinity: none). */
  maxMessageTimeToLiveMs: number;
  /** Largest duplicate detection window, in ms. */
  maxDuplicateDetectionWindowMs: number;
  /** Largest maxDeliveryCount. */
  maxDeliveryCount: number;
  /** Largest maxSizeInMegabytes. */
  maxQueueSizeInMegabytes: number;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export const PROFILE_LIMITS: Record<ServiceBusProfile, ServiceBusLimits> = {
  azure: {
    maxEntities: 10_000,
    maxConnections: 5_000,
    maxMessageSizeInBytes: 262_144,
    maxMessageTimeToLiveMs: Infinity,
    maxDuplicateDetectionWindowMs: 7 * DAY,
    maxDeliveryCount: 2_147_483_647,
    maxQueueSizeInMegabytes: 81_920,
  },
  emulator: {
    maxEntities: 50,
    maxConnections: 10,
    maxMessageSizeInBytes: 262_144,
    maxMessageTimeToLiveMs: 60 * MINUTE,
    maxDuplicateDetectionWindowMs: 5 * MINUTE,
    maxDeliveryCount: 10,
    maxQueueSizeInMegabytes: 100,
  },
};

export const PROFILE_DEFAULTS: Record<ServiceBusProfile, QueueProperties> = {
  azure: {
    lockDurationMs: MINUTE,
    maxDeliveryCount: 10,
    requiresDuplicateDetection: false,
    duplicateDetectionHistoryTimeWindowMs: 10 * MINUTE,
    defaultMessageTimeToLiveMs: Infinity,
    deadLetteringOnMessageExpiration: false,
    maxSizeInMegabytes: 1_024,
  },
  emulator: {
    lockDurationMs: MINUTE,
    maxDeliveryCount: 3,
    requiresDuplicateDetection: false,
    duplicateDetectionHistoryTimeWindowMs: 5 * MINUTE,
    defaultMessageTimeToLiveMs: 60 * MINUTE,
    deadLetteringOnMessageExpiration: false,
    maxSizeInMegabytes: 100,
  },
};

/** Checks limits given as options: each a positive number (Infinity allowed); throws a `bad-request` QueueRegistryError naming it. */
export function resolveLimits(base: ServiceBusLimits, patch: Partial<ServiceBusLimits>): ServiceBusLimits {
  const limits: ServiceBusLimits = { ...base };
  for (const key of Object.keys(patch)) {
    const value: unknown = (patch as Record<string, unknown>)[key];
    if (value === undefined) continue;
    check(key in base, `unknown limit "${key.slice(0, 64)}" (known: ${Object.keys(base).join(', ')})`);
    check(typeof value === 'number' && value > 0, `limits.${key} must be a number above 0 (got ${describeValue(value)})`);
    (limits as unknown as Record<string, unknown>)[key] = value;
  }
  return limits;
}

/** Azure's floor for LockDuration. */
export const LOCK_DURATION_FLOOR_MS = 5_000;
const LOCK_DURATION_MAX_MS = 5 * MINUTE;
const DUPLICATE_WINDOW_MIN_MS = 20_000;

/** The rules a queue's properties are checked against. */
export interface PropertyRules {
  limits: ServiceBusLimits;
  lockDurationFloorMs: number;
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new QueueRegistryError('bad-request', message);
}

function isWhole(n: number): boolean {
  return Number.isInteger(n);
}

const PROPERTY_TYPES: Record<keyof QueueProperties, 'number' | 'boolean'> = {
  lockDurationMs: 'number',
  maxDeliveryCount: 'number',
  requiresDuplicateDetection: 'boolean',
  duplicateDetectionHistoryTimeWindowMs: 'number',
  defaultMessageTimeToLiveMs: 'number',
  deadLetteringOnMessageExpiration: 'boolean',
  maxSizeInMegabytes: 'number',
};

function describeValue(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value);
}

/** Merges `patch` into `base` and checks every property's type and range; throws a `bad-request` QueueRegistryError naming the property. */
export function resolveProperties(base: QueueProperties, patch: Partial<QueueProperties>, rules: PropertyRules): QueueProperties {
  const p: QueueProperties = { ...base };
  for (const key of Object.keys(patch)) {
    const value: unknown = (patch as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const type = PROPERTY_TYPES[key as keyof QueueProperties] as 'number' | 'boolean' | undefined;
    check(type !== undefined, `unknown queue property "${key.slice(0, 64)}" (known: ${Object.keys(PROPERTY_TYPES).join(', ')})`);
    check(
      typeof value === type && !(type === 'number' && Number.isNaN(value)),
      `${key} must be a ${type ?? ''} (got ${describeValue(value)})`,
    );
    (p as unknown as Record<string, unknown>)[key] = value;
  }
  const { limits } = rules;
  check(
    typeof p.lockDurationMs === 'number' && p.lockDurationMs >= rules.lockDurationFloorMs && p.lockDurationMs <= LOCK_DURATION_MAX_MS,
    `LockDuration must be between ${rules.lockDurationFloorMs} ms and ${LOCK_DURATION_MAX_MS} ms (got ${p.lockDurationMs})`,
  );
  check(
    isWhole(p.maxDeliveryCount) && p.maxDeliveryCount >= 1 && p.maxDeliveryCount <= limits.maxDeliveryCount,
    `MaxDeliveryCount must be a whole number between 1 and ${limits.maxDeliveryCount} (got ${p.maxDeliveryCount})`,
  );
  check(typeof p.requiresDuplicateDetection === 'boolean', 'RequiresDuplicateDetection must be a boolean');
  check(
    p.duplicateDetectionHistoryTimeWindowMs >= DUPLICATE_WINDOW_MIN_MS &&
      p.duplicateDetectionHistoryTimeWindowMs <= limits.maxDuplicateDetectionWindowMs,
    `DuplicateDetectionHistoryTimeWindow must be between ${DUPLICATE_WINDOW_MIN_MS} ms and ${limits.maxDuplicateDetectionWindowMs} ms (got ${p.duplicateDetectionHistoryTimeWindowMs})`,
  );
  check(
    p.defaultMessageTimeToLiveMs >= 1_000 && p.defaultMessageTimeToLiveMs <= limits.maxMessageTimeToLiveMs,
    `DefaultMessageTimeToLive must be at least 1000 ms and at most ${limits.maxMessageTimeToLiveMs} ms (got ${p.defaultMessageTimeToLiveMs})`,
  );
  check(typeof p.deadLetteringOnMessageExpiration === 'boolean', 'DeadLetteringOnMessageExpiration must be a boolean');
  check(
    isWhole(p.maxSizeInMegabytes) && p.maxSizeInMegabytes >= 1 && p.maxSizeInMegabytes <= limits.maxQueueSizeInMegabytes,
    `MaxSizeInMegabytes must be a whole number between 1 and ${limits.maxQueueSizeInMegabytes} (got ${p.maxSizeInMegabytes})`,
  );
  return p;
}

const SEGMENT = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** Azure's queue name rules: letters, digits, `.`, `-`, `_` and `/`-separated segments, each starting and ending with a letter or digit; at most 260 characters. */
export function queueNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 260) return `a queue name has 1 to 260 characters (got ${name.length})`;
  for (const segment of name.split('/')) {
    if (!SEGMENT.test(segment))
      return `illegal queue name "${name.slice(0, 100)}": use letters, digits, ".", "-", "_" and "/", starting and ending with a letter or digit`;
  }
  return undefined;
}
