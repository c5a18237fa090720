import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, taskState } from '@jobq/dag-core';
import { openStorageQueue } from '@jobq/queue-storage';
import { openStack, useHarness } from './test-helpers/stack';

// The delayed retry on a real Storage Queue (Azurite) with a real worker: the coordinator's message
// reaches the queue held back by its delay. The timing itself is tested on the virtual clock
// (retry-delay.memory.test.ts); the adapters' delayed delivery by the queue contract suite.

const h = useHarness();

describe('retry delay on a Storage Queue', () => {
  it('sends attempt 2 held back by its delay: in the queue, invisible to workers, and a cancel ends the task while it waits', async () => {
    const s = await openStack(h);
    const workflowId = await s.submit({
      name: 'delayed',
      tasks: [{ name: 'flaky', num_retries: 1, retry_delay_s: 3600, kwargs: { cmd: 'exit 1' } }],
    });
    const waiting = await s.waitFor(workflowId, (r) => taskState(r, 'flaky')?.attemptNo === 2);
    expect(taskState(waiting, 'flaky')).toMatchObject({ status: 'running', retryDueAt: expect.any(String), error: 'exit code 1' });

    const queue = await openStorageQueue({
      connection: { connectionString: h.azurite.connectionString },
      queueName: `${s.prefix.toLowerCase()}-default`,
      lockDurationInMs: 5_000,
    });
    try {
      // Attempt 1's message is deleted once its worker has settled it; attempt 2's stays, unseen.
      for (let tries = 0; tries < 100 && (await queue.approximateMessageCount()) !== 1; tries++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await queue.approximateMessageCount()).toBe(1);
      expect(await queue.peek(32)).toEqual([]);
      expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 300 })).toEqual([]);
    } finally {
      await queue.close();
    }

    await s.client.cancel(workflowId);
    const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status));
    expect(done.status).toBe('cancelled');
    expect(taskState(done, 'flaky')).toMatchObject({ status: 'cancelled', attemptNo: 2, startedAt: null });
  });
});
