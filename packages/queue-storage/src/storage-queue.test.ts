import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { inspect } from 'node:util';
import { AZURITE_ACCOUNT_KEY, startAzurite, type LocalStorage } from '@jobq/local';
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  QueueServiceClient,
  SASProtocol,
  StorageSharedKeyCredential,
  generateAccountSASQueryParameters,
} from '@azure/storage-queue';
import { decodeEnvelope } from '@jobq/dag-core/wire';
import { isJobqError, queueSafeText } from '@jobq/ports';
import { describeTaskQueueContract } from '@jobq/ports/testing';
import { createQueueServiceClient, parseConnectionString } from './connection';
import { countingPolicy } from './counting-policy';
import { openStorageQueue } from './open';
import { sendMessageTimes, type StorageTaskQueue } from './storage-queue';

let azurite: LocalStorage;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite.stop();
});

function uniqueName(prefix: string): string {
  counter++;
  return `${prefix}-${process.pid}-${counter}`;
}

async function open(lockDurationInMs = 2_000, queueName = uniqueName('contract')): Promise<StorageTaskQueue> {
  return openStorageQueue({ connection: { connectionString: azurite.connectionString }, queueName, lockDurationInMs });
}

describeTaskQueueContract('Azure Storage Queue (Azurite)', async () => {
  const queue = await open();
  return { queue, dispose: () => queue.deleteQueue() };
});

describe('Storage Queue specifics', () => {
  it('keeps the body as raw JSON text (no base64), as Python jobq workers read it', async () => {
    const queue = await open();
    const envelope = '{"version":1,"reply_requested":false,"kwargs":"{\\"cmd\\":\\"echo <a & b>\\"}","num_retries":0,"id":"x"}';
    await queue.send({ body: envelope });
    const [peeked] = await queue.peek(1);
    expect(peeked?.body).toBe(envelope);
    await queue.deleteQueue();
  });

  it('shows why bodies are escaped: one raw U+FFFF sent around the adapter jams receive and peek for every message', async () => {
    const queue = await open();
    const raw = QueueServiceClient.fromConnectionString(azurite.connectionString).getQueueClient(queue.name);
    await queue.send({ body: '{"n":1}' });
    await raw.sendMessage('{"output":"\uffff"}');
    // Azurite answers every peek with a 500 and every receive with nothing, the message sent before included.
    await expect(queue.peek(32)).rejects.toMatchObject({ name: 'JobqError', details: { statusCode: 500 } });
    expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 300 })).toEqual([]);
    expect(await queue.approximateMessageCount()).toBe(2);
    await queue.deleteQueue();
  });

  it('escapes U+FFFE/U+FFFF on send: the body decodes to the same JSON value and the other messages still flow', async () => {
    const queue = await open();
    const output = { value: 'x\uffffy\ufffez', list: ['\uffff'] };
    const envelope = JSON.stringify({
      version: 1,
      id: 'wf/t/1',
      kwargs: JSON.stringify({ output }),
      num_retries: 0,
      reply_requested: false,
    });
    expect(envelope).toContain('\uffff');
    await queue.send([{ body: '{"n":1}' }, { body: envelope }, { body: '{"n":2}' }]);
    const peeked = await queue.peek(32);
    expect(peeked.map((m) => m.body)).toEqual(['{"n":1}', queueSafeText(envelope), '{"n":2}']);
    const received = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 2_000 });
    expect(received.map((m) => JSON.parse(m.body) as unknown)).toEqual([{ n: 1 }, JSON.parse(envelope), { n: 2 }]);
    const decoded = decodeEnvelope(received[1]!.body);
    expect(decoded.ok && decoded.value.kwargs).toEqual({ output });
    await Promise.all(received.map((m) => queue.complete(m)));
    // A message sent after it is received too.
    await queue.send({ body: '{"n":3}' });
    const [after] = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 2_000 });
    expect(after?.body).toBe('{"n":3}');
    await queue.complete(after!);
    await queue.deleteQueue();
  });

  it('sends the time to live in whole seconds, rounded up, and -1 (never) for Infinity', async () => {
    const queue = await open();
    await queue.send([{ body: 'a', timeToLiveInMs: 1_500 }, { body: 'b', timeToLiveInMs: Number.POSITIVE_INFINITY }, { body: 'c' }]);
    const raw = QueueServiceClient.fromConnectionString(azurite.connectionString).getQueueClient(queue.name);
    const items = (await raw.peekMessages({ numberOfMessages: 32 })).peekedMessageItems;
    const lifetime = (body: string) => {
      const m = items.find((i) => i.messageText === body)!;
      return m.expiresOn.getTime() - m.insertedOn.getTime();
    };
    expect(lifetime('a')).toBe(2_000);
    expect(items.find((i) => i.messageText === 'b')!.expiresOn.getUTCFullYear()).toBe(9999);
    expect(lifetime('c')).toBe(7 * 24 * 3600 * 1000);
    await queue.deleteQueue();
  });

  it('sends a delay as the initial visibility timeout in whole seconds, rounded up, and refuses first what the service would refuse', async () => {
    const week = 7 * 24 * 3600 * 1000;
    expect(sendMessageTimes('q', { body: '', delayInMs: 1_500 })).toEqual({ visibilityTimeout: 2 });
    expect(sendMessageTimes('q', { body: '', delayInMs: 0, timeToLiveInMs: 1_800 })).toEqual({ messageTimeToLive: 2 });
    // The visibility timeout must stay below the time to live: rounding must not make them equal.
    expect(sendMessageTimes('q', { body: '', delayInMs: 1_500, timeToLiveInMs: 1_800 })).toEqual({
      visibilityTimeout: 2,
      messageTimeToLive: 3,
    });
    expect(sendMessageTimes('q', { body: '', delayInMs: week, timeToLiveInMs: Number.POSITIVE_INFINITY })).toEqual({
      visibilityTimeout: 604_800,
      messageTimeToLive: -1,
    });
    // A workflow retry at the longest delay, as the coordinator sends it: its lifetime is the default 7 days from when it is due.
    expect(sendMessageTimes('q', { body: '', delayInMs: week, timeToLiveInMs: 2 * week })).toEqual({
      visibilityTimeout: 604_800,
      messageTimeToLive: 1_209_600,
    });
    const queue = await open();
    await queue.send([
      { body: 'a', delayInMs: 1_500, timeToLiveInMs: 1_800 },
      { body: 'b', delayInMs: week, timeToLiveInMs: Number.POSITIVE_INFINITY },
      { body: 'c', delayInMs: week - 1_000 },
      { body: 'd', delayInMs: week, timeToLiveInMs: 2 * week },
    ]);
    expect(await queue.approximateMessageCount()).toBe(4);
    expect(await queue.peek(32)).toEqual([]);
    // Over 7 days, or 7 days under the default time to live of 7 days: refused, nothing of the batch sent.
    for (const bad of [
      { delayInMs: week + 1, timeToLiveInMs: Number.POSITIVE_INFINITY },
      { delayInMs: week - 999 },
      { delayInMs: week, messageId: 'wf/t/1' },
    ]) {
      const error = await queue.send([{ body: 'fine' }, { body: 'x', ...bad }]).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'invalid-argument',
        message: expect.stringMatching(/delayInMs must be .*7 days.* on a Storage Queue, got/),
      });
    }
    expect(await queue.approximateMessageCount()).toBe(4);
    await queue.deleteQueue();
  });

  it('moves 1 000 messages through send, receive and complete (the patched Azurite does not freeze)', async () => {
    const queue = await open(30_000);
    const bodies = Array.from({ length: 1_000 }, (_, i) => JSON.stringify({ n: i }));
    await queue.send(bodies.map((body) => ({ body })));
    const seen = new Set<string>();
    while (seen.size < bodies.length) {
      const batch = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 2_000 });
      if (batch.length === 0) break;
      await Promise.all(batch.map((m) => queue.complete(m)));
      for (const m of batch) seen.add(m.body);
    }
    expect(seen.size).toBe(1_000);
    expect(await queue.approximateMessageCount()).toBe(0);
    await queue.deleteQueue();
  }, 120_000);

  it('refuses names that are not Storage Queue names, and lock durations out of range', async () => {
    for (const queueName of ['Upper', 'ab', 'a--b', '-ab', 'x'.repeat(64)]) {
      await expect(openStorageQueue({ connection: { connectionString: azurite.connectionString }, queueName })).rejects.toMatchObject({
        code: 'invalid-config',
      });
    }
    await expect(open(500)).rejects.toMatchObject({ code: 'invalid-config' });
  });

  it('rounds the lock up to whole seconds, as visibility timeouts are', async () => {
    const queue = await open(1_500);
    expect(queue.lockDurationInMs).toBe(2_000);
    await queue.deleteQueue();
  });

  it('refuses a message from another queue', async () => {
    const a = await open();
    const b = await open();
    await a.send({ body: 'mine' });
    const [m] = await a.receive({ maxMessages: 1, maxWaitTimeInMs: 2_000 });
    await expect(b.complete(m!)).rejects.toMatchObject({ code: 'invalid-argument' });
    await a.complete(m!);
    await a.deleteQueue();
    await b.deleteQueue();
  });
});

describe('connection strings', () => {
  /** An account SAS for blobs, queues and tables, signed with Azurite's key, as a SAS connection string (no AccountName). */
  function sasConnectionString(): { connectionString: string; signature: string } {
    const sas = generateAccountSASQueryParameters(
      {
        expiresOn: new Date(Date.now() + 3_600_000),
        permissions: AccountSASPermissions.parse('rwdlacup'),
        services: AccountSASServices.parse('bqt').toString(),
        resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
        protocol: SASProtocol.HttpsAndHttp,
      },
      new StorageSharedKeyCredential(azurite.accountName, AZURITE_ACCOUNT_KEY),
    );
    return {
      connectionString: `BlobEndpoint=${azurite.blobEndpoint};QueueEndpoint=${azurite.queueEndpoint};TableEndpoint=${azurite.tableEndpoint};SharedAccessSignature=${sas.toString()}`,
      signature: sas.signature,
    };
  }

  it('works with a SAS connection string: send, receive, renew, peek, count, dead-letter, complete, delete', async () => {
    const { connectionString, signature } = sasConnectionString();
    expect(connectionString).not.toContain('AccountName');
    const queue = await openStorageQueue({ connection: { connectionString }, queueName: uniqueName('sas'), lockDurationInMs: 2_000 });
    await queue.send([{ body: '{"n":1}' }, { body: '{"n":2}' }]);
    expect(await queue.approximateMessageCount()).toBe(2);
    expect((await queue.peek(32)).map((m) => m.body).sort()).toEqual(['{"n":1}', '{"n":2}']);
    const [first, second] = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 2_000 });
    await queue.renewLock(first!);
    await queue.complete(first!);
    await queue.deadLetter(second!, 'sas check');
    const [dead] = await queue.deadLetterQueue().peek(1);
    expect(JSON.parse(dead!.body)).toEqual({ n: 2, dead_letter_reason: 'sas check' });
    await queue.deleteQueue();
    // A SAS that does not sign: refused as auth, and the signature is not quoted.
    const forged = connectionString.replace(
      encodeURIComponent(signature),
      encodeURIComponent(Buffer.from('forged-signature-bytes').toString('base64')),
    );
    const error = await openStorageQueue({ connection: { connectionString: forged }, queueName: uniqueName('sas') }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'auth' });
    expect(inspect(error, { depth: 10 })).not.toContain('sig=');
  });

  it('takes an endpoint-only string (no key, no SAS) as its endpoint with a token credential', async () => {
    const seen: string[] = [];
    const credential = {
      getToken: (scopes: string | string[]) => {
        seen.push(String(scopes));
        return Promise.resolve({ token: 'not-a-real-token', expiresOnTimestamp: Date.now() + 3_600_000 });
      },
    };
    const service = createQueueServiceClient({ connectionString: `QueueEndpoint=https://myacct.queue.core.windows.net/`, credential });
    expect(service.url).toBe('https://myacct.queue.core.windows.net');
    // The token is asked for on the first call (a port nothing listens on: the call fails after that).
    const local = createQueueServiceClient(
      { connectionString: 'QueueEndpoint=https://127.0.0.1:1/myacct', credential },
      { retryOptions: { maxTries: 1 } },
    );
    await expect(local.getProperties()).rejects.toThrow();
    expect(seen).toEqual(['https://storage.azure.com/.default']);
    expect(parseConnectionString('QueueEndpoint=https://myacct.queue.core.windows.net')).toMatchObject({
      accountKey: undefined,
      sas: undefined,
    });
    expect(() => parseConnectionString('QueueEndpoint=https://myacct.queue.core.windows.net;AccountKey=a2V5')).toThrow(
      'an AccountKey but no AccountName',
    );
  });
});

describe('failures', () => {
  it('gives a typed, retryable error (and no hang) when Azurite dies mid-test', async () => {
    const own = await startAzurite();
    const queue = await openStorageQueue({
      connection: { connectionString: own.connectionString },
      queueName: 'dies',
      lockDurationInMs: 2_000,
      operationTimeoutInMs: 3_000,
    });
    await queue.send({ body: 'before' });
    await own.stop();
    for (const attempt of [() => queue.send({ body: 'after' }), () => queue.receive({ maxMessages: 1, maxWaitTimeInMs: 100 })]) {
      let caught: unknown;
      try {
        await attempt();
      } catch (error) {
        caught = error;
      }
      expect(isJobqError(caught)).toBe(true);
      if (!isJobqError(caught)) return;
      expect(['unavailable', 'timeout']).toContain(caught.code);
      expect(caught.retryable).toBe(true);
      expect(caught.message).toMatch(/^send on queue "dies" failed|^receive on queue "dies" failed/);
    }
  }, 60_000);

  it('never puts the account key in an error, its message, its inspection or its JSON', async () => {
    // A well-formed but wrong key: the service refuses the request signature.
    const secret = Buffer.from('not-the-key-'.repeat(6)).toString('base64');
    const connectionString = azurite.connectionString.replace(AZURITE_ACCOUNT_KEY, secret);
    expect(connectionString).toContain(secret);
    let caught: unknown;
    try {
      await openStorageQueue({ connection: { connectionString }, queueName: 'secret-check', operationTimeoutInMs: 5_000 });
    } catch (error) {
      caught = error;
    }
    expect(isJobqError(caught) && caught.code).toBe('auth');
    const texts = [
      String(caught),
      (caught as Error).message,
      (caught as Error).stack ?? '',
      inspect(caught, { depth: 10 }),
      JSON.stringify(caught),
    ];
    for (const text of texts) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(AZURITE_ACCOUNT_KEY);
    }
  });

  it('says clearly what is wrong with a connection string, without quoting it', async () => {
    const secret = 'SuperSecretKeyMaterial';
    await expect(openStorageQueue({ connection: { connectionString: `AccountKey=${secret}` }, queueName: 'abc' })).rejects.toThrow(
      'neither QueueEndpoint nor AccountName',
    );
    try {
      await openStorageQueue({ connection: { connectionString: `AccountKey=${secret}` }, queueName: 'abc' });
    } catch (error) {
      expect(inspect(error)).not.toContain(secret);
    }
  });
});

describe('countingPolicy', () => {
  it('counts every request the client sends, by method', async () => {
    const { policy, counter } = countingPolicy();
    const queue = await openStorageQueue({
      connection: { connectionString: azurite.connectionString },
      queueName: uniqueName('counted'),
      policies: [policy],
    });
    counter.reset();
    await queue.send([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    const received = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 2_000 });
    expect(received).toHaveLength(3);
    await Promise.all(received.map((m) => queue.complete(m)));
    expect(counter.total).toBe(7);
    expect(counter.byMethod).toEqual({ POST: 3, GET: 1, DELETE: 3 });
    await queue.deleteQueue();
  });
});
