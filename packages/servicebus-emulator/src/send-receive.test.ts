import { ServiceBusClient, type ServiceBusError } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { targets } from './test-helpers/targets';

let sb: ServiceBusEmulator;

beforeAll(async () => {
  sb = await startServiceBus();
});

afterAll(async () => {
  await sb.stop();
});

describe.each(targets(() => sb))('sending and receiving ($label)', (target) => {
  let client: ServiceBusClient;
  const brokerOnly = target.emulator ? it : it.skip;

  beforeAll(() => {
    client = new ServiceBusClient(target.connectionString(), { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } });
  });

  afterAll(async () => {
    await client.close();
  });

  it('sends one message, an array and a batch; peek-lock receive and complete', async () => {
    const queue = await target.queue('q1');
    const sender = client.createSender(queue);
    await sender.sendMessages({ body: 'one', messageId: 'm1', applicationProperties: { a: 1 } });
    await sender.sendMessages([{ body: 'two' }, { body: 'three' }]);
    const batch = await sender.createMessageBatch();
    for (let i = 0; i < 10; i++) expect(batch.tryAddMessage({ body: `b${i}` })).toBe(true);
    await sender.sendMessages(batch);
    const receiver = client.createReceiver(queue);
    const got = [];
    while (got.length < 13) {
      const more = await receiver.receiveMessages(20, { maxWaitTimeInMs: 1_000 });
      if (more.length === 0) break;
      got.push(...more);
    }
    expect(got.map((m) => m.body as string)).toEqual(['one', 'two', 'three', ...Array.from({ length: 10 }, (_, i) => `b${i}`)]);
    const first = got[0]!;
    expect(first.messageId).toBe('m1');
    expect(first.applicationProperties).toEqual({ a: 1 });
    expect(first.sequenceNumber?.toNumber()).toBeGreaterThan(0);
    expect(first.deliveryCount).toBe(0);
    expect(first.lockedUntilUtc).toBeInstanceOf(Date);
    expect(first.enqueuedTimeUtc).toBeInstanceOf(Date);
    for (const m of got) await receiver.completeMessage(m);
    if (target.emulator) {
      const stats = sb.stats().queues.q1!;
      expect(stats.messagesIn).toBe(13);
      expect(stats.framesIn).toBe(3);
      expect(stats.dispositions.complete).toBe(13);
      expect(stats.active).toBe(0);
    }
    await receiver.close();
    await sender.close();
  });

  it('receive-and-delete removes on delivery', async () => {
    const queue = await target.queue('q2');
    const sender = client.createSender(queue);
    await sender.sendMessages([{ body: 1 }, { body: 2 }]);
    const receiver = client.createReceiver(queue, { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 1_000 });
    expect(got.map((m) => m.body as number)).toEqual([1, 2]);
    expect(await receiver.peekMessages(5)).toEqual([]);
    await receiver.close();
    await sender.close();
  });

  it('an empty-queue receive returns within maxWaitTimeInMs + 2 s', async () => {
    const receiver = client.createReceiver(await target.queue('empty'));
    await receiver.peekMessages(1);
    const t0 = Date.now();
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 300 });
    expect(got).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2_300);
    await receiver.close();
  });

  it('an array too big for one batch is refused with MessageSizeExceeded', async () => {
    const sender = client.createSender(await target.queue('big'));
    const body = Buffer.alloc(100_000);
    await expect(sender.sendMessages([{ body }, { body }, { body }])).rejects.toMatchObject({ code: 'MessageSizeExceeded' });
    await sender.close();
  });

  brokerOnly('failNext(send, server-busy) surfaces as ServiceBusy', async () => {
    const sender = client.createSender('busy');
    await sender.sendMessages({ body: 'warm' });
    sb.failNext('send', 'com.microsoft:server-busy');
    const err = (await sender.sendMessages({ body: 'x' }).catch((e: unknown) => e)) as ServiceBusError;
    expect(err.code).toBe('ServiceBusy');
    await sender.sendMessages({ body: 'after' });
    await sender.close();
  });
});
