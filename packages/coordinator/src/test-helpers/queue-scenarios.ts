import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeCoordinatorMessage, encodeEnvelope } from '@jobq/dag-core/wire';
import { JobqError, type TaskQueue } from '@jobq/ports';
import {
  countRun,
  failureStack,
  outcome,
  waitUntil,
  WrappedQueue,
  type Harness,
  type QueueBackend,
  type Stack,
  type StackOptions,
} from './failure-harness';

// The end-to-end scenarios whose outcome depends on the queues: what travels in task messages and
// completions, redelivery after a lock runs out, duplicates, dead-lettering and the message size
// limit. Each test file runs them on one backend (`queue-scenarios*.test.ts`); the stores and the
// outputs are on Azurite either way.

function statuses(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, task.status]));
}

const out = (json: string) => `printf '%s' '${json}' > "$JOBQ_OUTPUT_FILE"`;

/** The lines of a file, or [] when it does not exist. */
async function linesOf(path: string): Promise<string[]> {
  if (!existsSync(path)) return [];
  return (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');
}

/** Registers the queue scenarios on `backend`, for a file whose harness is `h`. */
export function describeQueueScenarios(h: Harness, backend: QueueBackend): void {
  const stack = (options: StackOptions = {}) => failureStack(h, { ...options, queues: backend });
  /** The broker's counters of one of the stack's queues (Service Bus only). */
  const brokerStats = async (queueName: string) => {
    const stats = (await h.serviceBus()).stats().queues[queueName];
    if (!stats) throw new Error(`the broker has no queue "${queueName}"`);
    return stats;
  };
  /** The runs counted by `countRun` for each task, by task name. */
  const runsOf = async (s: Stack, tasks: readonly string[]): Promise<Record<string, number>> =>
    Object.fromEntries(
      await Promise.all(
        tasks.map(async (t): Promise<[string, number]> => [t, (await linesOf(join(h.work, `runs-${s.prefix}-${t}`))).length]),
      ),
    );
  const counted = (s: Stack, task: string) => countRun(join(h.work, `runs-${s.prefix}-${task}`));
  /**
   * Asserts the coordinator's completion counters. The coordinator counts a batch after its save
   * returns, so a test that saw the saved runtime first waits for the count to catch up.
   */
  const expectCompletions = async (s: Stack, expected: { completionsApplied: number; completionsIgnored: number }) => {
    const c = s.coordinator.counters;
    await waitUntil(
      () => c.completionsApplied + c.completionsIgnored >= expected.completionsApplied + expected.completionsIgnored,
      () => `counted ${c.completionsApplied} applied and ${c.completionsIgnored} ignored, expected ${JSON.stringify(expected)}`,
    );
    expect(c).toMatchObject(expected);
  };

  describe(`Coordinator and workers on ${backend === 'servicebus' ? 'Service Bus queues (in-process broker)' : 'Storage Queues (Azurite)'}`, () => {
    it('runs the diamond a → b, c → d with outputs passed along; the index row says completed', async () => {
      const s = await stack();
      const refs = join(h.work, `refs-${s.prefix}.json`);
      const runtime = await s.run({
        name: 'diamond',
        tasks: [
          { name: 'a', kwargs: { cmd: out('{"v":1}') } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: out('{"v":2}') } },
          { name: 'c', depends_on: ['a'], kwargs: { cmd: out('{"v":3}') } },
          { name: 'd', depends_on: ['b', 'c'], kwargs: { cmd: `cp "$JOBQ_WORKFLOW_UPSTREAM_REFS" '${refs}'` } },
        ],
      });
      expect(runtime.status).toBe('completed');
      expect(statuses(runtime)).toEqual({ a: 'completed', b: 'completed', c: 'completed', d: 'completed' });
      expect(runtime.tasks.b?.outputRef).toBe('{"v":2}');
      const upstream = JSON.parse(await readFile(refs, 'utf8')) as Record<string, string>;
      expect(upstream).toEqual({ b: '{"v":2}', c: '{"v":3}' });
      const summary = await s.store.getWorkflow(runtime.workflowId);
      expect(summary?.status).toBe('completed');
      expect(summary?.counts.completed).toBe(4);
      await s.coordinator.stop();
      const stats = await s.store.readCoordinatorStats();
      expect(stats).toMatchObject({ completionsApplied: 4, poison: 0 });
      expect((stats?.pushes as number) >= 4).toBe(true);
    });

    it('cancel stops the running task (SIGTERM) and cancels the workflow; retry then completes it', async () => {
      const s = await stack();
      const marker = join(h.work, `term-${s.prefix}`);
      const cmd = `if [ -f '${marker}' ]; then exit 0; fi; trap 'touch ${marker}; exit 143' TERM; sleep 30 & wait`;
      const workflowId = await s.submit({
        name: 'cancel-me',
        tasks: [
          { name: 'long', kwargs: { cmd } },
          { name: 'after', depends_on: ['long'], kwargs: { cmd: 'true' } },
        ],
      });
      await s.waitFor(workflowId, (r) => r.tasks.long?.status === 'running');
      await new Promise((r) => setTimeout(r, 500)); // let the worker start the script
      expect(await s.client.cancel(workflowId)).toMatchObject({ requested: true });
      const cancelled = await s.waitFor(workflowId, (r) => r.status === 'cancelled');
      expect(statuses(cancelled)).toEqual({ long: 'cancelled', after: 'cancelled' });
      expect(existsSync(marker)).toBe(true);
      // Retry at once: workers never trust a cached "cancelled", so the retried task is not refused.
      expect(await s.client.retry(workflowId)).toMatchObject({ requested: true });
      const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status) && r.retryAppliedAt !== null);
      expect({ status: done.status, error: done.tasks.long?.error }).toEqual({ status: 'completed', error: null });
      expect(statuses(done)).toEqual({ long: 'completed', after: 'completed' });
    });

    it("dead-letters a poison message into the completion queue's dead-letter queue with its reason, counts it and changes nothing", async () => {
      const s = await stack();
      const notJob = encodeEnvelope({ id: 'x', kwargs: { something: 'else' }, numRetries: 0 });
      await s.completions.send({ body: 'this is not an envelope' });
      await s.completions.send({ body: notJob });
      await waitUntil(
        () => s.coordinator.counters.poison >= 2,
        () => s.logs.join('\n'),
        10_000,
      );
      await s.coordinator.stop();
      expect(await s.store.readCoordinatorStats()).toMatchObject({ poison: 2, saves: 0, completionsApplied: 0 });
      expect(await s.completions.approximateMessageCount()).toBe(0);
      expect(await s.completions.deadLetterQueue().approximateMessageCount()).toBe(2);
      // Dead-letter copies carry their reason: a JSON object gains "dead_letter_reason", other text is wrapped.
      const dead = (await s.completions.deadLetterQueue().peek(32)).map((m) => JSON.parse(m.body) as Record<string, unknown>);
      expect(dead).toHaveLength(2);
      expect(dead).toContainEqual({ ...(JSON.parse(notJob) as object), dead_letter_reason: poisonReason(notJob) });
      expect(dead).toContainEqual({ body: 'this is not an envelope', dead_letter_reason: poisonReason('this is not an envelope') });
      if (backend === 'servicebus') {
        // The broker's own dead-letter queue, the reason in DeadLetterReason (read back into the bodies above).
        const stats = await brokerStats(s.completions.name);
        expect({
          deadLetter: stats.deadLetter,
          dispositions: stats.dispositions.deadLetter,
          auto: stats.autoDeadLetters.maxDeliveryCount,
        }).toEqual({ deadLetter: 2, dispositions: 2, auto: 0 });
      }
    });

    it('task messages and completions each sent twice: every completion is applied once', async () => {
      const tasks = ['a', 'b', 'c'];
      let duplicatedPushes = 0;
      let duplicatedCompletions = 0;
      // Counted per message: the coordinator sends the dispatches of one flush in one call.
      const twice = (count: (messages: number) => void) => (queue: TaskQueue) =>
        new WrappedQueue(queue, {
          send: async (messages, send) => {
            await send();
            count(messages.length);
            await send();
          },
        });
      const s = await stack({
        coordinatorTasks: twice((n) => (duplicatedPushes += n)),
        workerCompletions: twice((n) => (duplicatedCompletions += n)),
      });
      const runtime = await s.run({
        name: 'duplicates',
        tasks: [
          { name: 'a', kwargs: { cmd: counted(s, 'a') } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: counted(s, 'b') } },
          { name: 'c', depends_on: ['a'], kwargs: { cmd: counted(s, 'c') } },
        ],
      });
      expect(outcome(runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1] });
      expect(duplicatedPushes).toBe(3);
      if (backend === 'servicebus') {
        // Duplicate detection (on the queues jobq creates) drops the second copies: each task runs once.
        await waitUntil(
          async () => (await s.taskQueue.approximateMessageCount()) === 0,
          () => 'task messages left',
        );
        expect(duplicatedCompletions).toBe(3);
        expect((await brokerStats(s.taskQueue.name)).dedupDrops).toBe(3);
        expect((await brokerStats(s.completions.name)).dedupDrops).toBe(3);
        expect(await runsOf(s, tasks)).toEqual({ a: 1, b: 1, c: 1 });
        await expectCompletions(s, { completionsApplied: 3, completionsIgnored: 0 });
      } else {
        // Storage Queues deliver both copies: each task runs twice, and of its four completions one
        // is applied and three are ignored.
        await waitUntil(
          async () => Object.values(await runsOf(s, tasks)).every((n) => n === 2),
          () => `runs ${JSON.stringify(s.workerLogs)}`,
        );
        await waitUntil(
          () => s.coordinator.counters.completionsIgnored === 9,
          () => `ignored ${s.coordinator.counters.completionsIgnored}\n${s.logs.join('\n')}`,
        );
        expect(duplicatedCompletions).toBe(6);
        expect(s.coordinator.counters.completionsApplied).toBe(3);
      }
    });

    it('a completion that cannot be sent leaves the task message; it comes back once its lock runs out, runs again and is applied once', async () => {
      let refused = 0;
      const s = await stack({
        completionSendMaxAttempts: 2,
        workerCompletions: (queue) =>
          new WrappedQueue(queue, {
            send: (messages, send) => {
              const decoded = decodeCoordinatorMessage(messages[0]!.body);
              if (decoded.kind === 'completion' && decoded.completion.taskName === 'b' && refused < 2) {
                refused++;
                return Promise.reject(new JobqError('unavailable', 'injected: the completion queue did not answer'));
              }
              return send();
            },
          }),
      });
      const runtime = await s.run({
        name: 'lost-completion',
        tasks: [
          { name: 'a', kwargs: { cmd: counted(s, 'a') } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: `${counted(s, 'b')}; printf '%s' '{"v":2}' > "$JOBQ_OUTPUT_FILE"` } },
          { name: 'c', depends_on: ['b'], kwargs: { cmd: counted(s, 'c') } },
        ],
      });
      expect(outcome(runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1], c: ['completed', 1] });
      expect(runtime.tasks.b?.outputRef).toBe('{"v":2}');
      expect(refused).toBe(2);
      expect(await runsOf(s, ['a', 'b', 'c'])).toEqual({ a: 1, b: 2, c: 1 });
      const b = `[${runtime.workflowId}/b/1]`;
      expect(s.workerLogs).toContainEqual(expect.stringMatching(new RegExp(`^${regExpText(b)} left for redelivery: `)));
      expect(s.workerLogs).toContain(`${b} started (workflow, delivery 2)`);
      await expectCompletions(s, { completionsApplied: 3, completionsIgnored: 0 });
    });

    it('a worker killed (SIGKILL) mid-task: the task message comes back after its lock and is run and completed once by another worker', async () => {
      const s = await stack({ workers: 1 });
      await s.worker.stop();
      const child = await s.spawnWorker();
      const started = join(h.work, `killed-${s.prefix}`);
      const pidFile = join(h.work, `killed-${s.prefix}.pid`);
      // The first run records its process group and hangs; the run after the kill succeeds.
      const cmd = `${counted(s, 'a')}; if [ -f '${started}' ]; then ${out('{"v":1}')}; exit 0; fi; touch '${started}'; echo $$ > '${pidFile}'; sleep 30`;
      const workflowId = await s.submit({
        name: 'killed',
        tasks: [
          { name: 'a', kwargs: { cmd } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: counted(s, 'b') } },
        ],
      });
      await waitUntil(
        async () => (await linesOf(pidFile)).length === 1,
        () => `the task never started: ${child.lines.join('\n')}`,
      );
      await child.kill();
      // The machine is gone with it: so is the task's process group.
      process.kill(-Number((await linesOf(pidFile))[0]), 'SIGKILL');
      expect(child.lines).toContain(`[${workflowId}/a/1] started (workflow, delivery 1)`);
      s.startWorker(1);
      const runtime = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status));
      expect(outcome(runtime)).toEqual({ a: ['completed', 1], b: ['completed', 1] });
      expect(runtime.tasks.a?.outputRef).toBe('{"v":1}');
      const runs = await runsOf(s, ['a', 'b']);
      expect(runs.b).toBe(1);
      // Delivery 2 runs it again. Delivery is at-least-once: on a loaded machine a later delivery
      // can run it once more (seen once on Service Bus in CI); that completion is a duplicate of an
      // applied attempt, ignored.
      expect(runs.a).toBeGreaterThanOrEqual(2);
      expect(s.workerLogs).toContain(`[${workflowId}/a/1] started (workflow, delivery 2)`);
      await expectCompletions(s, { completionsApplied: 2, completionsIgnored: runs.a! - 2 });
    });

    it("a fan-in whose upstream refs do not fit the task queue's message limit gets them from the overflow blob; one under the limit inline", async () => {
      const s = await stack();
      const limit = s.taskQueue.maxMessageBytes;
      // Each parent's output is an inline JSON string of 20 000 characters.
      const size = 20_000;
      const parentCmd = `s=$(printf '%${size}s' '' | tr ' ' x); printf '"%s"' "$s" > "$JOBQ_OUTPUT_FILE"`;
      const fanIn = async (name: string, parents: number) => {
        const refs = join(h.work, `${name}-${s.prefix}.json`);
        const names = Array.from({ length: parents }, (_, i) => `p${i}`);
        const runtime = await s.run({
          name,
          tasks: [
            ...names.map((n) => ({ name: n, kwargs: { cmd: parentCmd } })),
            { name: 'sink', depends_on: names, kwargs: { cmd: `cp "$JOBQ_WORKFLOW_UPSTREAM_REFS" '${refs}'` } },
          ],
        });
        expect(runtime.status).toBe('completed');
        const upstream = JSON.parse(await readFile(refs, 'utf8')) as Record<string, string>;
        expect(Object.keys(upstream).sort()).toEqual([...names].sort());
        expect(Object.values(upstream).every((ref) => ref === `"${'x'.repeat(size)}"`)).toBe(true);
      };
      // About 80 % of the limit: one message.
      await fanIn('under', Math.floor((0.8 * limit) / size));
      expect(s.coordinator.counters.overflowBlobs).toBe(0);
      // Over the limit: the refs move to the overflow blob.
      await fanIn('over', Math.ceil(limit / size) + 1);
      expect(s.coordinator.counters.overflowBlobs).toBe(1);
      expect(s.coordinator.counters.pushErrors).toBe(0);
    });
  });
}

/** Why the coordinator refuses `body` as poison. */
function poisonReason(body: string): string {
  const decoded = decodeCoordinatorMessage(body);
  if (decoded.kind !== 'poison') throw new Error(`not poison: ${body}`);
  return decoded.reason;
}

/** `text` for a RegExp. */
function regExpText(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
