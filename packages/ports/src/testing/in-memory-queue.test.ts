import { describeTaskQueueContract } from './queue-suite';
import { InMemoryTaskQueue } from './in-memory-queue';

describeTaskQueueContract('in memory', () => {
  const queue = new InMemoryTaskQueue({ name: 'contract', lockDurationInMs: 1_000, maxMessageBytes: 64 * 1024 });
  return Promise.resolve({ queue, dispose: () => queue.close() });
});
