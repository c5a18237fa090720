import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ServiceBusAdministrationClient } from '@azure/service-bus';
import { request as httpRequest } from 'node:http';
import { adminPolicy } from './admin-policy';
import { startAdminServer, type AdminServer } from './admin';
import { NEVER_DURATION } from './atom';
import { createSasToken } from './sas';
import { ServiceBusClient } from '@azure/service-bus';
import { startServiceBus, type ServiceBusEmulator } from './emulator';
import { LOCK_DURATION_FLOOR_MS, PROFILE_DEFAULTS, PROFILE_LIMITS } from './profile';
import { BrokerRegistry } from './registry';
import type { QueueRegistry } from './types';

/** The broker's own registry, as `startServiceBus` builds it (azure profile). */
function brokerRegistry(limits: Partial<(typeof PROFILE_LIMITS)['azure']> = {}): QueueRegistry {
  return new BrokerRegistry({
    defaults: { ...PROFILE_DEFAULTS.azure },
    rules: { limits: { ...PROFILE_LIMITS.azure, ...limits }, lockDurationFloorMs: LOCK_DURATION_FLOOR_MS },
    now: Date.now,
  });
}

const KEY = { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' };

let skewMs = 0;
const registry = brokerRegistry();
let server: AdminServer;

function connectionString(key = KEY.key, keyName = KEY.keyName): string {
  return `Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`;
}

function adminClient(endpoint = server.endpoint, key?: string): ServiceBusAdministrationClient {
  const client = new ServiceBusAdministrationClient(connectionString(key), { retryOptions: { maxRetries: 0 } });
  client.pipeline.addPolicy(adminPolicy(endpoint));
  return client;
}

async function failure(promise: Promise<unknown>): Promise<{ code?: string; statusCode?: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: string; statusCode?: number; message: string };
  }
  throw new Error('expected the call to fail');
}

/** A raw request with a valid token, for what the SDK never sends. */
function raw(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = `${server.endpoint}${path}`;
  const token = createSasToken(url, KEY, Date.now() + 60_000);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { authorization: token, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  server = await startAdminServer(registry, { sasKeyName: KEY.keyName, sasKey: KEY.key, now: () => Date.now() + skewMs });
});

afterAll(async () => {
  await server.stop();
});

/**
 * Where the SDK-level cases run: always the emulator's admin endpoint, and also a real namespace
 * when JOBQ_TEST_SERVICEBUS_CONNECTION_STRING is set (queues `jobqtest-<random>-…`, deleted after
 * the run; leftovers older than 1 h swept first). Cases that need the test registry stay emulator-only.
 */
interface Target {
  label: string;
  admin(): ServiceBusAdministrationClient;
  wrongKeyAdmin(): ServiceBusAdministrationClient;
  /** The queue name to use for `base` (prefixed and remembered for cleanup on a real namespace). */
  name(base: string): string;
  emulator: boolean;
}

const REAL_CONNECTION_STRING = process.env.JOBQ_TEST_SERVICEBUS_CONNECTION_STRING;
const RUN_ID = Math.random().toString(36).slice(2, 8);
const realQueues = new Set<string>();

const targets: Target[] = [
  {
    label: 'emulator',
    admin: () => adminClient(),
    wrongKeyAdmin: () => adminClient(server.endpoint, 'not-the-key'),
    name: (base) => base,
    emulator: true,
  },
];
if (REAL_CONNECTION_STRING) {
  targets.push({
    label: 'real namespace',
    admin: () => new ServiceBusAdministrationClient(REAL_CONNECTION_STRING),
    wrongKeyAdmin: () =>
      new ServiceBusAdministrationClient(REAL_CONNECTION_STRING.replace(/SharedAccessKey=[^;]*/, 'SharedAccessKey=bm90LXRoZS1rZXk=')),
    name: (base) => {
      const name = `jobqtest-${RUN_ID}-${base}`;
      realQueues.add(name);
      return name;
    },
    emulator: false,
  });
  beforeAll(async () => {
    const admin = new ServiceBusAdministrationClient(REAL_CONNECTION_STRING);
    const cutoff = Date.now() - 3_600_000;
    for await (const q of admin.listQueuesRuntimeProperties()) {
      if (q.name.startsWith('jobqtest-') && q.createdAt.getTime() < cutoff) await admin.deleteQueue(q.name).catch(() => undefined);
    }
  });
  afterAll(async () => {
    const admin = new ServiceBusAdministrationClient(REAL_CONNECTION_STRING);
    for (const name of realQueues) await admin.deleteQueue(name).catch(() => undefined);
  });
} else {
  process.stdout.write('real Service Bus checks skipped: JOBQ_TEST_SERVICEBUS_CONNECTION_STRING not set\n');
}

describe.each(targets)('admin through ServiceBusAdministrationClient ($label)', (target) => {
  const admin = (): ServiceBusAdministrationClient => target.admin();

  it('creates a queue with the defaults, gets it, and answers queueExists', async () => {
    const name = target.name('defaults');
    const created = await admin().createQueue(name);
    expect(created).toMatchObject({
      name,
      lockDuration: 'PT1M',
      maxDeliveryCount: 10,
      maxSizeInMegabytes: 1024,
      requiresDuplicateDetection: false,
      duplicateDetectionHistoryTimeWindow: 'PT10M',
      defaultMessageTimeToLive: NEVER_DURATION,
      deadLetteringOnMessageExpiration: false,
      requiresSession: false,
      enablePartitioning: false,
      status: 'Active',
      autoDeleteOnIdle: NEVER_DURATION,
    });
    expect(created._response.status).toBe(201);
    const got = await admin().getQueue(name);
    expect(got.name).toBe(name);
    expect(got.lockDuration).toBe('PT1M');
    await expect(admin().queueExists(name)).resolves.toBe(true);
    await expect(admin().queueExists(name.toUpperCase())).resolves.toBe(true);
    await expect(admin().queueExists(target.name('absent'))).resolves.toBe(false);
  });

  it('creates with options, and updateQueue changes what it is given and keeps the rest', async () => {
    const name = target.name('tuned/jobs');
    const created = await admin().createQueue(name, {
      lockDuration: 'PT30S',
      maxDeliveryCount: 3,
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT1M',
      defaultMessageTimeToLive: 'P1D',
      deadLetteringOnMessageExpiration: true,
      maxSizeInMegabytes: 2048,
      userMetadata: 'owner <jobs> & co',
    });
    expect(created).toMatchObject({
      name,
      lockDuration: 'PT30S',
      maxDeliveryCount: 3,
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT1M',
      defaultMessageTimeToLive: 'P1D',
      deadLetteringOnMessageExpiration: true,
      maxSizeInMegabytes: 2048,
      userMetadata: 'owner <jobs> & co',
    });

    const queue = await admin().getQueue(name);
    queue.lockDuration = 'PT2M30S';
    queue.maxDeliveryCount = 7;
    const updated = await admin().updateQueue(queue);
    expect(updated._response.status).toBe(200);
    expect(updated).toMatchObject({
      name,
      lockDuration: 'PT2M30S',
      maxDeliveryCount: 7,
      defaultMessageTimeToLive: 'P1D',
      userMetadata: 'owner <jobs> & co',
    });
    const runtime = await admin().getQueueRuntimeProperties(name);
    expect(runtime.modifiedAt.getTime()).toBeGreaterThanOrEqual(runtime.createdAt.getTime());

    await expect(admin().updateQueue({ ...queue, name: target.name('never-created') })).rejects.toMatchObject({
      code: 'MessageEntityNotFoundError',
    });
    // Duplicate detection is chosen at create only.
    await expect(admin().updateQueue({ ...updated, requiresDuplicateDetection: false })).rejects.toMatchObject({ statusCode: 400 });
    expect((await admin().getQueue(name)).requiresDuplicateDetection).toBe(true);
  });

  it('deletes a queue; deleting or getting a missing one is MessageEntityNotFoundError', async () => {
    const name = target.name('doomed');
    await admin().createQueue(name);
    const deleted = await admin().deleteQueue(name);
    expect(deleted._response.status).toBe(200);
    await expect(admin().queueExists(name)).resolves.toBe(false);
    await expect(admin().getQueue(name)).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    await expect(admin().getQueueRuntimeProperties(name)).rejects.toMatchObject({ code: 'MessageEntityNotFoundError' });
    await expect(admin().deleteQueue(name)).rejects.toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
  });

  it('refuses a duplicate create (any case) with MessageEntityAlreadyExistsError (409)', async () => {
    const name = target.name('twice');
    await admin().createQueue(name);
    await expect(admin().createQueue(name.toUpperCase())).rejects.toMatchObject({
      code: 'MessageEntityAlreadyExistsError',
      statusCode: 409,
    });
  });

  it('refuses LockDuration over 5 min and MaxDeliveryCount 0 with 400', async () => {
    for (const lockDuration of ['PT5M1S', 'PT10M']) {
      await expect(admin().createQueue(target.name('lock-long'), { lockDuration })).rejects.toMatchObject({
        code: 'ServiceError',
        statusCode: 400,
      });
    }
    const name = target.name('lock-edges');
    await expect(admin().createQueue(name, { lockDuration: 'PT5M' })).resolves.toMatchObject({ lockDuration: 'PT5M' });
    const queue = await admin().getQueue(name);
    await expect(admin().updateQueue({ ...queue, lockDuration: 'PT10M' })).rejects.toMatchObject({ statusCode: 400 });
    await expect(admin().createQueue(target.name('mdc'), { maxDeliveryCount: 0 })).rejects.toMatchObject({ statusCode: 400 });
    await expect(admin().queueExists(target.name('lock-long'))).resolves.toBe(false);
  });

  it('reports zero counts for a new queue', async () => {
    const name = target.name('empty');
    await admin().createQueue(name);
    await expect(admin().getQueueRuntimeProperties(name)).resolves.toMatchObject({
      name,
      activeMessageCount: 0,
      deadLetterMessageCount: 0,
      scheduledMessageCount: 0,
      transferMessageCount: 0,
      transferDeadLetterMessageCount: 0,
      totalMessageCount: 0,
    });
  });

  it('refuses a wrong key with 401 (UnauthorizedRequestError)', async () => {
    await expect(target.wrongKeyAdmin().getQueue(target.name('defaults'))).rejects.toMatchObject({
      code: 'UnauthorizedRequestError',
      statusCode: 401,
    });
  });
});

describe('admin endpoint: emulator specifics', () => {
  const admin = (): ServiceBusAdministrationClient => adminClient();

  it('says which entity is missing or duplicated, with 404 for a missing one', async () => {
    await admin().createQueue('named');
    const dup = await failure(admin().createQueue('Named'));
    expect(dup.message).toContain('"Named" already exists');
    const missing = await failure(admin().getQueue('not-there'));
    expect(missing).toMatchObject({ code: 'MessageEntityNotFoundError', statusCode: 404 });
    expect(missing.message).toContain("'not-there' could not be found");
  });

  it('refuses LockDuration under 5 s, other out-of-range values and bad names with 400 naming the field', async () => {
    for (const lockDuration of ['PT4S', 'PT5M1S']) {
      const err = await failure(admin().createQueue('lock-range', { lockDuration }));
      expect(err).toMatchObject({ code: 'ServiceError', statusCode: 400 });
      expect(err.message).toContain('LockDuration');
    }
    await expect(admin().createQueue('lock-floor', { lockDuration: 'PT5S' })).resolves.toMatchObject({ lockDuration: 'PT5S' });
    await expect(admin().createQueue('mdc-zero', { maxDeliveryCount: 0 })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('MaxDeliveryCount'),
    });
    await expect(admin().createQueue('dedup', { duplicateDetectionHistoryTimeWindow: 'PT10S' })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('DuplicateDetectionHistoryTimeWindow'),
    });
    await expect(admin().createQueue('not-a-duration', { lockDuration: '30 seconds' })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('not an ISO-8601 duration'),
    });
    for (const name of ['-dash-first', 'ends-with-dot.', 'has space', 'x'.repeat(261)]) {
      await expect(admin().createQueue(name)).rejects.toMatchObject({
        statusCode: 400,
        message: expect.stringMatching(/illegal queue name|a queue name has 1 to 260 characters/),
      });
    }
  });

  it('refuses sessions, partitioning, auto-forwarding and auto-delete with 400 naming the feature', async () => {
    await expect(admin().createQueue('sessions', { requiresSession: true })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('sessions'),
    });
    await expect(admin().createQueue('partitioned', { enablePartitioning: true })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('partitioning'),
    });
    await expect(admin().createQueue('forwarding', { forwardTo: 'elsewhere' })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('auto-forwarding'),
    });
    await expect(admin().createQueue('idle', { autoDeleteOnIdle: 'PT1H' })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('AutoDeleteOnIdle'),
    });
    await expect(admin().queueExists('sessions')).resolves.toBe(false);
  });

  it('reports the runtime counts of messages sent, dead-lettered and scheduled through the broker, per queue and in the runtime listing', async () => {
    const sb: ServiceBusEmulator = await startServiceBus();
    const client = new ServiceBusClient(sb.connectionString);
    try {
      const own = adminClient(sb.adminEndpoint!);
      await own.createQueue('counted', { maxDeliveryCount: 3 });
      const sender = client.createSender('counted');
      await sender.sendMessages(Array.from({ length: 7 }, (_, i) => ({ body: `m${i}` })));
      await sender.scheduleMessages({ body: 'later' }, new Date(Date.now() + 3_600_000));
      const receiver = client.createReceiver('counted', { maxAutoLockRenewalDurationInMs: 0 });
      const received = await receiver.receiveMessages(2, { maxWaitTimeInMs: 5_000 });
      expect(received).toHaveLength(2);
      for (const m of received) await receiver.deadLetterMessage(m, { deadLetterReason: 'test', deadLetterErrorDescription: 'counted' });
      const runtime = await own.getQueueRuntimeProperties('counted');
      expect(runtime).toMatchObject({
        name: 'counted',
        activeMessageCount: 5,
        deadLetterMessageCount: 2,
        scheduledMessageCount: 1,
        transferMessageCount: 0,
        transferDeadLetterMessageCount: 0,
        totalMessageCount: 8,
      });
      expect(runtime.sizeInBytes).toBeGreaterThan(0);
      for (const date of [runtime.createdAt, runtime.modifiedAt, runtime.accessedAt]) expect(Number.isNaN(date.getTime())).toBe(false);
      const listed = [];
      for await (const q of own.listQueuesRuntimeProperties()) listed.push(q);
      expect(listed.find((q) => q.name === 'counted')).toMatchObject({
        activeMessageCount: 5,
        deadLetterMessageCount: 2,
        totalMessageCount: 8,
      });
      expect((await own.getQueue('counted')).maxDeliveryCount).toBe(3);
      // Deleted through the admin endpoint: the broker no longer has it.
      await own.deleteQueue('counted');
      expect(sb.registry.get('counted')).toBeUndefined();
    } finally {
      await client.close();
      await sb.stop();
    }
  });

  it('refuses topics, subscriptions and rules with 400 saying only queues are served', async () => {
    const cases: Promise<unknown>[] = [
      admin().createTopic('a-topic'),
      admin().createSubscription('a-topic', 'sub'),
      admin().getSubscription('a-topic', 'sub'),
      admin().getRule('a-topic', 'sub', '$Default'),
      (async () => {
        for await (const _topic of admin().listTopics()) void _topic;
      })(),
    ];
    for (const pending of cases) {
      const err = await failure(pending);
      expect(err.statusCode).toBe(400);
      expect(err.message).toMatch(/queues only/);
    }
    const getTopic = await failure(admin().getTopic('a-topic'));
    expect(getTopic).toMatchObject({ statusCode: 404 });
  });

  it('answers getNamespaceProperties', async () => {
    const ns = await admin().getNamespaceProperties();
    expect(ns).toMatchObject({ messagingSku: 'Standard', name: '127.0.0.1' });
    expect(Number.isNaN(ns.createdAt.getTime())).toBe(false);
  });
});

describe('listing', () => {
  const local = brokerRegistry();
  let listServer: AdminServer;
  beforeAll(async () => {
    listServer = await startAdminServer(local, { sasKeyName: KEY.keyName, sasKey: KEY.key, hostLabel: 'jobq.servicebus.windows.net' });
    for (let i = 0; i < 130; i++) local.create(`q-${String(i).padStart(3, '0')}`, {});
  });
  afterAll(() => listServer.stop());

  it('pages past 100 queues as the SDK asks ($skip/$top and the next link)', async () => {
    const client = adminClient(listServer.endpoint);
    const names: string[] = [];
    for await (const q of client.listQueues()) names.push(q.name);
    expect(names).toHaveLength(130);
    expect(names[0]).toBe('q-000');
    expect(names[129]).toBe('q-129');

    const sizes: number[] = [];
    for await (const page of client.listQueues().byPage({ maxPageSize: 50 })) sizes.push(page.length);
    expect(sizes).toEqual([50, 50, 30]);

    const fromToken: string[] = [];
    for await (const page of client.listQueues().byPage({ maxPageSize: 20, continuationToken: '120' }))
      fromToken.push(...page.map((q) => q.name));
    expect(fromToken).toEqual(Array.from({ length: 10 }, (_, i) => `q-${120 + i}`));

    let runtimeCount = 0;
    for await (const _q of client.listQueuesRuntimeProperties()) runtimeCount++;
    expect(runtimeCount).toBe(130);
    await expect(client.getNamespaceProperties()).resolves.toMatchObject({ name: 'jobq' });
  });

  it('refuses creates over the entity limit with QuotaExceededError (403)', async () => {
    const limited = brokerRegistry({ maxEntities: 1 });
    const limitedServer = await startAdminServer(limited, { sasKeyName: KEY.keyName, sasKey: KEY.key });
    try {
      const client = adminClient(limitedServer.endpoint);
      await client.createQueue('first');
      const err = await failure(client.createQueue('second'));
      expect(err).toMatchObject({ code: 'QuotaExceededError', statusCode: 403 });
      expect(err.message).toContain('limit of 1 entities');
    } finally {
      await limitedServer.stop();
    }
  });
});

describe('authorization', () => {
  it('says why a wrong key is refused without echoing either key', async () => {
    const err = await failure(adminClient(server.endpoint, 'not-the-key').getQueue('defaults'));
    expect(err).toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
    expect(err.message).toContain('signature does not match');
    expect(err.message).not.toContain('not-the-key');
    expect(err.message).not.toContain(KEY.key);
  });

  it('refuses an expired token with 401', async () => {
    skewMs = 10 * 60_000; // the SDK signs for 5 minutes
    try {
      const err = await failure(adminClient().createQueue('late'));
      expect(err).toMatchObject({ code: 'UnauthorizedRequestError', statusCode: 401 });
      expect(err.message).toContain('expired');
    } finally {
      skewMs = 0;
    }
    expect(registry.get('late')).toBeUndefined();
  });

  it('refuses a request without a token and one with another key name', async () => {
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      httpRequest(`${server.endpoint}/defaults`, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      })
        .on('error', reject)
        .end();
    });
    expect(response.status).toBe(401);
    expect(response.body).toContain('MissingToken');
    const client = new ServiceBusAdministrationClient(connectionString(KEY.key, 'OtherKeyName'), { retryOptions: { maxRetries: 0 } });
    client.pipeline.addPolicy(adminPolicy(server.endpoint));
    await expect(client.getQueue('defaults')).rejects.toMatchObject({
      statusCode: 401,
      message: expect.stringContaining('unknown key name'),
    });
  });
});

describe('raw requests', () => {
  it('answers malformed XML with 400 and the service error document', async () => {
    const bodies = [
      '<entry xmlns="http://www.w3.org/2005/Atom"><content><QueueDescription',
      '<entry xmlns="http://www.w3.org/2005/Atom"><content></entry>',
      'not xml at all',
      '',
      '<!DOCTYPE x [<!ENTITY a "b">]><entry/>',
      '<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><MaxDeliveryCount>ten</MaxDeliveryCount></QueueDescription></content></entry>',
    ];
    for (const body of bodies) {
      const response = await raw('PUT', '/malformed?api-version=2021-05', body, { 'content-type': 'application/atom+xml' });
      expect(response.status).toBe(400);
      expect(response.body).toMatch(/^<\?xml[^>]*\?><Error><Code>400<\/Code><Detail>[^<]+<\/Detail><\/Error>$/);
    }
    expect(registry.get('malformed')).toBeUndefined();
    const huge = await raw('PUT', '/huge', `<entry xmlns="http://www.w3.org/2005/Atom">${' '.repeat(1_100_000)}</entry>`);
    expect(huge.status).toBe(413);
    expect(huge.body).toContain('larger than');
  });

  it('answers unknown paths with 404 and unknown methods with 405', async () => {
    expect((await raw('GET', '/$nothing?api-version=2021-05')).status).toBe(404);
    expect((await raw('GET', '/$Resources/Widgets')).status).toBe(404);
    expect((await raw('GET', '/')).status).toBe(404);
    expect((await raw('POST', '/defaults')).status).toBe(405);
  });
});

describe('adminPolicy and stop', () => {
  it('refuses an endpoint that is not an http(s) URL', () => {
    expect(() => adminPolicy('127.0.0.1:5300')).toThrow(/not a URL/);
    expect(() => adminPolicy('sb://127.0.0.1:5300')).toThrow(/not an http/);
  });

  it('stop() is idempotent and closes kept-alive connections', async () => {
    const own = await startAdminServer(brokerRegistry(), { sasKeyName: KEY.keyName, sasKey: KEY.key });
    const client = adminClient(own.endpoint);
    await client.createQueue('kept');
    const started = Date.now();
    await Promise.all([own.stop(), own.stop()]);
    await own.stop();
    // Kept-alive sockets left open would hold stop() for the server's 5 s keep-alive timeout.
    expect(Date.now() - started).toBeLessThan(4_000);
    // The first call may still try the kept-alive socket the server closed.
    await expect(client.getQueue('kept')).rejects.toMatchObject({ code: expect.stringMatching(/^(ECONNRESET|ECONNREFUSED)$/) });
    await expect(client.getQueue('kept')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('names a taken port', async () => {
    await expect(startAdminServer(brokerRegistry(), { port: server.port, sasKeyName: KEY.keyName, sasKey: KEY.key })).rejects.toThrow(
      `127.0.0.1:${server.port}: the port is taken`,
    );
  });
});
