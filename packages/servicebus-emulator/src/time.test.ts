import { ServiceBusClient } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { fakeClock, sleep } from './test-helpers/clock';

const clock = fakeClock();
let sb: ServiceBusEmulator;
let client: ServiceBusClient;

beforeAll(async () => {
  sb = await startServiceBus({ now: clock.now });
  client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } });
});

afterAll(async () => {
  await client.close();
  await sb.stop();
});

describe('time: duplicate detection, time to live, scheduling', () => {
  it('drops a duplicate message id inside the window and accepts it after', async () => {
    sb.declareQueue('dedup', { requiresDuplicateDetection: true, duplicateDetectionHistoryTimeWindowMs: 60_000 });
    const sender = client.createSender('dedup');
    await sender.sendMessages({ body: 1, messageId: 'same' });
    await sender.sendMessages({ body: 2, messageId: 'same' });
    clock.advance(61_000);
    await sender.sendMessages({ body: 3, messageId: 'same' });
    const receiver = client.createReceiver('dedup', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 500 });
    expect(got.map((m) => m.body as number)).toEqual([1, 3]);
    expect(sb.stats().queues.dedup!.dedupDrops).toBe(1);
  });

  it('drops an expired message, or dead-letters it with TTLExpiredException', async () => {
    sb.declareQueue('ttl', {});
    sb.declareQueue('ttl-dlq', { deadLetteringOnMessageExpiration: true });
    for (const name of ['ttl', 'ttl-dlq']) {
      const sender = client.createSender(name);
      await sender.sendMessages([
        { body: 'short', timeToLive: 10_000 },
        { body: 'long', timeToLive: 100_000 },
      ]);
    }
    clock.advance(20_000);
    await sleep(120);
    for (const name of ['ttl', 'ttl-dlq']) {
      const receiver = client.createReceiver(name, { receiveMode: 'receiveAndDelete' });
      const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 300 });
      expect(got.map((m) => m.body as string)).toEqual(['long']);
    }
    expect(sb.stats().queues.ttl).toMatchObject({ ttlDrops: 1, deadLetter: 0 });
    const dlq = client.createReceiver('ttl-dlq', { subQueueType: 'deadLetter', receiveMode: 'receiveAndDelete' });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    expect(dead?.body).toBe('short');
    expect(dead?.deadLetterReason).toBe('TTLExpiredException');
  });

  it('delivers a scheduled message at its time; a cancelled one never', async () => {
    const sender = client.createSender('sched');
    const at = new Date(clock.now() + 60_000);
    const [keep] = await sender.scheduleMessages({ body: 'keep' }, at);
    const [drop] = await sender.scheduleMessages({ body: 'drop' }, at);
    await sender.cancelScheduledMessages(drop!);
    expect(sb.stats().queues.sched).toMatchObject({ scheduled: 1 });
    const receiver = client.createReceiver('sched', { receiveMode: 'receiveAndDelete' });
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).toEqual([]);
    clock.advance(61_000);
    const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 1_000 });
    expect(got.map((m) => m.body as string)).toEqual(['keep']);
    expect(got[0]!.sequenceNumber?.toNumber()).toBe(keep!.toNumber());
  });

  it('holds a message sent with scheduledEnqueueTimeUtc, alone or in a batch, until its time; its time to live counts from then', async () => {
    const sender = client.createSender('sched-send');
    const at = new Date(clock.now() + 60_000);
    await sender.sendMessages({ body: 'alone', scheduledEnqueueTimeUtc: at });
    const batch = await sender.createMessageBatch();
    for (const m of [{ body: 'now' }, { body: 'batched', scheduledEnqueueTimeUtc: at, timeToLive: 30_000 }])
      expect(batch.tryAddMessage(m)).toBe(true);
    await sender.sendMessages(batch);
    expect(sb.stats().queues['sched-send']).toMatchObject({ framesIn: 2, active: 1, scheduled: 2 });
    const receiver = client.createReceiver('sched-send', { receiveMode: 'receiveAndDelete' });
    expect((await receiver.receiveMessages(5, { maxWaitTimeInMs: 200 })).map((m) => m.body as string)).toEqual(['now']);
    clock.advance(61_000);
    const got = await receiver.receiveMessages(2, { maxWaitTimeInMs: 1_000 });
    expect(got.map((m) => m.body as string).sort()).toEqual(['alone', 'batched']);
    const batched = got.find((m) => m.body === 'batched')!;
    expect(batched.enqueuedTimeUtc?.getTime()).toBe(at.getTime());
    expect(batched.expiresAtUtc?.getTime()).toBe(at.getTime() + 30_000);
  });
});
