import { createConnection } from 'node:net';
import { ServiceBusClient, type ServiceBusError } from '@azure/service-bus';
import rhea from 'rhea';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { createSasToken } from './sas';

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
    const client = new ServiceBusClient(`Endpoint=${endpoint};SharedAccessSignature=${expired};UseDevelopmentEmulator=true`, { retryOptions });
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
    await expect(client.createReceiver('t', 's').receiveMessages(1, { maxWaitTimeInMs: 200 })).rejects.toThrow(/topics and subscriptions are not supported/);
    await expect(client.acceptSession('known', 'sess')).rejects.toThrow(/sessions are not supported/);
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
    const connection = rhea.create_container().connect({ port: sb.port, host: '127.0.0.1', reconnect: false });
    const received = new Promise<rhea.Message>((resolve, reject) => {
      connection.on('connection_open', () => {
        const cbsReply = connection.open_receiver({ source: { address: '$cbs' }, name: 'cbs-reply' });
        const cbs = connection.open_sender('$cbs');
        cbsReply.on('message', (ctx) => {
          const status: unknown = (ctx.message?.application_properties as Record<string, unknown> | undefined)?.['status-code'];
          if (status !== 202) return reject(new Error(`cbs status ${String(status)}`));
          const sender = connection.open_sender('raw');
          sender.once('sendable', () => {
            sender.send({ body: rhea.message.data_section(body) });
            const receiver = connection.open_receiver({ source: { address: 'raw' }, autoaccept: true });
            receiver.on('message', (c: rhea.EventContext) => resolve(c.message as rhea.Message));
          });
        });
        cbs.once('sendable', () => {
          const token = createSasToken(`sb://127.0.0.1:${sb.port}/raw`, { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' }, Date.now() + 60_000);
          cbs.send({
            message_id: 'put-1',
            reply_to: 'cbs-reply',
            application_properties: { operation: 'put-token', type: 'servicebus.windows.net:sastoken', name: `sb://127.0.0.1:${sb.port}/raw` },
            body: token,
          });
        });
      });
    });
    const message = await received;
    await new Promise((resolve) => {
      connection.once('connection_close', resolve);
      connection.close();
    });
    const content: unknown = (message.body as { content?: unknown }).content;
    expect(Buffer.compare(content as Buffer, body)).toBe(0);
    expect(message.delivery_count ?? 0).toBe(0);
    expect(message.message_annotations?.['x-opt-sequence-number']).toBe(1);
  });
});
