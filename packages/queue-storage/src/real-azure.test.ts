// The queue contract suite against a real storage account, when
// JOBQ_TEST_AZURE_STORAGE_CONNECTION_STRING holds its connection string (account key or SAS).
// Every test gets a queue with a random name of its own, deleted (with its -failed queue) after it.
// Without the variable this file prints one line and runs nothing else.
import { it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { describeTaskQueueContract } from '@jobq/ports/testing';
import { openStorageQueue } from './open';

const VARIABLE = 'JOBQ_TEST_AZURE_STORAGE_CONNECTION_STRING';
const connectionString = process.env[VARIABLE]?.trim() ?? '';

if (connectionString === '') {
  it(`skips the real Azure Storage checks without ${VARIABLE}`, () => {
    process.stdout.write(`real Azure Storage checks skipped: ${VARIABLE} not set\n`);
  });
} else {
  describeTaskQueueContract(
    'Azure Storage Queue (real account)',
    async () => {
      const queue = await openStorageQueue({
        connection: { connectionString },
        queueName: `jobq-test-${randomBytes(8).toString('hex')}`,
        lockDurationInMs: 2_000,
      });
      return { queue, dispose: () => queue.deleteQueue() };
    },
    { timeoutInMs: 120_000 },
  );
}
