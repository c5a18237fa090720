/**
 * Where the SDK-level cases run: always this package's broker, and also a real namespace when
 * JOBQ_TEST_SERVICEBUS_CONNECTION_STRING is set (queues `jobqtest-<random>-…`, deleted after the
 * run; leftovers older than 1 h swept first). Broker-only cases (stats, fault hooks, a fake clock)
 * check `target.emulator`.
 */
import { ServiceBusAdministrationClient } from '@azure/service-bus';
import type { ServiceBusEmulator } from '../emulator';
import type { QueueProperties } from '../types';

export interface Target {
  label: string;
  emulator: boolean;
  connectionString(): string;
  /** A queue for `base` with these properties (created; on a real namespace prefixed and deleted after the run). */
  queue(base: string, properties?: Partial<QueueProperties>): Promise<string>;
}

const REAL = process.env.JOBQ_TEST_SERVICEBUS_CONNECTION_STRING;
const RUN_ID = Math.random().toString(36).slice(2, 8);

function isoDuration(ms: number): string {
  return `PT${Math.round(ms / 1000)}S`;
}

export function targets(emulator: () => ServiceBusEmulator): Target[] {
  const list: Target[] = [
    {
      label: 'emulator',
      emulator: true,
      connectionString: () => emulator().connectionString,
      queue: (base, properties = {}) => {
        emulator().declareQueue(base, properties);
        return Promise.resolve(base);
      },
    },
  ];
  if (!REAL) {
    process.stdout.write('real Service Bus checks skipped: JOBQ_TEST_SERVICEBUS_CONNECTION_STRING not set\n');
    return list;
  }
  const created = new Set<string>();
  const admin = new ServiceBusAdministrationClient(REAL);
  beforeAll(async () => {
    const cutoff = Date.now() - 3_600_000;
    for await (const q of admin.listQueuesRuntimeProperties()) {
      if (q.name.startsWith('jobqtest-') && q.createdAt.getTime() < cutoff) await admin.deleteQueue(q.name).catch(() => undefined);
    }
  });
  afterAll(async () => {
    for (const name of created) await admin.deleteQueue(name).catch(() => undefined);
  });
  list.push({
    label: 'real namespace',
    emulator: false,
    connectionString: () => REAL,
    queue: async (base, p = {}) => {
      const name = `jobqtest-${RUN_ID}-${base}`;
      created.add(name);
      await admin.createQueue(name, {
        ...(p.lockDurationMs !== undefined ? { lockDuration: isoDuration(p.lockDurationMs) } : {}),
        ...(p.maxDeliveryCount !== undefined ? { maxDeliveryCount: p.maxDeliveryCount } : {}),
        ...(p.requiresDuplicateDetection !== undefined ? { requiresDuplicateDetection: p.requiresDuplicateDetection } : {}),
        ...(p.duplicateDetectionHistoryTimeWindowMs !== undefined
          ? { duplicateDetectionHistoryTimeWindow: isoDuration(p.duplicateDetectionHistoryTimeWindowMs) }
          : {}),
        ...(p.deadLetteringOnMessageExpiration !== undefined
          ? { deadLetteringOnMessageExpiration: p.deadLetteringOnMessageExpiration }
          : {}),
      });
      return name;
    },
  });
  return list;
}
