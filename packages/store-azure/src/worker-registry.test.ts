import { afterAll, beforeAll } from '@jest/globals';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { describeWorkerRegistryContract } from '@jobq/ports/testing';
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
  const registry = await openWorkerRegistry({ connection: { connectionString: azurite.connectionString }, prefix: `hb${process.pid}x${counter}` });
  return { registry, dispose: () => Promise.resolve() };
});
