import { ServiceBusClient, type ServiceBusError } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';

let sb: ServiceBusEmulator;
let client: ServiceBusClient;

beforeAll(async () => {
  sb = await startServiceBus();
  client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } });
});

afterAll(async () => {
  await client.close();
  await sb.stop();
});

describe('sending', () => {
  it('sends one message, an array and a batch; peek-lock receive and complete', async () => {
    const sender = client.createSender('q1');
    await sender.sendMessages({ body: 'one', messageId: 'm1', applicationProperties: { a: 1 } });
    await sender.sendMessages([{ body: 'two' }, { body: 'three' }]);
    const batch = await sender.createMessageBatch();
    for (let i = 0; i < 10; i++) expect(batch.tryAddMessage({ body: `b${i}` })).toBe(true);
    await sender.sendMessages(batch);
    const receiver = client.createReceiver('q1');
    const got = await receiver.receiveMessages(20, { maxWaitTimeInMs: 1_000 });
    expect(got.map((m) => m.body as string)).toEqual(['one', 'two', 'three', ...Array.from({ length: 10 }, (_, i) => `b${i}`)]);
    const first = got[0]!;
    expect(first.messageId).toBe('m1');
    expect(first.applicationProperties).toEqual({ a: 1 });
    expect(first.sequenceNumber?.toNumber()).toBe(1);
    expect(first.deliveryCount).toBe(0);
    expect(first.lockedUntilUtc).toBeInstanceOf(Date);
    expect(first.enqueuedTimeUtc).toBeInstanceOf(Date);
    for (const m of got) await receiver.completeMessage(m);
    const stats = sb.stats().queues.q1!;
    expect(stats.messagesIn).toBe(13);
    expect(stats.framesIn).toBe(3);
    expect(stats.dispositions.complete).toBe(13);
    expect(stats.active).toBe(0);
    await receiver.close();
    await sender.close();
  });

  it('receive-and-delete removes on delivery', async () => {
    const sender = client.createSender('q2');
    await sender.sendMessages([{ body: 1 }, { body: 2 }]);
    const receiver = client.createReceiver('q2', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 500 });
    expect(got.map((m) => m.body as number)).toEqual([1, 2]);
    expect(sb.stats().queues.q2!.active).toBe(0);
    await receiver.close();
    await sender.close();
  });

  it('an empty-queue receive returns within maxWaitTimeInMs + 2 s', async () => {
    const receiver = client.createReceiver('empty');
    const t0 = Date.now();
    const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 300 });
    expect(got).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2_300);
    await receiver.close();
  });

  it('an array too big for one batch is refused with MessageSizeExceeded', async () => {
    const sender = client.createSender('big');
    const body = Buffer.alloc(100_000);
    await expect(sender.sendMessages([{ body }, { body }, { body }])).rejects.toMatchObject({ code: 'MessageSizeExceeded' });
    await sender.close();
  });

  it('failNext(send, server-busy) surfaces as ServiceBusy', async () => {
    const sender = client.createSender('busy');
    await sender.sendMessages({ body: 'warm' });
    sb.failNext('send', 'com.microsoft:server-busy');
    const err = (await sender.sendMessages({ body: 'x' }).catch((e: unknown) => e)) as ServiceBusError;
    expect(err.code).toBe('ServiceBusy');
    await sender.sendMessages({ body: 'after' });
    await sender.close();
  });
});
