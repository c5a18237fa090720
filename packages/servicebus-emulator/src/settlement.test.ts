import { ServiceBusClient, type ServiceBusReceiver, type ServiceBusSender } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { fakeClock } from './test-helpers/clock';
import { targets } from './test-helpers/targets';

const clock = fakeClock();
let sb: ServiceBusEmulator;

beforeAll(async () => {
  sb = await startServiceBus({ now: clock.now });
});

afterAll(async () => {
  await sb.stop();
});

async function receiveOne(receiver: ServiceBusReceiver, wait = 1_000) {
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: wait });
  if (!m) throw new Error('no message');
  return m;
}

describe.each(targets(() => sb))('settlement ($label)', (target) => {
  let client: ServiceBusClient;
  const brokerOnly = target.emulator ? it : it.skip;

  beforeAll(() => {
    client = new ServiceBusClient(target.connectionString(), { retryOptions: { maxRetries: 0, timeoutInMs: 10_000 } });
  });

  afterAll(async () => {
    await client.close();
  });

  async function setup(base: string): Promise<{ queue: string; sender: ServiceBusSender; receiver: ServiceBusReceiver }> {
    const queue = await target.queue(base, { lockDurationMs: 30_000, maxDeliveryCount: 3 });
    return {
      queue,
      sender: client.createSender(queue),
      receiver: client.createReceiver(queue, { maxAutoLockRenewalDurationInMs: 0 }),
    };
  }

  it('abandon returns the message with delivery count + 1', async () => {
    const { sender, receiver } = await setup('abandon');
    await sender.sendMessages({ body: 'a' });
    const m1 = await receiveOne(receiver);
    expect(m1.deliveryCount).toBe(0);
    await receiver.abandonMessage(m1, { tried: 1 });
    const m2 = await receiveOne(receiver);
    expect(m2.deliveryCount).toBe(1);
    expect(m2.applicationProperties).toMatchObject({ tried: 1 });
    expect(m2.sequenceNumber?.toNumber()).toBe(m1.sequenceNumber?.toNumber());
    await receiver.completeMessage(m2);
    if (target.emulator) expect(sb.stats().queues.abandon!.dispositions).toMatchObject({ abandon: 1, complete: 1 });
  });

  it('dead-letter keeps reason and description; the dead-letter queue receives and completes', async () => {
    const { queue, sender, receiver } = await setup('dlq');
    await sender.sendMessages({ body: 'bad' });
    const m = await receiveOne(receiver);
    await receiver.deadLetterMessage(m, { deadLetterReason: 'Broken', deadLetterErrorDescription: 'cannot parse' });
    const dlq = client.createReceiver(queue, { subQueueType: 'deadLetter', maxAutoLockRenewalDurationInMs: 0 });
    const d = await receiveOne(dlq);
    expect(d.body).toBe('bad');
    expect(d.deadLetterReason).toBe('Broken');
    expect(d.deadLetterErrorDescription).toBe('cannot parse');
    if (!target.emulator) return;
    expect(d.deadLetterSource).toBe(queue);
    await expect(dlq.deadLetterMessage(d)).rejects.toThrow(/dead-letter/);
    clock.advance(31_000);
    const again = await receiveOne(dlq, 2_000);
    expect(again.deliveryCount).toBe(1);
    await dlq.completeMessage(again);
    expect(sb.stats().queues.dlq!.deadLetter).toBe(0);
  });

  it('defer, then receiveDeferredMessages and complete', async () => {
    const { sender, receiver } = await setup('defer');
    await sender.sendMessages({ body: 'later' });
    const m = await receiveOne(receiver);
    await receiver.deferMessage(m);
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).toEqual([]);
    const [d] = await receiver.receiveDeferredMessages([m.sequenceNumber!]);
    expect(d?.body).toBe('later');
    expect(d?.state).toBe('deferred');
    expect(d?.deliveryCount).toBe(1);
    await receiver.completeMessage(d!);
    expect(await receiver.peekMessages(5)).toEqual([]);
  });

  brokerOnly('a deferred message locked by one receive is not handed to a second one until the lock goes', async () => {
    const { queue, sender, receiver } = await setup('defer-twice');
    await sender.sendMessages({ body: 'once' });
    const m = await receiveOne(receiver);
    await receiver.deferMessage(m);
    const [first] = await receiver.receiveDeferredMessages([m.sequenceNumber!]);
    expect(first?.body).toBe('once');
    const other = client.createReceiver(queue, { maxAutoLockRenewalDurationInMs: 0 });
    await expect(other.receiveDeferredMessages([m.sequenceNumber!])).rejects.toMatchObject({ code: 'MessageNotFound' });
    clock.advance(31_000);
    const [second] = await other.receiveDeferredMessages([m.sequenceNumber!]);
    expect(second?.body).toBe('once');
    await expect(receiver.completeMessage(first!)).rejects.toMatchObject({ code: 'MessageLockLost' });
    await other.completeMessage(second!);
    expect(sb.stats().queues['defer-twice']).toMatchObject({ deferred: 0, deliveries: 3 });
  });

  brokerOnly('renews a lock; an expired lock redelivers with count + 1 and a stale settle is MessageLockLost', async () => {
    const { sender, receiver } = await setup('expiry');
    await sender.sendMessages({ body: 'slow' });
    const m = await receiveOne(receiver);
    const before = m.lockedUntilUtc!.getTime();
    clock.advance(10_000);
    const renewed = await receiver.renewMessageLock(m);
    expect(renewed.getTime()).toBe(before + 10_000);
    clock.advance(31_000);
    const again = await receiveOne(receiver, 2_000);
    expect(again.deliveryCount).toBe(1);
    await expect(receiver.completeMessage(m)).rejects.toMatchObject({ code: 'MessageLockLost' });
    await receiver.completeMessage(again);
    expect(sb.stats().queues.expiry!.lockExpiries).toBe(1);
  });

  it('MaxDeliveryCount moves the message to the dead-letter queue', async () => {
    const { queue, sender, receiver } = await setup('mdc');
    await sender.sendMessages({ body: 'poison' });
    for (let i = 0; i < 3; i++) await receiver.abandonMessage(await receiveOne(receiver));
    expect(await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).toEqual([]);
    const dlq = client.createReceiver(`${queue}/$DeadLetterQueue`, { receiveMode: 'receiveAndDelete' });
    const d = await receiveOne(dlq);
    expect(d.deadLetterReason).toBe('MaxDeliveryCountExceeded');
    if (target.emulator) expect(sb.stats().queues.mdc!.autoDeadLetters.maxDeliveryCount).toBe(1);
  });

  brokerOnly('the dead-letter queue address is matched in any case', async () => {
    const { sender, receiver } = await setup('anycase');
    await sender.sendMessages({ body: 'x' });
    await receiver.deadLetterMessage(await receiveOne(receiver), { deadLetterReason: 'r', deadLetterErrorDescription: 'd' });
    const dlq = client.createReceiver('anycase/$deadletterqueue', { receiveMode: 'receiveAndDelete' });
    const [d] = await dlq.peekMessages(1);
    expect(d?.deadLetterReason).toBe('r');
    expect((await receiveOne(dlq)).body).toBe('x');
  });

  it('peek from sequence 1 includes locked messages', async () => {
    const { sender, receiver } = await setup('peek');
    await sender.sendMessages([{ body: 1 }, { body: 2 }, { body: 3 }]);
    const locked = await receiveOne(receiver);
    expect(locked.sequenceNumber?.toNumber()).toBe(1);
    const peeked = await receiver.peekMessages(10, { fromSequenceNumber: locked.sequenceNumber! });
    expect(peeked.map((p) => p.body as number)).toEqual([1, 2, 3]);
    expect(peeked[0]!.sequenceNumber?.toNumber()).toBe(locked.sequenceNumber?.toNumber());
  });

  it('settles through update-disposition after the receiver closed', async () => {
    const { queue, sender, receiver } = await setup('afterclose');
    await sender.sendMessages({ body: 'x' });
    const m = await receiveOne(receiver);
    await receiver.close();
    const other = client.createReceiver(queue);
    await other.completeMessage(m);
    expect(await other.peekMessages(5)).toEqual([]);
    if (target.emulator) expect(sb.stats().queues.afterclose!.managementOps['update-disposition']).toBe(1);
  });

  brokerOnly('detachReceivers forces receivers to reattach', async () => {
    const { queue, sender, receiver } = await setup('detach');
    await sender.sendMessages({ body: 'x' });
    await receiver.receiveMessages(1, { maxWaitTimeInMs: 1_000 }).then((ms) => Promise.all(ms.map((m) => receiver.abandonMessage(m))));
    sb.detachReceivers();
    const r2 = client.createReceiver(queue);
    const [m] = await r2.receiveMessages(1, { maxWaitTimeInMs: 2_000 });
    expect(m?.body).toBe('x');
  });
});
