import { ServiceBusClient, type ServiceBusReceivedMessage } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { fakeClock } from './test-helpers/clock';

const clock = fakeClock();
let sb: ServiceBusEmulator;

beforeAll(async () => {
  sb = await startServiceBus({ now: clock.now });
});

afterAll(async () => {
  await sb.stop();
});

describe('load and faults', () => {
  it('4 receivers × 2 000 messages: each delivered once', async () => {
    const client = new ServiceBusClient(sb.connectionString);
    const sender = client.createSender('load');
    const total = 8_000;
    for (let i = 0; i < total; i += 250) {
      const batch = await sender.createMessageBatch();
      for (let j = i; j < i + 250; j++) expect(batch.tryAddMessage({ body: j })).toBe(true);
      await sender.sendMessages(batch);
    }
    const seen = new Map<number, number>();
    const clients = Array.from({ length: 4 }, () => new ServiceBusClient(sb.connectionString));
    const receivers = clients.map((c) => c.createReceiver('load', { maxAutoLockRenewalDurationInMs: 0 }));
    await Promise.all(
      receivers.map(async (receiver) => {
        for (;;) {
          const got = await receiver.receiveMessages(50, { maxWaitTimeInMs: 300 });
          if (got.length === 0) return;
          for (const m of got) seen.set(m.body as number, (seen.get(m.body as number) ?? 0) + 1);
          await Promise.all(got.map((m) => receiver.completeMessage(m)));
        }
      }),
    );
    expect(seen.size).toBe(total);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(sb.stats().queues.load).toMatchObject({ deliveries: total, active: 0 });
    await Promise.all(clients.map((c) => c.close()));
    await client.close();
  });

  it('failNext(attach) refuses the next link attach with the condition', async () => {
    const client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0 } });
    sb.failNext('attach', 'com.microsoft:entity-disabled');
    await expect(client.createSender('attach').sendMessages({ body: 1 })).rejects.toMatchObject({ code: 'MessagingEntityDisabled' });
    await client.createSender('attach').sendMessages({ body: 2 });
    await client.close();
  });

  it('failNext(settle | management | cbs) fails that operation once', async () => {
    const client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0 } });
    await client.createSender('faults').sendMessages({ body: 1 });
    const receiver = client.createReceiver('faults', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    sb.failNext('settle', 'com.microsoft:server-busy');
    await expect(receiver.completeMessage(m!)).rejects.toMatchObject({ code: 'ServiceBusy' });
    sb.failNext('management', 'com.microsoft:server-busy');
    await expect(receiver.peekMessages(1)).rejects.toMatchObject({ code: 'ServiceBusy' });
    expect(await receiver.peekMessages(1)).toHaveLength(1);
    const other = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0 } });
    sb.failNext('cbs', 'com.microsoft:server-busy');
    await expect(other.createSender('faults').sendMessages({ body: 2 })).rejects.toMatchObject({ code: 'ServiceBusy' });
    await other.close();
    await client.close();
  });

  it('dropConnections() mid-lock: the client reconnects and gets the message again after the lock', async () => {
    const client = new ServiceBusClient(sb.connectionString);
    await client.createSender('drop').sendMessages({ body: 'held' });
    const receiver = client.createReceiver('drop', { maxAutoLockRenewalDurationInMs: 0 });
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    expect(first?.body).toBe('held');
    sb.dropConnections();
    clock.advance(61_000);
    // A receive in flight while the socket closes may fail; the client reconnects on the next one.
    let again: ServiceBusReceivedMessage | undefined;
    for (let attempt = 0; attempt < 3 && !again; attempt++) {
      [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2_000 }).catch(() => []);
    }
    expect(again?.body).toBe('held');
    expect(again?.deliveryCount).toBe(1);
    await receiver.completeMessage(again!);
    await client.close();
  });
});
