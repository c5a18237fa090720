import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { describeWorkerRegistryContract } from '@jobq/ports/testing';
import type { TablePipelinePolicy } from './workflow-store';
import { openWorkerRegistry } from './worker-registry';

let azurite: LocalStorage;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite.stop();
});

describeWorkerRegistryContract('Azure Table (Azurite)', async () => {
  counter++;
  const registry = await openWorkerRegistry({
    connection: { connectionString: azurite.connectionString },
    prefix: `hb${process.pid}x${counter}`,
  });
  return { registry, dispose: () => Promise.resolve() };
});

describe('Azure worker registry: request policies', () => {
  it('sends every table request through the given tablePolicies (the storage request metrics count heartbeats)', async () => {
    const methods: string[] = [];
    const counting: TablePipelinePolicy = { name: 'count', sendRequest: (request, next) => (methods.push(request.method), next(request)) };
    const registry = await openWorkerRegistry({
      connection: { connectionString: azurite.connectionString },
      prefix: `hbpol${process.pid}`,
      tablePolicies: [counting],
    });
    methods.length = 0; // the table creation
    const beat = {
      workerId: 'w-1',
      host: 'h',
      pid: 1,
      version: '1',
      intervalInMs: 30_000,
      stopping: false,
      startedAt: new Date().toISOString(),
      queues: [],
      running: [],
      runningMore: 0,
    };
    await registry.beat(beat);
    await registry.list();
    await registry.remove('w-1');
    expect(methods).toEqual(['PUT', 'GET', 'DELETE']);
  });
});
