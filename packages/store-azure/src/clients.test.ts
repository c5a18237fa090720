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
