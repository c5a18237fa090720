import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { useInstrumenter } from '@azure/core-tracing';
import { recordingInstrumenter, testTracerProvider as provider } from '@jobq/azure-pipeline/testing';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { trace } from '@opentelemetry/api';
import { accountClients } from './clients';

const requestSpans = (names: string[]) => names.filter((n) => n.startsWith('HTTP '));

describe('accountClients: the SDK request spans', () => {
  let storage: LocalStorage;
  const started: string[] = [];

  beforeAll(async () => {
    storage = await startAzurite();
    useInstrumenter(recordingInstrumenter(started));
  });
  afterAll(async () => {
    trace.disable();
    await storage?.stop();
  });
  beforeEach(() => trace.disable());

  it('run on blob and table clients only while an OpenTelemetry tracer provider is registered', async () => {
    const clients = accountClients({ connectionString: storage.connectionString }, { operationTimeoutInMs: 10_000 });
    const container = clients.container('tracegate');
    const table = clients.table('tracegate');
    await container.create();
    await table.createTable();
    const write = async (): Promise<string[]> => {
      started.length = 0;
      await container.getBlockBlobClient('a.json').upload('{}', 2);
      await table.upsertEntity({ partitionKey: 'p', rowKey: 'r', n: 1 }, 'Merge');
      return requestSpans(started);
    };
    expect(await write()).toEqual([]);
    trace.setGlobalTracerProvider(provider);
    expect(await write()).toEqual(['HTTP PUT', 'HTTP PATCH']);
  });

  it('run always with JOBQ_AZURE_SDK_TRACING=on', async () => {
    process.env.JOBQ_AZURE_SDK_TRACING = 'on';
    try {
      const clients = accountClients({ connectionString: storage.connectionString }, { operationTimeoutInMs: 10_000 });
      started.length = 0;
      await clients.container('tracegate').getBlockBlobClient('b.json').upload('{}', 2);
      expect(requestSpans(started)).toEqual(['HTTP PUT']);
    } finally {
      delete process.env.JOBQ_AZURE_SDK_TRACING;
    }
  });

  it('refuses a bad JOBQ_AZURE_SDK_TRACING when the clients are made', () => {
    process.env.JOBQ_AZURE_SDK_TRACING = 'yes please';
    try {
      expect(() => accountClients({ connectionString: storage.connectionString }, { operationTimeoutInMs: 10_000 })).toThrow(
        'JOBQ_AZURE_SDK_TRACING="yes please" is not one of auto, on, off',
      );
    } finally {
      delete process.env.JOBQ_AZURE_SDK_TRACING;
    }
  });
});

describe('accountClients: service URLs with a token credential', () => {
  const credential = { getToken: () => Promise.resolve({ token: 't', expiresOnTimestamp: Date.now() + 3_600_000 }) };
  it('takes the blob and table service URLs as given, without a trailing slash', () => {
    const clients = accountClients(
      { blobServiceUrl: 'https://acct.blob.core.windows.net/', tableServiceUrl: 'https://acct.table.core.windows.net', credential },
      { operationTimeoutInMs: 10_000 },
    );
    expect(clients.container('outputs').url).toBe('https://acct.blob.core.windows.net/outputs');
    expect(clients.table('Jobs').url).toBe('https://acct.table.core.windows.net');
  });
  it('refuses a URL that is not one, or carries a query, naming the field', () => {
    expect(() =>
      accountClients(
        { blobServiceUrl: 'acct.blob', tableServiceUrl: 'https://acct.table.core.windows.net', credential },
        { operationTimeoutInMs: 10_000 },
      ),
    ).toThrow('blobServiceUrl is not a URL: "acct.blob"');
    expect(() =>
      accountClients(
        { blobServiceUrl: 'https://a.blob.core.windows.net', tableServiceUrl: 'https://a.table.core.windows.net?sv=x', credential },
        { operationTimeoutInMs: 10_000 },
      ),
    ).toThrow('tableServiceUrl must not carry a query');
  });
});
