import { ServiceBusClient } from '@azure/service-bus';
import rhea from 'rhea';
import { startServiceBus } from './emulator';
import { QueueRegistryError } from './types';

const retryOptions = { maxRetries: 0, timeoutInMs: 5_000 };

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof QueueRegistryError ? err.code : 'other';
  }
}

describe('the queue registry (emulator.registry)', () => {
  it('creates, gets, updates, lists and deletes queues with Azure defaults and ranges', async () => {
    const sb = await startServiceBus({ queues: ['Pre', { name: 'tuned', properties: { maxDeliveryCount: 5 } }] });
    const { registry } = sb;
    expect(registry.list().map((q) => q.name)).toEqual(['Pre', 'tuned']);
    expect(registry.get('pre')?.properties).toMatchObject({
      lockDurationMs: 60_000,
      maxDeliveryCount: 10,
      defaultMessageTimeToLiveMs: Infinity,
    });
    expect(registry.get('tuned')?.properties.maxDeliveryCount).toBe(5);
    expect(code(() => registry.create('PRE', {}))).toBe('conflict');
    expect(code(() => registry.create('bad name', {}))).toBe('bad-request');
    expect(code(() => registry.create('short-lock', { lockDurationMs: 1_000 }))).toBe('bad-request');
    expect(code(() => registry.create('long-lock', { lockDurationMs: 301_000 }))).toBe('bad-request');
    expect(code(() => registry.update('missing', {}))).toBe('not-found');
    const updated = registry.update('tuned', { lockDurationMs: 30_000 });
    expect(updated.properties).toMatchObject({ lockDurationMs: 30_000, maxDeliveryCount: 5 });

    const client = new ServiceBusClient(sb.connectionString, { retryOptions });
    const sender = client.createSender('tuned');
    await sender.sendMessages([{ body: 1 }, { body: 2 }]);
    const [m] = await client.createReceiver('tuned').receiveMessages(1, { maxWaitTimeInMs: 1_000 });
    expect(m).toBeDefined();
    expect(registry.get('tuned')?.counts).toMatchObject({ active: 2, deadLetter: 0, scheduled: 0, total: 2 });
    expect(registry.delete('tuned')).toBe(true);
    expect(registry.delete('tuned')).toBe(false);
    expect(registry.get('tuned')).toBeUndefined();
    await client.close();
    await sb.stop();
  });

  it('without auto-create a send to a deleted queue finds no entity, and reaches it once created again', async () => {
    const sb = await startServiceBus({ autoCreateQueues: false, queues: ['gone'] });
    const client = new ServiceBusClient(sb.connectionString, { retryOptions });
    const sender = client.createSender('gone');
    await sender.sendMessages({ body: 1 });
    expect(sb.registry.delete('gone')).toBe(true);
    await expect(sender.sendMessages({ body: 2 })).rejects.toMatchObject({ code: 'MessagingEntityNotFound' });
    sb.registry.create('gone', {});
    await sender.sendMessages({ body: 3 });
    expect(sb.registry.get('gone')?.counts.active).toBe(1);
    await client.close();
    await sb.stop();
  });

  it('lockDurationFloorMs lowers the LockDuration floor', async () => {
    const sb = await startServiceBus({ lockDurationFloorMs: 100 });
    expect(sb.registry.create('fast', { lockDurationMs: 200 }).properties.lockDurationMs).toBe(200);
    await sb.stop();
  });

  it('the emulator profile: MaxDeliveryCount 3, TTL at most 1 h, 50 entities', async () => {
    const sb = await startServiceBus({ profile: 'emulator' });
    const info = sb.registry.create('e0', {});
    expect(info.properties).toMatchObject({ maxDeliveryCount: 3, defaultMessageTimeToLiveMs: 3_600_000 });
    expect(code(() => sb.registry.create('ttl', { defaultMessageTimeToLiveMs: 3_600_001 }))).toBe('bad-request');
    expect(code(() => sb.registry.create('window', { duplicateDetectionHistoryTimeWindowMs: 301_000 }))).toBe('bad-request');
    for (let i = 1; i < 50; i++) sb.registry.create(`e${i}`, {});
    expect(code(() => sb.registry.create('e50', {}))).toBe('limit');
    const client = new ServiceBusClient(sb.connectionString, { retryOptions });
    await expect(client.createSender('one-too-many').sendMessages({ body: 1 })).rejects.toMatchObject({ code: 'QuotaExceeded' });
    await client.close();
    await sb.stop();
  });

  it('a full queue refuses a send with QuotaExceeded', async () => {
    const sb = await startServiceBus({ queues: [{ name: 'small', properties: { maxSizeInMegabytes: 1 } }] });
    const client = new ServiceBusClient(sb.connectionString, { retryOptions });
    const sender = client.createSender('small');
    const body = Buffer.alloc(200_000);
    for (let i = 0; i < 5; i++) await sender.sendMessages({ body });
    await expect(sender.sendMessages({ body })).rejects.toMatchObject({ code: 'QuotaExceeded' });
    expect(sb.stats().queues.small?.bytesHeld).toBeGreaterThan(1_000_000);
    await client.close();
    await sb.stop();
  });

  it('refuses Entra ID (jwt) tokens on $cbs with 401', async () => {
    const sb = await startServiceBus();
    const connection = rhea.create_container().connect({ port: sb.port, host: '127.0.0.1', reconnect: false });
    const reply = await new Promise<Record<string, unknown>>((resolve) => {
      connection.on('connection_open', () => {
        const replies = connection.open_receiver({ source: { address: '$cbs' }, name: 'cbs-reply' });
        replies.on('message', (ctx: rhea.EventContext) => resolve(ctx.message?.application_properties as Record<string, unknown>));
        const cbs = connection.open_sender('$cbs');
        cbs.once('sendable', () => {
          cbs.send({
            message_id: 'jwt-1',
            reply_to: 'cbs-reply',
            application_properties: { operation: 'put-token', type: 'jwt', name: `sb://127.0.0.1:${sb.port}/q` },
            body: 'eyJ0eXAiOiJKV1QifQ.e30.sig',
          });
        });
      });
    });
    await new Promise((resolve) => {
      connection.once('connection_close', resolve);
      connection.close();
    });
    expect(reply['status-code']).toBe(401);
    expect(reply['status-description']).toMatch(/Entra ID/);
    await sb.stop();
  });
});
