/**
 * `startServiceBus`: the broker in this process, on a loopback port, with a connection string the
 * real `@azure/service-bus` SDK accepts. See README.md, "API".
 */
import { startAdminServer, type AdminServer } from './admin';
import { Broker, type FaultOperation } from './broker';
import {
  LOCK_DURATION_FLOOR_MS,
  PROFILE_DEFAULTS,
  PROFILE_LIMITS,
  resolveLimits,
  type ServiceBusLimits,
  type ServiceBusProfile,
} from './profile';
import type { QueueStats } from './queue';
import { BrokerRegistry } from './registry';
import { QueueRegistryError, type QueueProperties, type QueueRegistry } from './types';

export interface ServiceBusOptions {
  /** TCP port on 127.0.0.1 (0, the default: a free one). */
  port?: number;
  /**
   * Port of the admin (HTTP) endpoint for `ServiceBusAdministrationClient` on 127.0.0.1 (0, the
   * default: a free one; null: no admin endpoint). See README.md, "Admin endpoint".
   */
  adminPort?: number | null;
  /** Default `RootManageSharedAccessKey`. */
  sasKeyName?: string;
  /** Default `SAS_KEY_VALUE`. */
  sasKey?: string;
  /** Create a queue on first attach (default true). */
  autoCreateQueues?: boolean;
  /** Queues declared at start: names, or names with properties. */
  queues?: (string | { name: string; properties?: Partial<QueueProperties> })[];
  /** Property defaults for new queues (over the profile's). */
  defaults?: Partial<QueueProperties>;
  /** Limits (over the profile's). */
  limits?: Partial<ServiceBusLimits>;
  /** `azure` (default) or `emulator` (Microsoft's emulator's defaults and limits). */
  profile?: ServiceBusProfile;
  /** Lowest LockDuration accepted (default 5 000 ms, Azure's floor); tests may lower it. */
  lockDurationFloorMs?: number;
  /** The clock (ms since epoch) for locks, TTL, scheduling and duplicate detection (default Date.now). */
  now?: () => number;
}

/** What {@link ServiceBusEmulator.stats} reports: open connections, `put-token` requests, and per-queue counters. */
export interface ServiceBusStats {
  connections: number;
  cbsPuts: number;
  queues: Record<string, QueueStats>;
}

/** A running broker (see README.md, "Broker API"). */
export interface ServiceBusEmulator {
  connectionString: string;
  port: number;
  /** The admin (HTTP) endpoint; null when none runs. */
  adminEndpoint: string | null;
  registry: QueueRegistry;
  stats(): ServiceBusStats;
  declareQueue(name: string, properties?: Partial<QueueProperties>): void;
  /** The next `op` fails with the AMQP `condition` (e.g. `failNext('send', 'com.microsoft:server-busy')`). */
  failNext(op: FaultOperation, condition: string): void;
  dropConnections(): void;
  detachReceivers(): void;
  stop(): Promise<void>;
}

/**
 * Starts the broker in this process on 127.0.0.1 and resolves once it listens. Rejects, naming the
 * port, when the port is taken; a bad `profile`, `limits`, `lockDurationFloorMs`, `defaults` or `queues`
 * entry throws a `QueueRegistryError` naming it.
 */
export async function startServiceBus(options: ServiceBusOptions = {}): Promise<ServiceBusEmulator> {
  const profile = options.profile ?? 'azure';
  if (profile !== 'azure' && profile !== 'emulator')
    throw new QueueRegistryError(
      'bad-request',
      `profile must be "azure" or "emulator" (got ${JSON.stringify(String(profile).slice(0, 40))})`,
    );
  const floor: unknown = options.lockDurationFloorMs;
  if (floor !== undefined && (typeof floor !== 'number' || !(floor > 0)))
    throw new QueueRegistryError('bad-request', `lockDurationFloorMs must be a number above 0 (got ${JSON.stringify(floor)})`);
  const limits: ServiceBusLimits = resolveLimits(PROFILE_LIMITS[profile], options.limits ?? {});
  const now = options.now ?? Date.now;
  const rules = { limits, lockDurationFloorMs: options.lockDurationFloorMs ?? LOCK_DURATION_FLOOR_MS };
  const registry = new BrokerRegistry({ defaults: { ...PROFILE_DEFAULTS[profile] }, rules, now });
  const defaults = registry.resolveDefaults(options.defaults ?? {});
  registry.setDefaults(defaults);
  for (const q of options.queues ?? []) {
    if (typeof q === 'string') registry.createQueue(q, {});
    else registry.createQueue(q.name, q.properties ?? {});
  }
  const sasKeyName = options.sasKeyName ?? 'RootManageSharedAccessKey';
  const sasKey = options.sasKey ?? 'SAS_KEY_VALUE';
  const broker = new Broker({
    registry,
    limits,
    key: { keyName: sasKeyName, key: sasKey },
    autoCreateQueues: options.autoCreateQueues ?? true,
    now,
  });
  const port = await broker.start(options.port ?? 0);
  let admin: AdminServer | null = null;
  if (options.adminPort !== null) {
    try {
      admin = await startAdminServer(registry, { port: options.adminPort ?? 0, sasKeyName, sasKey, now });
    } catch (error) {
      await broker.stop();
      throw error;
    }
  }
  let stopped: Promise<void> | undefined;
  return {
    connectionString: `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${sasKeyName};SharedAccessKey=${sasKey};UseDevelopmentEmulator=true`,
    port,
    adminEndpoint: admin?.endpoint ?? null,
    registry,
    stats() {
      broker.sweep();
      const queues: Record<string, QueueStats> = {};
      for (const q of registry.allQueues()) queues[q.name] = q.snapshot();
      return { connections: broker.openConnections, cbsPuts: broker.cbsPuts, queues };
    },
    declareQueue(name, properties = {}) {
      if (registry.queue(name)) registry.update(name, properties);
      else registry.createQueue(name, properties);
    },
    failNext: (op, condition) => broker.failNext(op, condition),
    dropConnections: () => broker.dropConnections(),
    detachReceivers: () => broker.detachReceivers(),
    stop() {
      stopped ??= Promise.all([broker.stop(), admin?.stop()]).then(() => undefined);
      return stopped;
    },
  };
}
