import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, taskState } from '@jobq/dag-core';
import type { OutgoingMessage } from '@jobq/ports';
import { scriptedRun, useMemoryStacks, type SimulatedRun } from './test-helpers/memory-stack';
import { WrappedQueue, taskNameOf } from './test-helpers/wrappers';

// Retry delays and the workflow deadline on the in-memory adapters and a virtual clock: the delay is
// the task queue's own delayed delivery (no timer in the coordinator), and the deadline is found by
// the coordinator's periodic sweep. No wall-clock time passes.

const stacks = useMemoryStacks();

describe('retry delays (in memory, virtual time)', () => {
  it('sends attempt 2 with its delay: the queue holds it back until it is due, then a worker runs it; a waiting retry holds no max_parallelism slot', async () => {
    const started: Array<{ key: string; at: number }> = [];
    const sent: OutgoingMessage[] = [];
    const run: SimulatedRun = (task, context) => {
      started.push({ key: `${task.taskName}#${task.attemptNo}`, at: context.clock.now() });
      return scriptedRun(task, context);
    };
    const s = await stacks.open({
      run,
      coordinator: { taskMessageTtlInMs: 3_600_000 },
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: (messages, send) => {
            sent.push(...messages);
            return send();
          },
        }),
    });
    const workflowId = await s.submit({
      name: 'delayed-retry',
      max_parallelism: 1,
      tasks: [
        { name: 'flaky', num_retries: 2, retry_delay_s: 90, retry_backoff: 2, kwargs: { cmd: 'fail-before 2' } },
        { name: 'other', kwargs: { cmd: 'sleep 5' } },
      ],
    });
    // Attempt 1 fails; the coordinator records attempt 2 as due 90 s later and sends it with that delay.
    const waiting = await s.waitFor(workflowId, (r) => taskState(r, 'flaky')?.attemptNo === 2);
    const flaky = taskState(waiting, 'flaky')!;
    const dueAt = Date.parse(flaky.retryDueAt!);
    expect(dueAt - Date.parse(flaky.dispatchedAt!)).toBe(90_000);
    const retryMessage = sent.find((m) => taskNameOf(m.body) === 'flaky' && m.delayInMs !== undefined);
    // Its time to live is longer by the delay: it lives an hour from when it is due.
    expect(retryMessage).toMatchObject({ delayInMs: 90_000, timeToLiveInMs: 3_690_000 });
    // max_parallelism 1, and yet `other` went out while flaky waits.
    expect(sent.filter((m) => taskNameOf(m.body) === 'other')).toHaveLength(1);
    // explain says when it is due.
    const report = await s.client.explain(workflowId);
    expect(report.tasks.find((t) => t.name === 'flaky')).toMatchObject({
      status: 'running',
      retry_due_at: flaky.retryDueAt,
      reasons: [
        expect.stringMatching(
          new RegExp(
            `^retry 1 of 2 due at ${flaky.retryDueAt!.replace(/\./g, '\\.')} \\(in \\d+s; attempt 2\\): its message waits in queue "default" until then, holding no max_parallelism slot; last error: exit code 1$`,
          ),
        ),
      ],
    });

    // Not delivered before it is due: the message is in the queue, but nobody can see it.
    await s.until(
      () => s.clock.now() >= dueAt - 1_000,
      () => 'the clock did not reach the due time',
    );
    expect(started.filter((r) => r.key === 'flaky#2')).toEqual([]);
    expect(await s.taskQueue.peek(32)).toEqual([]);
    expect(await s.taskQueue.approximateMessageCount()).toBe(1);

    // Delivered once due, and the workflow completes.
    const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status));
    expect(done.status).toBe('completed');
    const second = started.find((r) => r.key === 'flaky#2');
    expect(second).toBeDefined();
    expect(second!.at).toBeGreaterThanOrEqual(dueAt);
    expect(second!.at - dueAt).toBeLessThan(5_000);
    expect(started.map((r) => r.key).sort()).toEqual(['flaky#1', 'flaky#2', 'other#1']);
  });
});

describe('the workflow deadline (in memory, virtual time)', () => {
  it('cancels a workflow still running past timeout_s, with the reason, through the cancel workers obey', async () => {
    const s = await stacks.open({ coordinator: { timeoutSweepIntervalInMs: 10_000 } });
    const workflowId = await s.submit({
      name: 'deadline',
      timeout_s: 120,
      tasks: [
        { name: 'long', kwargs: { cmd: 'sleep 100000' } },
        { name: 'after', depends_on: ['long'], kwargs: { cmd: 'true' } },
      ],
    });
    const started = await s.waitFor(workflowId, (r) => r.deadlineAt !== null);
    expect((await s.client.explain(workflowId)).workflow.reasons).toContain(
      `deadline at ${started.deadlineAt} (timeout_s 120): the coordinator cancels the workflow if it is still running then`,
    );
    const runtime = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status), 3_600_000);
    expect(runtime.status).toBe('cancelled');
    const deadlineAt = Date.parse(runtime.deadlineAt!);
    expect(deadlineAt - Date.parse(runtime.createdAt)).toBeGreaterThanOrEqual(120_000);
    expect(runtime.cancelReason).toBe(`deadline passed: the workflow's timeout_s (120 s) ran out at ${runtime.deadlineAt}`);
    // Within one sweep of the deadline, the worker stopped the long task on the cancel it saw.
    expect(Date.parse(runtime.cancelAppliedAt!) - deadlineAt).toBeLessThanOrEqual(10_000 + 1_000);
    expect(runtime.tasks.long).toMatchObject({ status: 'cancelled' });
    expect(runtime.tasks.after).toMatchObject({ status: 'cancelled', error: `workflow cancelled: ${runtime.cancelReason}` });
    expect(Date.parse(runtime.finishedAt!) - deadlineAt).toBeLessThan(20_000);
    const row = await s.store.getWorkflow(runtime.workflowId);
    expect(row?.cancelRequestedAt).toBe(runtime.cancelAppliedAt);
    expect(s.logs.some((line) => line.includes(`workflow ${runtime.workflowId}: cancelled: deadline passed`))).toBe(true);
    // The worker ran the long task once and did not finish it.
    expect(s.runCount('long')).toBe(1);
    expect((await s.client.explain(workflowId)).workflow.reasons[0]).toBe(`cancelled by the coordinator: ${runtime.cancelReason}`);
  });
});
