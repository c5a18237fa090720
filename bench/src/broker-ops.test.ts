import { describe, expect, it } from '@jest/globals';
import { emptyQueueStats, type QueueStats, type ServiceBusStats } from '@jobq/servicebus-emulator';
import { addBrokerOps, billedOps, brokerOpsBetween } from './broker-ops';

function queue(over: Partial<QueueStats>): QueueStats {
  return { ...emptyQueueStats(), ...over };
}

const stats = (queues: Record<string, QueueStats>): ServiceBusStats => ({ connections: 1, cbsPuts: 0, queues });

describe('brokerOpsBetween', () => {
  it('counts what the named queues saw between two snapshots, renewals apart from the other management ops', () => {
    const before = stats({
      Tasks: queue({
        messagesIn: 10,
        framesIn: 2,
        deliveries: 5,
        dispositions: { complete: 4, abandon: 1, deadLetter: 0, defer: 0, lockLost: 0 },
        managementOps: { 'renew-lock': 3 },
      }),
      other: queue({ messagesIn: 100, framesIn: 100 }),
    });
    const after = stats({
      Tasks: queue({
        messagesIn: 42,
        framesIn: 3,
        deliveries: 40,
        dispositions: { complete: 36, abandon: 1, deadLetter: 2, defer: 0, lockLost: 1 },
        managementOps: { 'renew-lock': 10, 'peek-message': 2 },
        dedupDrops: 1,
      }),
      // Created during the run: counted from zero.
      done: queue({
        messagesIn: 32,
        framesIn: 32,
        deliveries: 32,
        dispositions: { complete: 32, abandon: 0, deadLetter: 0, defer: 0, lockLost: 0 },
      }),
      other: queue({ messagesIn: 200, framesIn: 200 }),
    });
    // Queue names match case-insensitively, as the broker's do; a queue in neither snapshot adds nothing.
    const ops = brokerOpsBetween(before, after, ['tasks', 'DONE', 'missing']);
    expect(ops).toEqual({
      transfers: 1 + 32,
      deliveries: 35 + 32,
      dispositions: 35 + 32,
      renewals: 7,
      management: 2,
      messagesIn: 32 + 32,
      dedupDrops: 1,
    });
    expect(billedOps(ops)).toBe(33 + 67 + 67 + 2);
    expect(addBrokerOps([ops, ops])).toEqual({
      transfers: 66,
      deliveries: 134,
      dispositions: 134,
      renewals: 14,
      management: 4,
      messagesIn: 128,
      dedupDrops: 2,
    });
  });
});
