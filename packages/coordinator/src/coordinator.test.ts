import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeEnvelope, isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { isJobqError } from '@jobq/ports';
import { openStack, useHarness, type StackOptions } from './test-helpers/stack';

const h = useHarness();
const stack = (options?: StackOptions) => openStack(h, options);

function statuses(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, task.status]));
}

const out = (json: string) => `printf '%s' '${json}' > "$JOBQ_OUTPUT_FILE"`;

describe('Coordinator', () => {
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

  it('evaluates conditions over a parent output stored in a blob (> 32 KiB)', async () => {
    const s = await stack();
    const big = `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify({ flag: true, pad: "p".repeat(40 * 1024) }))'`;
    const runtime = await s.run({
      name: 'conditions',
      tasks: [
        { name: 'big', kwargs: { cmd: big } },
        { name: 'yes', depends_on: ['big'], condition: 'inputs.big.flag == True', kwargs: { cmd: 'true' } },
        { name: 'no', depends_on: ['big'], condition: 'inputs.big.flag == False', kwargs: { cmd: 'true' } },
      ],
    });
    expect(runtime.tasks.big?.outputRef).toMatch(/^blob:/);
    expect(statuses(runtime)).toEqual({ big: 'completed', yes: 'completed', no: 'skipped' });
    expect(runtime.status).toBe('completed');
  });

  it('retries a task that fails once; without retries the task fails and its child is upstream_failed', async () => {
    const s = await stack();
    const flaky = (marker: string) => `if [ -f '${marker}' ]; then exit 0; else touch '${marker}'; exit 1; fi`;
    const [retried, failed] = await Promise.all([
      s.run({ name: 'retry-1', tasks: [{ name: 'a', num_retries: 1, kwargs: { cmd: flaky(join(h.work, `m1-${s.prefix}`)) } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] }),
      s.run({ name: 'retry-0', tasks: [{ name: 'a', kwargs: { cmd: flaky(join(h.work, `m0-${s.prefix}`)) } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] }),
    ]);
    expect(retried.status).toBe('completed');
    expect(retried.tasks.a?.attemptNo).toBe(2);
    expect(failed.status).toBe('failed');
    expect(statuses(failed)).toEqual({ a: 'failed', b: 'upstream_failed' });
    expect(failed.tasks.a?.error).toBe('exit code 1');
  });

  it('max_parallelism 1: four independent tasks never overlap and all complete', async () => {
    const s = await stack({ workers: 4 });
    const log = join(h.work, `par-${s.prefix}.log`);
    const task = (name: string) => ({ name, kwargs: { cmd: `echo start >> '${log}'; sleep 0.3; echo end >> '${log}'` } });
    const runtime = await s.run({ name: 'serial', max_parallelism: 1, tasks: ['t1', 't2', 't3', 't4'].map(task) });
    expect(runtime.status).toBe('completed');
    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    expect(lines).toEqual(['start', 'end', 'start', 'end', 'start', 'end', 'start', 'end']);
  });

  it('cancel stops the running task (SIGTERM) and cancels the workflow; retry then completes it', async () => {
    const s = await stack();
    const marker = join(h.work, `term-${s.prefix}`);
    const cmd = `if [ -f '${marker}' ]; then exit 0; fi; trap 'touch ${marker}; exit 143' TERM; sleep 30 & wait`;
    const { workflowId } = await s.client.submit({
      text: JSON.stringify({ name: 'cancel-me', tasks: [{ name: 'long', kwargs: { cmd } }, { name: 'after', depends_on: ['long'], kwargs: { cmd: 'true' } }] }),
      filename: 'flow.json',
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

  it('a second coordinator on the same prefix fails to start with lease-held', async () => {
    const s = await stack();
    const second = s.newCoordinator();
    let error: unknown;
    try {
      await second.start();
    } catch (e) {
      error = e;
    }
    expect(isJobqError(error, 'lease-held')).toBe(true);
  });

  it('dead-letters a poison message, counts it in the stats and changes nothing', async () => {
    const s = await stack();
    await s.completions.send({ body: 'this is not an envelope' });
    await s.completions.send({ body: encodeEnvelope({ id: 'x', kwargs: { something: 'else' }, numRetries: 0 }) });
    const deadline = Date.now() + 10_000;
    while (s.coordinator.counters.poison < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await s.coordinator.stop();
    expect(await s.store.readCoordinatorStats()).toMatchObject({ poison: 2, saves: 0, completionsApplied: 0 });
    expect(await s.completions.approximateMessageCount()).toBe(0);
    // Dead-letter copies carry their reason: a JSON object gains "dead_letter_reason", other text is wrapped.
    const dead = (await s.completions.deadLetterQueue().peek(32)).map((m) => JSON.parse(m.body) as Record<string, unknown>);
    expect(dead).toHaveLength(2);
    expect(dead).toContainEqual({ ...(JSON.parse(encodeEnvelope({ id: 'x', kwargs: { something: 'else' }, numRetries: 0 })) as object), dead_letter_reason: expect.any(String) });
    expect(dead).toContainEqual({ body: 'this is not an envelope', dead_letter_reason: expect.any(String) });
  });
});
