// The Service Bus specifics of the adapter, with the real SDK against the in-process broker.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { getEventListeners } from 'node:events';
import { inspect } from 'node:util';
import rhea from 'rhea';
import { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import { SERVICE_BUS_MAX_MESSAGE_BYTES } from '@jobq/dag-core/wire';
import { isJobqError, type Instruments, type ReceivedMessage, type TaskQueue } from '@jobq/ports';
import { adminPolicy, startServiceBus, type ServiceBusEmulator } from '@jobq/servicebus-emulator';
import { openClientCount, type AdminPolicy } from './connection';
import { openServiceBusQueue, type OpenServiceBusQueueOptions } from './open';
import type { ServiceBusTaskQueue } from './servicebus-queue';
import { closeRaw, rawConnection, receiveRaw, sendRaw } from './test-helpers/raw';

const SAS_KEY = 'jobq-test-secret-key-0123456789abcdef';
let sb: ServiceBusEmulator;
let counter = 0;
/** Every JobqError the tests provoke, checked at the end for key material. */
const provoked: unknown[] = [];
/** Every queue opened, closed after each test even when it fails (close is idempotent). */
const opened: ServiceBusTaskQueue[] = [];

afterEach(async () => {
  for (const queue of opened.splice(0)) await queue.close();
});

beforeAll(async () => {
  sb = await startServiceBus({ lockDurationFloorMs: 1_000, sasKey: SAS_KEY });
});

afterAll(async () => {
  for (const error of provoked) {
    const text = `${inspect(error, { depth: 10 })} ${JSON.stringify(error)}`;
    expect(text).not.toContain(SAS_KEY);
    expect(text).not.toContain('SharedAccessKey=');
    expect(text).not.toContain('SharedAccessSignature');
  }
  await sb.stop();
});

function uniqueName(base: string): string {
  counter++;
  return `${base}-${counter}`;
}

function admin(): AdminPolicy[] {
  return [adminPolicy(sb.adminEndpoint!)];
}

async function open(overrides: Partial<OpenServiceBusQueueOptions> = {}): Promise<ServiceBusTaskQueue> {
  const queue = await openServiceBusQueue({
    connection: { connectionString: sb.connectionString },
    queueName: uniqueName('q'),
    lockDurationInMs: 2_000,
    createIfMissing: true,
    adminPolicies: admin(),
    retryOptions: { maxRetries: 0, timeoutInMs: 5_000 },
    ...overrides,
  });
  opened.push(queue);
  return queue;
}

async function failure(promise: Promise<unknown>): Promise<{ code: string | undefined; message: string; retryable: boolean | undefined }> {
  try {
    await promise;
  } catch (error) {
    provoked.push(error);
    return isJobqError(error)
      ? { code: error.code, message: error.message, retryable: error.retryable }
      : { code: undefined, message: String(error), retryable: undefined };
  }
  throw new Error('expected a failure');
}

async function drain(queue: TaskQueue, count: number, withinMs = 10_000, maxMessages = 32) {
  const out = [];
  const deadline = Date.now() + withinMs;
  while (out.length < count && Date.now() < deadline) out.push(...(await queue.receive({ maxMessages, maxWaitTimeInMs: 500 })));
  return out;
}

/** A policy that answers every request but `allow` with 403, as the service does without Data Owner. */
function forbidden(allow: (method: string, url: string) => boolean = () => false): AdminPolicy {
  return {
    name: 'forbidden',
    async sendRequest(request, next) {
      if (allow(request.method, request.url)) return next(request);
      const get = { ...request, method: 'GET' as const };
      delete get.body;
      const response = await next(get);
      return {
        ...response,
        status: 403,
        bodyAsText: '<Error><Code>403</Code><Detail>Unauthorized access. Manage claim is required for this operation.</Detail></Error>',
      };
    },
  };
}

describe('message ids and duplicate detection', () => {
  it('keeps ids up to 128 characters, hashes longer ones (a repeat is dropped), and makes `current` ids random', async () => {
    const queue = await open();
    const id128 = `wf/${'a'.repeat(123)}/1`;
    const id129 = `wf/${'b'.repeat(124)}/1`;
    const id400 = `wf/${'c'.repeat(395)}/1`;
    expect([id128.length, id129.length, id400.length]).toEqual([128, 129, 400]);
    await queue.send([
      { body: '128', messageId: id128 },
      { body: '129', messageId: id129 },
      { body: '400', messageId: id400 },
    ]);
    await queue.send({ body: '400 again', messageId: id400 });
    await queue.send([
      { body: 'current 1', messageId: 'wf/t/current/done' },
      { body: 'current 2', messageId: 'wf/t/current/done' },
    ]);
    const received = await drain(queue, 5);
    const ids = new Map(received.map((m) => [m.body, m.messageId]));
    expect([...ids.keys()].sort()).toEqual(['128', '129', '400', 'current 1', 'current 2']);
    expect(ids.get('128')).toBe(id128);
    expect(ids.get('129')).toBe(`h:${createHash('sha256').update(id129).digest('base64url')}`);
    expect(ids.get('400')).toMatch(/^h:[A-Za-z0-9_-]{43}$/);
    expect(ids.get('current 1')).not.toBe(ids.get('current 2'));
    expect(sb.stats().queues[queue.name]!.dedupDrops).toBe(1);
    for (const m of received) await queue.complete(m);
    await queue.close();
  });
});

describe('bodies on the wire', () => {
  it('sends the body as one data section of its UTF-8 bytes, and reads data sections and string values back as text', async () => {
    const queue = await open();
    const body = '{"cmd":"echo ✓ é 😀","n":1}';
    await queue.send({ body });
    const raw = await rawConnection(sb.port, queue.name, { keyName: 'RootManageSharedAccessKey', key: SAS_KEY });
    try {
      const message = await receiveRaw(raw, queue.name);
      const section = message.body as { typecode?: number; content?: Buffer };
      expect(section.typecode).toBe(0x75);
      expect(Buffer.compare(section.content!, Buffer.from(body, 'utf8'))).toBe(0);
      // As a Python producer sends: the UTF-8 bytes in a data section; and a plain AMQP string value.
      await sendRaw(raw, queue.name, { body: rhea.message.data_section(Buffer.from('{"from":"python ✓"}', 'utf8')) });
      await sendRaw(raw, queue.name, { body: '{"from":"amqp value"}' });
    } finally {
      await closeRaw(raw);
    }
    const received = await drain(queue, 2);
    expect(received.map((m) => m.body).sort()).toEqual(['{"from":"amqp value"}', '{"from":"python ✓"}']);
    expect(received.every((m) => m.deliveryCount === 1)).toBe(true);
    for (const m of received) await queue.complete(m);
    await queue.close();
  });
});

describe('receiving', () => {
  it('returns a lone message from receive(32) without waiting out the batch, with a delivery count of 1', async () => {
    const queue = await open();
    await queue.send({ body: 'alone' });
    // Attach the receiver first, so the timing below is the receive only.
    expect(await queue.peek(1)).toHaveLength(1);
    const started = Date.now();
    const got = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(got.map((m) => [m.body, m.deliveryCount])).toEqual([['alone', 1]]);
    // A message that arrives during the wait is returned at once, too.
    const waiting = queue.receive({ maxMessages: 32, maxWaitTimeInMs: 10_000 });
    const sentAt = Date.now();
    await queue.send({ body: 'later' });
    const [later] = await waiting;
    expect(later?.body).toBe('later');
    expect(Date.now() - sentAt).toBeLessThan(3_000);
    await queue.complete(got[0]!);
    await queue.complete(later!);
    await queue.close();
  });

  it('stops a waiting receive when the caller aborts', async () => {
    const queue = await open();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    expect((await failure(queue.receive({ maxMessages: 5, maxWaitTimeInMs: 10_000, abortSignal: controller.signal }))).code).toBe(
      'aborted',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    // The queue still works afterwards.
    await queue.send({ body: 'after' });
    const [m] = await drain(queue, 1);
    expect(m?.body).toBe('after');
    await queue.complete(m!);
  });

  it("leaves at most one listener on the caller's signal: a worker passes the same one to every call", async () => {
    const queue = await open();
    const controller = new AbortController();
    const signal = controller.signal;
    // Empty receives end by draining the link's credit, which the SDK (7.9.5) does with a listener
    // on the receive's signal that it never removes; so does the top-up after a first message.
    for (let i = 0; i < 12; i++) expect(await queue.receive({ maxMessages: 4, maxWaitTimeInMs: 20, abortSignal: signal })).toEqual([]);
    await queue.send({ body: 'x' });
    const [m] = await queue.receive({ maxMessages: 4, maxWaitTimeInMs: 5_000, abortSignal: signal });
    expect(m?.body).toBe('x');
    await queue.complete(m!);
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    // Sixteen sends at once under it (the SDK listens on the signal of each): no MaxListenersExceededWarning.
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      await Promise.all(Array.from({ length: 16 }, (_, i) => queue.send({ body: `s${i}` }, { abortSignal: signal })));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    for (const sent of await drain(queue, 16)) await queue.complete(sent);
    // Aborting it still stops a waiting receive.
    setTimeout(() => controller.abort(), 100);
    expect((await failure(queue.receive({ maxMessages: 4, maxWaitTimeInMs: 10_000, abortSignal: signal }))).code).toBe('aborted');
  });

  it('shortens the batch fill wait to the measured round trip, and still returns a waiting backlog of 32 in one receive', async () => {
    // A ceiling far above any round trip to the in-process emulator, even on a loaded machine: the
    // test sees the wait leave the ceiling for the measurement without timing anything itself.
    const ceiling = 1_000;
    const queue = await open({ batchFillWaitInMs: ceiling });
    expect(queue.fillWaitInMs).toBe(ceiling);
    // A chain: one message at a time, each completed (a round trip the wait is measured on).
    for (let i = 0; i < 10; i++) {
      await queue.send({ body: `hop${i}` });
      const got = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 5_000 });
      expect(got.map((m) => m.body)).toEqual([`hop${i}`]);
      await queue.complete(got[0]!);
    }
    expect(queue.fillWaitInMs).toBeLessThan(ceiling);
    expect(queue.fillWaitInMs).toBeGreaterThan(0);
    for (let round = 0; round < 3; round++) {
      await queue.send(Array.from({ length: 32 }, (_, i) => ({ body: `r${round}m${i}` })));
      const wait = queue.fillWaitInMs;
      expect(wait).toBeLessThan(ceiling);
      const batch = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 5_000 });
      expect(batch).toHaveLength(32);
      await Promise.all(batch.map((m) => queue.complete(m)));
    }
    expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 50 })).toEqual([]);
    // The dead-letter view measures its own link.
    expect(queue.deadLetterQueue().fillWaitInMs).toBe(ceiling);
  });

  it('serialises overlapping receives on one queue instead of failing', async () => {
    const queue = await open();
    await queue.send([{ body: 'a' }, { body: 'b' }]);
    const [x, y] = await Promise.all([
      queue.receive({ maxMessages: 1, maxWaitTimeInMs: 2_000 }),
      queue.receive({ maxMessages: 1, maxWaitTimeInMs: 2_000 }),
    ]);
    expect([...x, ...y].map((m) => m.body).sort()).toEqual(['a', 'b']);
    for (const m of [...x, ...y]) await queue.complete(m);
    await queue.close();
  });
});

describe('sending', () => {
  it('packs 75 messages of 10 KiB into several transfers', async () => {
    const queue = await open();
    const bodies = Array.from({ length: 75 }, (_, i) => JSON.stringify({ n: i, pad: 'x'.repeat(10 * 1024) }));
    await queue.send(bodies.map((body) => ({ body })));
    const stats = sb.stats().queues[queue.name]!;
    expect(stats.messagesIn).toBe(75);
    // 750 KiB over 256 KiB transfers: at least 3, and packed (not one per message).
    expect(stats.framesIn).toBeGreaterThanOrEqual(3);
    expect(stats.framesIn).toBeLessThanOrEqual(5);
    const received = await drain(queue, 75, 10_000, 32);
    expect(received.map((m) => m.body).sort()).toEqual([...bodies].sort());
    for (const m of received) await queue.complete(m);
    await queue.close();
  });

  it('sends a delay as scheduledEnqueueTimeUtc in the same transfer, the time to live counted from the send; peek leaves it out, the count includes it', async () => {
    const queue = await open();
    const before = Date.now();
    await queue.send([
      { body: 'now' },
      { body: 'later', delayInMs: 60_000, timeToLiveInMs: 90_000 },
      { body: 'later-no-ttl', delayInMs: 60_000 },
    ]);
    const after = Date.now();
    expect(sb.stats().queues[queue.name]).toMatchObject({ messagesIn: 3, framesIn: 1, active: 1, scheduled: 2 });
    expect((await queue.peek(32)).map((m) => m.body)).toEqual(['now']);
    expect(await queue.approximateMessageCount()).toBe(3);
    const client = new ServiceBusClient(sb.connectionString);
    try {
      const raw = await client.createReceiver(queue.name, { skipParsingBodyAsJson: true }).peekMessages(10);
      const scheduled = raw.filter((m) => m.state === 'scheduled');
      expect(scheduled).toHaveLength(2);
      for (const m of scheduled) {
        expect(m.scheduledEnqueueTimeUtc!.getTime()).toBeGreaterThanOrEqual(before + 60_000);
        expect(m.scheduledEnqueueTimeUtc!.getTime()).toBeLessThanOrEqual(after + 60_000);
      }
      // Service Bus counts a time to live from the scheduled time: 90 s from the send is 30 s from it.
      const withTtl = scheduled.find((m) => Buffer.from(m.body as Uint8Array).toString('utf8') === 'later')!;
      expect(withTtl.timeToLive).toBe(30_000);
      expect(withTtl.expiresAtUtc!.getTime() - withTtl.scheduledEnqueueTimeUtc!.getTime()).toBe(30_000);
    } finally {
      await client.close();
    }
    await queue.deleteQueue();
    await queue.close();
  });

  it('checks every size before sending: one oversized body sends nothing; a body at the limit goes through', async () => {
    const queue = await open();
    expect(queue.maxMessageBytes).toBe(262_144 - 4_096);
    // The bound a workflow definition is validated against: a task that validates can be sent.
    expect(queue.maxMessageBytes).toBe(SERVICE_BUS_MAX_MESSAGE_BYTES);
    const e = await failure(queue.send([{ body: 'small' }, { body: 'x'.repeat(queue.maxMessageBytes + 1), messageId: 'big' }]));
    expect(e.code).toBe('message-too-large');
    expect(sb.stats().queues[queue.name]?.messagesIn ?? 0).toBe(0);
    await queue.send({ body: 'y'.repeat(queue.maxMessageBytes) });
    const [m] = await drain(queue, 1);
    expect(m?.body.length).toBe(queue.maxMessageBytes);
    await queue.complete(m!);
    await queue.close();
  });
});

describe('dead letters', () => {
  it('keeps the reason as the first line (≤ 256 characters) and the whole reason as the description (≤ 4 KiB)', async () => {
    const queue = await open();
    await queue.send({ body: '{"n":1}' });
    const [m] = await drain(queue, 1);
    const reason = `${'r'.repeat(300)}\n${'d'.repeat(5_000)}`;
    await queue.deadLetter(m!, reason);
    const client = new ServiceBusClient(sb.connectionString);
    const receiver = client.createReceiver(queue.name, { subQueueType: 'deadLetter' });
    const [dead] = await receiver.peekMessages(1);
    expect(dead?.deadLetterReason).toBe(`${'r'.repeat(255)}…`);
    expect(Buffer.byteLength(dead!.deadLetterErrorDescription!, 'utf8')).toBeLessThanOrEqual(4_096);
    expect(dead?.deadLetterErrorDescription?.startsWith(`${'r'.repeat(300)}\nddd`)).toBe(true);
    await client.close();
    expect(await queue.deadLetterQueue().approximateMessageCount()).toBe(1);
    await queue.close();
  });

  it('settles adjacent deliveries differently in one tick: each gets its own outcome (rhea merged the second into the first one’s disposition)', async () => {
    const queue = await open();
    await queue.send([{ body: '{"n":"dead-1"}' }, { body: '{"n":"dead-2"}' }, { body: '{"n":"done"}' }, { body: '{"n":"dead-3"}' }]);
    const [d1, d2, ok, d3] = await drain(queue, 4);
    // All issued before any of them is written out: one disposition pass for the four deliveries.
    await Promise.all([
      queue.deadLetter(d1!, 'reason one'),
      queue.deadLetter(d2!, 'reason two'),
      queue.complete(ok!),
      queue.deadLetter(d3!, 'reason three'),
    ]);
    const client = new ServiceBusClient(sb.connectionString);
    const receiver = client.createReceiver(queue.name, { subQueueType: 'deadLetter' });
    const dead = await receiver.peekMessages(10);
    expect(dead.map((m) => [JSON.stringify(m.body), m.deadLetterReason]).sort()).toEqual([
      ['{"n":"dead-1"}', 'reason one'],
      ['{"n":"dead-2"}', 'reason two'],
      ['{"n":"dead-3"}', 'reason three'],
    ]);
    await client.close();
    expect(await queue.approximateMessageCount()).toBe(0);
    await queue.close();
  });

  it('shows a message the service dead-lettered with the service reason, and refuses sends to the dead-letter queue', async () => {
    const name = uniqueName('maxdel');
    sb.declareQueue(name, { lockDurationMs: 2_000, maxDeliveryCount: 1 });
    const queue = await open({ queueName: name, createIfMissing: false });
    await queue.send({ body: '{"n":2}' });
    const [m] = await drain(queue, 1);
    await queue.abandon(m!);
    const dlq = queue.deadLetterQueue();
    expect(dlq.name).toBe(`${name}/$DeadLetterQueue`);
    const [dead] = await drain(dlq, 1);
    expect(JSON.parse(dead!.body)).toEqual({ n: 2, dead_letter_reason: expect.stringMatching(/^MaxDeliveryCountExceeded/) as unknown });
    await dlq.complete(dead!);
    expect((await failure(dlq.send({ body: 'x' }))).code).toBe('invalid-argument');
    expect(dlq.deadLetterQueue()).toBe(dlq);
    await queue.send({ body: '{"n":3}' });
    const [again] = await drain(queue, 1);
    await queue.abandon(again!);
    const [deadAgain] = await drain(dlq, 1);
    expect((await failure(dlq.deadLetter(deadAgain!, 'twice'))).code).toBe('invalid-argument');
    expect((await failure(queue.complete(deadAgain!))).code).toBe('invalid-argument');
    await dlq.complete(deadAgain!);
    await queue.close();
  });
});

describe('counting and the Data Owner role', () => {
  it('counts with activeMessageCount, and on 403 by peeking (at most 250)', async () => {
    const name = uniqueName('count');
    const owner = await open({ queueName: name });
    const bodies = Array.from({ length: 300 }, (_, i) => ({ body: `{"n":${i}}` }));
    await owner.send(bodies);
    expect(await owner.approximateMessageCount()).toBe(300);
    // Sender + Receiver only: the queue opens with the configured lock; counts peek.
    const limited = await open({
      queueName: name,
      createIfMissing: false,
      lockDurationInMs: 2_500,
      adminPolicies: [...admin(), forbidden()],
    });
    expect(limited.lockDurationInMs).toBe(2_500);
    expect(await limited.approximateMessageCount()).toBe(250);
    expect(await limited.peek(500)).toHaveLength(250);
    await limited.close();
    await owner.deleteQueue();
    await owner.close();
  });

  it('describes a queue: its settings and both counts; without Data Owner or an admin endpoint, counts by peeking and no settings', async () => {
    const name = uniqueName('describe');
    const queue = await open({ queueName: name, lockDurationInMs: 3_000 });
    await queue.send([{ body: '{"n":1}' }, { body: '{"n":2}' }, { body: '{"n":3}' }]);
    const [m] = await drain(queue, 1, 10_000, 1);
    await queue.deadLetter(m!, 'poison');
    const described = {
      queueName: name,
      properties: {
        lockDurationInMs: 3_000,
        maxDeliveryCount: 1_000,
        requiresDuplicateDetection: true,
        duplicateDetectionHistoryTimeWindowInMs: 600_000,
        defaultMessageTimeToLiveInMs: Number.POSITIVE_INFINITY,
      },
      activeMessageCount: 2,
      deadLetterMessageCount: 1,
      countedBy: 'administration',
    };
    expect(await queue.describe()).toEqual(described);
    expect(await queue.deadLetterQueue().describe()).toEqual(described);
    const peeked = { queueName: name, properties: null, activeMessageCount: 2, deadLetterMessageCount: 1, countedBy: 'peek' };
    const limited = await open({ queueName: name, createIfMissing: false, adminPolicies: [...admin(), forbidden()] });
    expect(await limited.describe()).toEqual(peeked);
    expect(await limited.deadLetterQueue().describe()).toEqual(peeked);
    const blind = await open({ queueName: name, createIfMissing: false, adminPolicies: [] });
    expect(await blind.describe()).toEqual(peeked);

    const other = uniqueName('describe-other');
    sb.declareQueue(other, { lockDurationMs: 5_000, maxDeliveryCount: 10, defaultMessageTimeToLiveMs: 3_600_000 });
    const declared = await open({ queueName: other, createIfMissing: false });
    expect((await declared.describe()).properties).toEqual({
      lockDurationInMs: 5_000,
      maxDeliveryCount: 10,
      requiresDuplicateDetection: false,
      duplicateDetectionHistoryTimeWindowInMs: null,
      defaultMessageTimeToLiveInMs: 3_600_000,
    });
  });

  it('refuses createIfMissing without Data Owner, naming the role and the settings to create the queue with', async () => {
    const e = await failure(open({ adminPolicies: [...admin(), forbidden()] }));
    expect(e.code).toBe('invalid-config');
    expect(e.message).toContain('Azure Service Bus Data Owner');
    expect(e.message).toContain('LockDuration PT2S');
    expect(e.message).toContain('MaxDeliveryCount 1000');
    expect(e.message).toContain('PT10M');
  });

  it('creates queues with jobq settings; on the Basic tier without duplicate detection', async () => {
    const client = new ServiceBusAdministrationClient(sb.connectionString);
    client.pipeline.addPolicy(adminPolicy(sb.adminEndpoint!));
    const standard = await open({ lockDurationInMs: 3_000 });
    const made = await client.getQueue(standard.name);
    expect(made).toMatchObject({
      lockDuration: 'PT3S',
      maxDeliveryCount: 1_000,
      requiresDuplicateDetection: true,
      duplicateDetectionHistoryTimeWindow: 'PT10M',
    });
    expect(made.defaultMessageTimeToLive).toBe('P10675199DT2H48M5.4775807S');
    const basicTier: AdminPolicy = {
      name: 'basic-tier',
      async sendRequest(request, next) {
        const response = await next(request);
        return response.bodyAsText ? { ...response, bodyAsText: response.bodyAsText.replace(/>Standard</g, '>Basic<') } : response;
      },
    };
    const basic = await open({ adminPolicies: [...admin(), basicTier] });
    expect((await client.getQueue(basic.name)).requiresDuplicateDetection).toBe(false);
    await standard.close();
    await basic.close();
  });

  it('is not-found at open when the queue is missing and not to be created', async () => {
    expect((await failure(open({ createIfMissing: false }))).code).toBe('not-found');
  });
});

describe('lock duration', () => {
  it("takes the queue's LockDuration when it can read it, else lowers the configured one to the locks it receives", async () => {
    const name = uniqueName('lock');
    sb.declareQueue(name, { lockDurationMs: 3_000 });
    const read = await open({ queueName: name, createIfMissing: false, lockDurationInMs: 60_000 });
    expect(read.lockDurationInMs).toBe(3_000);
    // The emulator's connection string without its admin endpoint: nothing to read.
    const blind = await open({ queueName: name, createIfMissing: false, lockDurationInMs: 60_000, adminPolicies: [] });
    expect(blind.lockDurationInMs).toBe(60_000);
    await blind.send({ body: 'x' });
    const [m] = await drain(blind, 1);
    expect(blind.lockDurationInMs).toBeLessThanOrEqual(3_000);
    expect(blind.lockDurationInMs).toBeGreaterThanOrEqual(1_000);
    const before = m!.lockedUntil.getTime();
    await blind.renewLock(m!);
    expect(m!.lockedUntil.getTime()).toBeGreaterThanOrEqual(before);
    await blind.complete(m!);
    expect((await failure(blind.complete(m!))).code).toBe('lock-lost');
    expect((await failure(blind.renewLock(m!))).code).toBe('lock-lost');
    await read.close();
    await blind.close();
  });
});

describe('shared clients', () => {
  it('uses one connection for every queue on a namespace and closes it with the last queue', async () => {
    // Earlier tests' connections close asynchronously: start from none.
    const settle = Date.now() + 5_000;
    while (sb.stats().connections > 0 && Date.now() < settle) await new Promise((r) => setTimeout(r, 50));
    const before = sb.stats().connections;
    const clientsBefore = openClientCount();
    const a = await open();
    const b = await open();
    await a.send({ body: 'a' });
    await b.send({ body: 'b' });
    expect(openClientCount()).toBe(clientsBefore + 1);
    expect(sb.stats().connections).toBe(before + 1);
    await a.close();
    await b.send({ body: 'b2' });
    expect((await drain(b, 2)).length).toBe(2);
    await b.close();
    expect(openClientCount()).toBe(clientsBefore);
    const deadline = Date.now() + 5_000;
    while (sb.stats().connections > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(sb.stats().connections).toBe(before);
  });
});

describe('error translation', () => {
  it('maps the broker conditions to jobq codes', async () => {
    const queue = await open();
    await queue.send({ body: 'warm-up' });
    const cases: [Parameters<ServiceBusEmulator['failNext']>[0], string, string][] = [
      ['send', 'com.microsoft:server-busy', 'throttled'],
      ['send', 'amqp:resource-limit-exceeded', 'throttled'],
      ['send', 'amqp:link:message-size-exceeded', 'message-too-large'],
      ['send', 'amqp:unauthorized-access', 'auth'],
      ['send', 'com.microsoft:timeout', 'timeout'],
    ];
    for (const [op, condition, code] of cases) {
      sb.failNext(op, condition);
      expect({ condition, code: (await failure(queue.send({ body: 'x' }))).code }).toEqual({ condition, code });
    }
    const [m] = await drain(queue, 1);
    sb.failNext('management', 'com.microsoft:message-lock-lost');
    expect((await failure(queue.renewLock(m!))).code).toBe('lock-lost');
    sb.failNext('settle', 'com.microsoft:message-lock-lost');
    expect((await failure(queue.complete(m!))).code).toBe('lock-lost');
    await queue.close();
  });

  it('reads a missing queue at attach as not-found, a wrong key as auth, and a dead endpoint as unavailable, never quoting the key', async () => {
    const strict = await startServiceBus({ autoCreateQueues: false, sasKey: SAS_KEY, adminPort: null });
    try {
      const missing = await open({ connection: { connectionString: strict.connectionString }, adminPolicies: [] });
      expect((await failure(missing.send({ body: 'x' }))).code).toBe('not-found');
      await missing.close();
      const wrongKey = strict.connectionString.replace(SAS_KEY, 'wrong-secret-key-9876543210');
      const denied = await open({ connection: { connectionString: wrongKey }, adminPolicies: [] });
      const e = await failure(denied.send({ body: 'x' }));
      expect(e.code).toBe('auth');
      expect(e.message).not.toContain('wrong-secret-key');
      await denied.close();
    } finally {
      await strict.stop();
    }
    const dead = await open({ connection: { connectionString: sb.connectionString.replace(/:\d+;/, ':1;') }, adminPolicies: [] });
    const e = await failure(dead.send({ body: 'x' }));
    expect(e).toMatchObject({ code: 'unavailable', retryable: true });
    await dead.close();
  });
});

describe('request metrics', () => {
  it('counts each call to the broker in jobq_storage_requests_total (service servicebus, method the operation, ok or error)', async () => {
    const counts = new Map<string, number>();
    const instruments: Instruments = {
      enabled: true,
      inc: (name, labels, value = 1) => {
        const key = `${name} ${JSON.stringify(labels)}`;
        counts.set(key, (counts.get(key) ?? 0) + value);
      },
      observe: () => undefined,
      set: () => undefined,
    };
    const queue = await open({ instruments });
    await queue.send([{ body: 'a' }, { body: 'b' }]);
    const got: ReceivedMessage[] = [];
    while (got.length < 2) got.push(...(await queue.receive({ maxMessages: 2, maxWaitTimeInMs: 2_000 })));
    await queue.renewLock(got[0]!);
    for (const m of got) await queue.complete(m);
    await queue.deleteQueue();
    await queue.deleteQueue(); // gone: not-found from the broker, an error call (swallowed by deleteQueue)
    const count = (method: string, status_class = 'ok') =>
      counts.get(`jobq_storage_requests_total ${JSON.stringify({ service: 'servicebus', method, status_class })}`) ?? 0;
    expect(count('send')).toBe(1); // one transfer of both messages (the batch is made locally)
    expect(count('receive')).toBeGreaterThanOrEqual(1);
    expect(count('renew_lock')).toBe(1);
    expect(count('complete')).toBe(2);
    expect(count('delete')).toBe(1);
    expect(count('delete', 'error')).toBe(1);
    expect([...counts.keys()].every((k) => k.startsWith('jobq_storage_requests_total {"service":"servicebus","method":'))).toBe(true);
  });
});
