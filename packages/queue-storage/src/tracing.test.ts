import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { useInstrumenter } from '@azure/core-tracing';
import { recordingInstrumenter, testTracerProvider as provider } from '@jobq/azure-pipeline/testing';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { trace } from '@opentelemetry/api';
import { openStorageQueue } from './open';

describe('openStorageQueue: the SDK request spans', () => {
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

  it('run only while an OpenTelemetry tracer provider is registered', async () => {
    const queue = await openStorageQueue({ connection: { connectionString: storage.connectionString }, queueName: 'tracegate' });
    const send = async (): Promise<string[]> => {
      started.length = 0;
      await queue.send({ body: '{}' });
      return started.filter((n) => n.startsWith('HTTP '));
    };
    expect(await send()).toEqual([]);
    trace.setGlobalTracerProvider(provider);
    expect(await send()).toEqual(['HTTP POST']);
  });
});
