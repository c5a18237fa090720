import { describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkflowRuntime } from '@jobq/dag-core';
import { isJobqError } from '@jobq/ports';
import { openStack, useHarness, type StackOptions } from './test-helpers/stack';

const h = useHarness();
const stack = (options?: StackOptions) => openStack(h, options);

function statuses(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, task.status]));
}

// The diamond, cancel, poison and the other scenarios that depend on the queues run on both queue
// backends: queue-scenarios.test.ts and queue-scenarios.servicebus.test.ts.
describe('Coordinator', () => {
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
      s.run({
        name: 'retry-1',
        tasks: [
          { name: 'a', num_retries: 1, kwargs: { cmd: flaky(join(h.work, `m1-${s.prefix}`)) } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      }),
      s.run({
        name: 'retry-0',
        tasks: [
          { name: 'a', kwargs: { cmd: flaky(join(h.work, `m0-${s.prefix}`)) } },
          { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
        ],
      }),
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
});
