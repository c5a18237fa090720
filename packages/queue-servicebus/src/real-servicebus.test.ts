// The queue contract suite against a real Service Bus namespace, when
// JOBQ_TEST_SERVICEBUS_CONNECTION_STRING holds a connection string with Manage rights. Every test
// gets a queue `jobqtest-<random>` with 5 s locks (Azure's floor), created with jobq's settings and
// deleted after it. Without the variable this file prints one line and runs nothing else.
import { it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { describeTaskQueueContract } from '@jobq/ports/testing';
import { openServiceBusQueue } from './open';

const VARIABLE = 'JOBQ_TEST_SERVICEBUS_CONNECTION_STRING';
const connectionString = process.env[VARIABLE]?.trim() ?? '';

if (connectionString === '') {
  it(`skips the real Service Bus checks without ${VARIABLE}`, () => {
    process.stdout.write(`real Service Bus checks skipped: ${VARIABLE} not set\n`);
  });
} else {
  describeTaskQueueContract(
    'Azure Service Bus queue (real namespace)',
    async () => {
      const queue = await openServiceBusQueue({
        connection: { connectionString },
        queueName: `jobqtest-${randomBytes(8).toString('hex')}`,
        lockDurationInMs: 5_000,
        createIfMissing: true,
      });
      return {
        queue,
        dispose: async () => {
          await queue.deleteQueue();
          await queue.close();
        },
      };
    },
    { timeoutInMs: 120_000 },
  );
}
