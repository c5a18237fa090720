// The queue contract suite on the in-process Service Bus broker, with 2 s locks: every test gets a
// queue of its own, created through the admin endpoint with jobq's settings and deleted after it.
import { afterAll, beforeAll } from '@jest/globals';
import { adminPolicy, startServiceBus, type ServiceBusEmulator } from '@jobq/servicebus-emulator';
import { describeTaskQueueContract } from '@jobq/ports/testing';
import { openServiceBusQueue } from './open';

let sb: ServiceBusEmulator;
let counter = 0;

beforeAll(async () => {
  sb = await startServiceBus({ lockDurationFloorMs: 1_000 });
});

afterAll(async () => {
  await sb.stop();
});

describeTaskQueueContract('Azure Service Bus queue (in-process broker)', async () => {
  counter++;
  const queue = await openServiceBusQueue({
    connection: { connectionString: sb.connectionString },
    queueName: `contract-${counter}`,
    lockDurationInMs: 2_000,
    createIfMissing: true,
    adminPolicies: [adminPolicy(sb.adminEndpoint!)],
  });
  return {
    queue,
    dispose: async () => {
      await queue.deleteQueue();
      await queue.close();
    },
  };
});
