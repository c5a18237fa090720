import { createConnection } from 'node:net';
import { ServiceBusClient, type ServiceBusError } from '@azure/service-bus';
import rhea from 'rhea';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { createSasToken } from './sas';
import { closeRaw, rawClient } from './test-helpers/raw';

const retryOptions = { maxRetries: 0, timeoutInMs: 5_000 };
let sb: ServiceBusEmulator;

beforeAll(async () => {
  sb = await startServiceBus();
});

afterAll(async () => {
  await sb.stop();
});

async function sendWith(connectionString: string, queue = 'auth'): Promise<unknown> {
  const client = new ServiceBusClient(connectionString, { retryOptions });
  try {
    await client.createSender(queue).sendMessages({ body: 'x' });
    return undefined;
  } catch (err) {
    return err;
  } finally {
    await client.close();
  }
}

describe('connections and authentication', () => {
  it('accepts the right key and refuses a wrong one with UnauthorizedAccess', async () => {
    expect(await sendWith(sb.connectionString)).toBeUndefined();
    const wrong = sb.connectionString.replace('SharedAccessKey=SAS_KEY_VALUE', 'SharedAccessKey=nope');
    expect(await sendWith(wrong)).toMatchObject({ code: 'UnauthorizedAccess' });
    expect(sb.stats().cbsPuts).toBeGreaterThan(0);
  });

  it('refuses an expired token with UnauthorizedAccess', async () => {
    const endpoint = `sb://127.0.0.1:${sb.port}/`;
    const expired = createSasToken(endpoint, { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' }, Date.now() - 60_000);
    const client = new ServiceBusClient(`Endpoint=${endpoint};SharedAccessSignature=${expired};UseDevelopmentEmulator=true`, {
      retryOptions,
    });
    const err = (await client
      .createSender('auth')
      .sendMessages({ body: 'x' })
      .catch((e: unknown) => e)) as ServiceBusError;
    expect(err.code).toBe('UnauthorizedAccess');
    await client.close();
  });

  it('sends a single message up to max_message_size and refuses one byte more', async () => {
    const client = new ServiceBusClient(sb.connectionString, { retryOptions });
    const sender = client.createSender('size');
    await sender.sendMessages({ body: Buffer.alloc(1_000) });
    const overhead = sb.stats().queues.size!.bytesHeld - 1_000;
    const fits = 262_144 - overhead;
    await sender.sendMessages({ body: Buffer.alloc(fits) });
    await expect(sender.sendMessages({ body: Buffer.alloc(fits + 1) })).rejects.toMatchObject({ code: 'MessageSizeExceeded' });
    await client.close();
  });

  it('refuses topics, sessions, unknown queues without auto-create and illegal names', async () => {
    const strict = await startServiceBus({ autoCreateQueues: false, queues: ['known'] });
    const client = new ServiceBusClient(strict.connectionString, { retryOptions });
    await client.createSender('known').sendMessages({ body: 1 });
    await expect(client.createSender('unknown').sendMessages({ body: 1 })).rejects.toMatchObject({ code: 'MessagingEntityNotFound' });
    await expect(client.createReceiver('t', 's').receiveMessages(1, { maxWaitTimeInMs: 200 })).rejects.toThrow(
      /topics and subscriptions are not supported/,
    );
    // The broker answers the attach and detaches it with amqp:not-implemented at once. When both frames
    // arrive together, SDK 7.9.5 reports the missing session filter of the attach instead of the detach's error.
    const refused = (await client.acceptSession('known', 'sess').catch((e: unknown) => e)) as ServiceBusError;
    expect(refused).toBeInstanceOf(Error);
    if (refused.code !== 'SessionCannotBeLocked') expect(refused.message).toMatch(/sessions are not supported/);
    await expect(client.createSender('-bad-').sendMessages({ body: 1 })).rejects.toThrow(/illegal queue name/);
    await client.close();
    await strict.stop();
  });

  it('refuses connections over the limit with resource-limit-exceeded', async () => {
    const small = await startServiceBus({ limits: { maxConnections: 1 } });
    const a = new ServiceBusClient(small.connectionString, { retryOptions });
    const b = new ServiceBusClient(small.connectionString, { retryOptions });
    await a.createSender('q').sendMessages({ body: 1 });
    await expect(b.createSender('q').sendMessages({ body: 1 })).rejects.toThrow(/at most 1 connections/);
    await a.close();
    await b.close();
    await small.stop();
  });

  it('rejects a start on a taken port, naming it; stop is idempotent', async () => {
    await expect(startServiceBus({ port: sb.port })).rejects.toThrow(new RegExp(`127.0.0.1:${sb.port}.*in use`));
    const other = await startServiceBus();
    await other.stop();
    await other.stop();
  });

  it('closes only the connection that sent garbage', async () => {
    const socket = createConnection({ port: sb.port, host: '127.0.0.1' });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    await closed;
    expect(await sendWith(sb.connectionString)).toBeUndefined();
  });

  it('a raw rhea client gets the body bytes unchanged and delivery-count 0 first', async () => {
    const body = Buffer.from([0, 1, 2, 250, 255, 0x80, 0x13, 0x70]);
    const connection = await rawClient(sb.port, 'raw');
    const sender = connection.open_sender('raw');
    await new Promise((resolve) =>
      sender.once('accepted', resolve).once('sendable', () => sender.send({ body: rhea.message.data_section(body) })),
    );
    const receiver = connection.open_receiver({ source: { address: 'raw' }, autoaccept: true });
    const message = await new Promise<rhea.Message>((resolve) =>
      receiver.on('message', (c: rhea.EventContext) => resolve(c.message as rhea.Message)),
    );
    await closeRaw(connection);
    const content: unknown = (message.body as { content?: unknown }).content;
    expect(Buffer.compare(content as Buffer, body)).toBe(0);
    expect(message.delivery_count ?? 0).toBe(0);
    expect(message.message_annotations?.['x-opt-sequence-number']).toBe(1);
  });

  it('an undecodable transfer closes that connection with amqp:decode-error', async () => {
    const connection = await rawClient(sb.port, 'garbled');
    const sender = connection.open_sender('garbled');
    const closed = new Promise<unknown>((resolve) =>
      connection.once('connection_close', (ctx: rhea.EventContext) => resolve(ctx.connection.error)),
    );
    connection.on('connection_error', () => undefined);
    sender.once('sendable', () => sender.send(Buffer.from([0x00, 0x53, 0x77, 0xff, 0xff]), undefined, 0));
    expect(await closed).toMatchObject({ condition: 'amqp:decode-error' });
    expect(await sendWith(sb.connectionString)).toBeUndefined();
  });
});
