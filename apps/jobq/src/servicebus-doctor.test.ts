import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startServiceBus, type ServiceBusEmulator } from '@jobq/local';
import type { TaskQueue } from '@jobq/ports';
import { closeEverything } from './closing';
import { resolveConfig } from './config';
import { openPlainQueue } from './plain-queue';
import { checkServiceBusQueues } from './servicebus-doctor';

let sb: ServiceBusEmulator;
beforeAll(async () => {
  sb = await startServiceBus();
});
afterAll(async () => {
  await closeEverything();
  await sb.stop();
});

async function open(name: string, adminEndpoint: string | null = sb.adminEndpoint): Promise<TaskQueue> {
  const env = {
    JOBQ_SERVICEBUS_CONNECTION_STRING: sb.connectionString,
    ...(adminEndpoint === null ? {} : { JOBQ_SERVICEBUS_ADMIN_ENDPOINT: adminEndpoint }),
  };
  return openPlainQueue(resolveConfig({}, env, '/'), `sb://local/${name}`, { createIfMissing: true, lockDurationInMs: 30_000 });
}

describe('the Service Bus queue check of workflow doctor', () => {
  it('is ok for the queues jobq creates, and says so in numbers', async () => {
    const queue = await open('created');
    const check = await checkServiceBusQueues([{ spec: 'sb://local/created', queue, completions: true }]);
    expect(check).toEqual({
      status: 'ok',
      message: 'sb://local/created: LockDuration 30s, MaxDeliveryCount 1000, duplicate detection 10m, 0 messages, dead-letter 0',
      hint: null,
    });
  });

  it('warns about a low MaxDeliveryCount, a short lock and dead letters, notes duplicate detection off, and explains each', async () => {
    sb.declareQueue('handmade', { maxDeliveryCount: 10, lockDurationMs: 5_000, defaultMessageTimeToLiveMs: 3_600_000 });
    const queue = await open('handmade');
    await queue.send([{ body: '{"a":1}' }, { body: '{"b":2}' }]);
    const [message] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 5_000 });
    await queue.deadLetter(message!, 'poison: not a task');
    const check = await checkServiceBusQueues([{ spec: 'sb://local/handmade', queue, completions: false }]);
    expect(check?.status).toBe('warn');
    expect(check?.message).toBe(
      'sb://local/handmade: LockDuration 5s, MaxDeliveryCount 10, duplicate detection off (an optimisation only: repeats are still delivered and ignored; ' +
        'it can only be chosen when a queue is created, not on Basic), messages expire after 1h, 1 message, dead-letter 1 — ' +
        'LockDuration 5s is short, MaxDeliveryCount 10 is low, 1 dead-lettered message',
    );
    expect(check?.hint).toContain('after 10 deliveries Service Bus dead-letters them');
    expect(check?.hint).toContain('az servicebus queue update --max-delivery-count 1000');
    expect(check?.hint).toContain('jobq sb://local/handmade peek --failed');
  });

  it('counts by peeking and says why when the settings cannot be read; leaves storage queues out', async () => {
    const queue = await open('blind', null);
    await queue.send({ body: '{"a":1}' });
    const check = await checkServiceBusQueues([{ spec: 'sb://local/blind', queue, completions: false }]);
    expect(check).toEqual({
      status: 'ok',
      message:
        'sb://local/blind: settings not readable (needs the Azure Service Bus Data Owner role, or JOBQ_SERVICEBUS_ADMIN_ENDPOINT for a local broker), counted by peeking, 1 message, dead-letter 0',
      hint: null,
    });
    const storageLike = { ...queue, describe: undefined } as unknown as TaskQueue;
    expect(await checkServiceBusQueues([{ spec: 'acct/q', queue: storageLike, completions: false }])).toBeNull();
  });
});
