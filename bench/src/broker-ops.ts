/**
 * Broker operations of a run, from two `stats()` snapshots of the Service Bus emulator: what the
 * run's queues saw between them (see packages/servicebus-emulator/README.md, "QueueStats").
 */
import type { QueueStats, ServiceBusStats } from '@jobq/servicebus-emulator';

export interface BrokerOps {
  /** Transfers into the queues (a batch is one). */
  transfers: number;
  /** Messages handed to receivers. */
  deliveries: number;
  /** Complete, abandon, dead-letter, defer, and settlements refused for a lost lock. */
  dispositions: number;
  /** `renew-lock` requests on `$management`. */
  renewals: number;
  /** Every other `$management` request (peek, update-disposition, schedule, …). */
  management: number;
  /** Messages accepted (dropped duplicates included). */
  messagesIn: number;
  /** Messages dropped by duplicate detection. */
  dedupDrops: number;
}

/** The queue's stats under `name`, matched as the broker does (case-insensitively); zeros when absent. */
function queueStats(stats: ServiceBusStats, name: string): QueueStats | undefined {
  const key = Object.keys(stats.queues).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : stats.queues[key];
}

function sum(values: Record<string, number>, except?: string): number {
  return Object.entries(values).reduce((total, [k, v]) => (k === except ? total : total + v), 0);
}

/** What the queues named in `queues` counted between `before` and `after` (a queue missing before counts from zero). */
export function brokerOpsBetween(before: ServiceBusStats, after: ServiceBusStats, queues: readonly string[]): BrokerOps {
  const total: BrokerOps = { transfers: 0, deliveries: 0, dispositions: 0, renewals: 0, management: 0, messagesIn: 0, dedupDrops: 0 };
  for (const name of queues) {
    const a = queueStats(after, name);
    if (!a) continue;
    const b = queueStats(before, name);
    total.transfers += a.framesIn - (b?.framesIn ?? 0);
    total.deliveries += a.deliveries - (b?.deliveries ?? 0);
    total.dispositions += sum(a.dispositions) - (b ? sum(b.dispositions) : 0);
    total.renewals += (a.managementOps['renew-lock'] ?? 0) - (b?.managementOps['renew-lock'] ?? 0);
    total.management += sum(a.managementOps, 'renew-lock') - (b ? sum(b.managementOps, 'renew-lock') : 0);
    total.messagesIn += a.messagesIn - (b?.messagesIn ?? 0);
    total.dedupDrops += a.dedupDrops - (b?.dedupDrops ?? 0);
  }
  return total;
}

/** Adds up the operations of several runs. */
export function addBrokerOps(runs: readonly BrokerOps[]): BrokerOps {
  const total: BrokerOps = { transfers: 0, deliveries: 0, dispositions: 0, renewals: 0, management: 0, messagesIn: 0, dedupDrops: 0 };
  for (const run of runs) for (const key of Object.keys(total) as (keyof BrokerOps)[]) total[key] += run[key];
  return total;
}

/** The operations the goal counts (renewals apart): transfers, deliveries, dispositions, management. */
export function billedOps(ops: BrokerOps): number {
  return ops.transfers + ops.deliveries + ops.dispositions + ops.management;
}
