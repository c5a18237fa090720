import { describe, expect, it } from '@jest/globals';
import { ServiceBusClient } from '@azure/service-bus';
import type { Server } from 'node:net';
import type rhea from 'rhea';
import { Broker } from './broker';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { PROFILE_DEFAULTS, PROFILE_LIMITS } from './profile';
import { BrokerRegistry } from './registry';
import { until } from './test-helpers/clock';
import { closeRaw, rawClient } from './test-helpers/raw';

let sb: ServiceBusEmulator;

beforeAll(async () => {
  sb = await startServiceBus({ adminPort: null });
});

afterAll(async () => {
  await sb.stop();
});

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function sendRaw(connection: rhea.Connection, queue: string, count: number): Promise<void> {
  const sender = connection.open_sender(queue);
  let accepted = 0;
  await new Promise<void>((resolve) => {
    sender.on('accepted', () => {
      if (++accepted === count) resolve();
    });
    sender.once('sendable', () => {
      for (let i = 0; i < count; i++) sender.send({ body: `m${i}` });
    });
  });
  sender.close();
}

describe('credit and drain (raw rhea client)', () => {
  it('a drain is answered when the transfers use up the credit', async () => {
    const connection = await rawClient(sb.port, 'drain-used');
    await sendRaw(connection, 'drain-used', 1);
    const receiver = connection.open_receiver({ source: { address: 'drain-used' }, credit_window: 0, autoaccept: false });
    const messages: unknown[] = [];
    receiver.on('message', (ctx: rhea.EventContext) => messages.push(ctx.message?.body));
    const drained = new Promise<void>((resolve) => receiver.once('receiver_drained', () => resolve()));
    receiver.once('receiver_open', () => {
      receiver.add_credit(1);
      receiver.drain_credit();
    });
    await within(drained, 5_000, 'receiver_drained');
    expect(messages).toEqual(['m0']);
    expect((receiver as unknown as { credit: number }).credit).toBe(0);
    await closeRaw(connection);
  });

  it('a drain with credit left over hands the rest back', async () => {
    const connection = await rawClient(sb.port, 'drain-rest');
    await sendRaw(connection, 'drain-rest', 2);
    const receiver = connection.open_receiver({ source: { address: 'drain-rest' }, credit_window: 0, autoaccept: false });
    const messages: unknown[] = [];
    receiver.on('message', (ctx: rhea.EventContext) => messages.push(ctx.message?.body));
    const drained = new Promise<void>((resolve) => receiver.once('receiver_drained', () => resolve()));
    receiver.once('receiver_open', () => {
      receiver.add_credit(5);
      receiver.drain_credit();
    });
    await within(drained, 5_000, 'receiver_drained');
    expect(messages).toEqual(['m0', 'm1']);
    expect((receiver as unknown as { credit: number }).credit).toBe(0);
    await closeRaw(connection);
  });
});

describe('credit and the session window (raw rhea client)', () => {
  it("while the client's session window is full, no more messages are locked than the link has credit for", async () => {
    const connection = await rawClient(sb.port, 'window');
    // A session whose incoming window is 2 unsettled deliveries: the broker's rhea holds back further transfers.
    const session = (connection as unknown as { create_session(size: number): rhea.Session }).create_session(2);
    session.begin();
    const receiver = session.open_receiver({ source: { address: 'window' }, credit_window: 0, autoaccept: false });
    const received: unknown[] = [];
    receiver.on('message', (ctx: rhea.EventContext) => received.push(ctx.message?.body));
    await new Promise<void>((resolve) => receiver.once('receiver_open', () => resolve()));
    receiver.add_credit(5);
    // Sent one by one, every message wakes the delivery pump up again.
    for (let i = 0; i < 12; i++) await sendRaw(connection, 'window', 1);
    await until(() => received.length === 2);
    const stats = sb.stats().queues.window!;
    expect(stats.locked).toBeLessThanOrEqual(5);
    expect(stats.deliveries).toBeLessThanOrEqual(5);
    await closeRaw(connection);
  });
});

describe('faults of the broker itself', () => {
  it('an unexpected error while settling is answered, not thrown, and the broker carries on', async () => {
    const client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } });
    const sender = client.createSender('settle-bug');
    await sender.sendMessages([{ body: 'a' }, { body: 'b' }]);
    const receiver = client.createReceiver('settle-bug', { maxAutoLockRenewalDurationInMs: 0 });
    const messages = await receiver.receiveMessages(2, { maxWaitTimeInMs: 2_000 });
    expect(messages).toHaveLength(2);
    const main = (sb.registry as BrokerRegistry).queue('settle-bug')!.main;
    const settle = main.settle.bind(main);
    main.settle = () => {
      throw new Error('settle broke');
    };
    await expect(receiver.completeMessage(messages[0]!)).rejects.toThrow(/settle broke/);
    main.settle = settle;
    await receiver.completeMessage(messages[1]!);
    expect(sb.stats().queues['settle-bug']!.dispositions.complete).toBe(1);
    await client.close();
  });

  it('an unexpected error in the time sweep is not thrown; the other queues are still swept', async () => {
    sb.declareQueue('sweep-bug');
    sb.declareQueue('sweep-ok');
    const broken = (sb.registry as BrokerRegistry).queue('sweep-bug')!;
    const ok = (sb.registry as BrokerRegistry).queue('sweep-ok')!;
    let okSweeps = 0;
    const okSweep = ok.sweep.bind(ok);
    ok.sweep = () => {
      okSweeps++;
      okSweep();
    };
    broken.sweep = () => {
      throw new Error('sweep broke');
    };
    try {
      await until(() => okSweeps >= 3);
      expect(() => sb.stats()).not.toThrow();
    } finally {
      sb.registry.delete('sweep-bug');
    }
  });
});

describe('bookkeeping', () => {
  it('an unknown $management operation is counted as "other"', async () => {
    const connection = await rawClient(sb.port, 'ops');
    const replies = connection.open_receiver({
      source: { address: 'ops/$management' },
      target: { address: 'ops-reply' },
      name: 'ops-reply',
    });
    const answer = new Promise<unknown>((resolve) =>
      replies.once('message', (ctx: rhea.EventContext) => resolve(ctx.message?.application_properties)),
    );
    const requests = connection.open_sender('ops/$management');
    requests.once('sendable', () => {
      requests.send({
        message_id: 'r1',
        reply_to: 'ops-reply',
        application_properties: { operation: 'com.microsoft:made-up-operation-1' },
        body: {},
      });
    });
    expect(await within(answer, 5_000, 'the management reply')).toMatchObject({ statusCode: 501 });
    await closeRaw(connection);
    expect(sb.stats().queues.ops!.managementOps).toEqual({ other: 1 });
  });

  it('a sender attached to the dead-letter queue of an unknown queue is refused without creating the queue', async () => {
    const client = new ServiceBusClient(sb.connectionString, { retryOptions: { maxRetries: 0, timeoutInMs: 5_000 } });
    await expect(client.createSender('nodlq/$DeadLetterQueue').sendMessages({ body: 1 })).rejects.toThrow(/dead-letter queue/);
    expect(sb.registry.get('nodlq')).toBeUndefined();
    await client.close();
  });

  it('closed reply links are forgotten; errors of the listening socket after the start are not thrown', async () => {
    const limits = PROFILE_LIMITS.azure;
    const registry = new BrokerRegistry({ defaults: PROFILE_DEFAULTS.azure, rules: { limits, lockDurationFloorMs: 5_000 }, now: Date.now });
    const broker = new Broker({
      registry,
      limits,
      key: { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' },
      autoCreateQueues: true,
      now: Date.now,
    });
    const port = await broker.start(0);
    const internal = broker as unknown as { connections: Map<unknown, { replyLinks: Map<string, unknown> }>; server: Server };
    try {
      const connection = await rawClient(port, 'replies');
      const held = () => [...internal.connections.values()].reduce((n, s) => n + s.replyLinks.size, 0);
      const before = held();
      for (let i = 0; i < 5; i++) {
        const link = connection.open_receiver({
          source: { address: 'replies/$management' },
          target: { address: `reply-${i}` },
          name: `reply-${i}`,
        });
        await new Promise<void>((resolve) => link.once('receiver_open', () => resolve()));
        expect(held()).toBeGreaterThan(before);
        link.close();
        await new Promise<void>((resolve) => link.once('receiver_close', () => resolve()));
      }
      await until(() => held() === before);
      await closeRaw(connection);
      expect(() => {
        internal.server.emit('error', new Error('accept failed'));
        internal.server.emit('error', new Error('accept failed again'));
      }).not.toThrow();
    } finally {
      await broker.stop();
    }
  });
});
