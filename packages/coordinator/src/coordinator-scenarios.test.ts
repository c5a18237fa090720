import { describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isTerminalWorkflowStatus, withTaskStates, type WorkflowRuntime } from '@jobq/dag-core';
import { openStack, useHarness, type StackOptions } from './test-helpers/stack';

// End-to-end scenarios over Azurite, Storage Queues and real workers (SPEC §3.2–3.9, §5.2, §7, §9).

const h = useHarness();
const stack = (options?: StackOptions) => openStack(h, options);

function statuses(runtime: WorkflowRuntime): Record<string, string> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, task.status]));
}

const out = (json: string) => `printf '%s' '${json}' > "$JOBQ_OUTPUT_FILE"`;
const copyRefs = (path: string) => `cp "$JOBQ_WORKFLOW_UPSTREAM_REFS" '${path}'`;

async function readRefs(path: string): Promise<Record<string, string | null>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, string | null>;
}

describe('Coordinator scenarios', () => {
  it('dependency policies with a failed parent: any, all_settled and N=2 run; N=3 and all are upstream_failed', async () => {
    const s = await stack();
    const refs = join(h.work, `any-${s.prefix}.json`);
    const runtime = await s.run({
      name: 'policies',
      tasks: [
        { name: 'f1', kwargs: { cmd: 'exit 1' } },
        { name: 's1', kwargs: { cmd: out('{"v":"s1"}') } },
        { name: 's2', kwargs: { cmd: out('{"v":"s2"}') } },
        { name: 'c_any', depends_on: ['f1', 's1'], dep_policy: 'any', kwargs: { cmd: copyRefs(refs) } },
        { name: 'c_settled', depends_on: ['f1', 's1'], dep_policy: 'all_settled', kwargs: { cmd: 'true' } },
        { name: 'c_n2', depends_on: ['f1', 's1', 's2'], dep_policy: 2, kwargs: { cmd: 'true' } },
        { name: 'c_n3', depends_on: ['f1', 's1', 's2'], dep_policy: 3, kwargs: { cmd: 'true' } },
        { name: 'c_all', depends_on: ['f1', 's1'], dep_policy: 'all', kwargs: { cmd: 'true' } },
      ],
    });
    expect(statuses(runtime)).toEqual({
      f1: 'failed',
      s1: 'completed',
      s2: 'completed',
      c_any: 'completed',
      c_settled: 'completed',
      c_n2: 'completed',
      c_n3: 'upstream_failed',
      c_all: 'upstream_failed',
    });
    expect(runtime.tasks.f1?.error).toBe('exit code 1');
    // The sinks c_n3 and c_all are blocked (all_sinks_succeed).
    expect(runtime.status).toBe('failed');
    // Only the parents that completed (or were skipped) are upstream: the failed f1 is absent.
    expect(await readRefs(refs)).toEqual({ s1: '{"v":"s1"}' });
  });

  it('a condition error skips the task with the error; a condition over a > 32 KiB parent output is evaluated', async () => {
    const s = await stack();
    const big = `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify({ n: 5, pad: "p".repeat(40 * 1024) }))'`;
    const runtime = await s.run({
      name: 'condition-errors',
      tasks: [
        { name: 'a', kwargs: { cmd: out('{"x":null}') } },
        { name: 'big', kwargs: { cmd: big } },
        { name: 'err', depends_on: ['a'], condition: 'inputs.a.x > 1', kwargs: { cmd: 'true' } },
        { name: 'after_err', depends_on: ['err'], kwargs: { cmd: 'true' } },
        { name: 'yes', depends_on: ['big'], condition: 'inputs.big.n > 3 and inputs.big.pad != ""', kwargs: { cmd: 'true' } },
      ],
    });
    expect(runtime.tasks.big?.outputRef).toMatch(/^blob:/);
    expect(statuses(runtime)).toEqual({ a: 'completed', big: 'completed', err: 'skipped', after_err: 'completed', yes: 'completed' });
    expect(runtime.tasks.err?.error).toMatch(/^condition error: /);
    expect(runtime.tasks.err?.error).not.toBe('condition false');
    expect(runtime.status).toBe('completed');
  });

  // 1 000 rather than 3 000 parents: every parent is a real subprocess (~30 s for 1 000 on a 2-core
  // machine); the 3 000-parent message itself is checked in @jobq/dag-core.
  it('fans 1 000 parents into one sink whose task message fits in one Storage Queue message', async () => {
    const s = await stack({ workers: 8 });
    const refs = join(h.work, `fanin-${s.prefix}.json`);
    const names = Array.from({ length: 1_000 }, (_, i) => `t${String(i).padStart(4, '0')}`);
    const runtime = await s.run(
      {
        name: 'fan-in-1000',
        tasks: [...names.map((name) => ({ name, kwargs: { cmd: ':' } })), { name: 'sink', depends_on: names, kwargs: { cmd: copyRefs(refs) } }],
      },
      {},
      150_000,
    );
    expect(runtime.status).toBe('completed');
    expect(runtime.counts.completed).toBe(names.length + 1);
    const upstream = await readRefs(refs);
    expect(Object.keys(upstream).sort()).toEqual(names);
    expect(Object.values(upstream).every((ref) => ref === null)).toBe(true);
    // The compact refs fit: no overflow blob was written.
    expect(s.coordinator.counters.overflowBlobs).toBe(0);
    expect(s.coordinator.counters.pushErrors).toBe(0);
  }, 180_000);

  it('--max-fan-in 10 over 50 leaves: merge nodes complete without running, gates hold each batch back, the sink sees the 50 real parents', async () => {
    const s = await stack({ workers: 4 });
    const refs = join(h.work, `merge-${s.prefix}.json`);
    const leaves = Array.from({ length: 50 }, (_, i) => `l${String(i).padStart(2, '0')}`);
    const runtime = await s.run(
      {
        name: 'max-fan-in',
        tasks: [...leaves.map((name) => ({ name, kwargs: { cmd: 'true' } })), { name: 'sink', depends_on: leaves, kwargs: { cmd: copyRefs(refs) } }],
      },
      { maxFanIn: 10 },
      40_000,
    );
    expect(runtime.status).toBe('completed');
    const merges = [0, 1, 2, 3, 4].map((i) => `__merge_sink_${i}`);
    for (const merge of merges) {
      expect(runtime.tasks[merge]).toMatchObject({ status: 'completed' });
    }
    expect(Object.keys(runtime.tasks)).toHaveLength(56);
        // Never dispatched: no worker line mentions a merge node.
    expect(s.workerLogs.filter((line) => line.includes('__merge_'))).toEqual([]);
    // Batch i > 0 starts only after merge i − 1 completed.
    const time = (value: string | null | undefined) => {
      expect(typeof value).toBe('string');
      return Date.parse(value ?? '');
    };
    for (let i = 1; i < 5; i++) {
      const gateDone = time(runtime.tasks[`__merge_sink_${i - 1}`]?.completedAt);
      for (const leaf of leaves.slice(i * 10, i * 10 + 10)) {
        expect(time(runtime.tasks[leaf]?.dispatchedAt)).toBeGreaterThanOrEqual(gateDone);
      }
      // ... and merge i − 1 waited for every leaf of batch i − 1.
      for (const leaf of leaves.slice((i - 1) * 10, i * 10)) {
        expect(time(runtime.tasks[leaf]?.completedAt)).toBeLessThanOrEqual(gateDone);
      }
    }
    const upstream = await readRefs(refs);
    expect(Object.keys(upstream).sort()).toEqual(leaves);
  }, 60_000);

  it('timeout: attempt 1 runs past timeout_s and is failed (sweep or worker); attempt 2 completes the workflow', async () => {
    const s = await stack({ coordinator: { timeoutSweepIntervalInMs: 300 } });
    const marker = join(h.work, `timeout-${s.prefix}`);
    const cmd = `if [ -f '${marker}' ]; then exit 0; fi; touch '${marker}'; sleep 30`;
    const runtime = await s.run({
      name: 'timeout',
      tasks: [
        { name: 'slow', timeout_s: 1, num_retries: 1, kwargs: { cmd } },
        { name: 'after', depends_on: ['slow'], kwargs: { cmd: 'true' } },
      ],
    });
    expect(runtime.status).toBe('completed');
    expect(statuses(runtime)).toEqual({ slow: 'completed', after: 'completed' });
    expect(runtime.tasks.slow?.attemptNo).toBe(2);
    // A late completion of attempt 1 (if the worker's local timeout sent one after the sweep) changes nothing.
    await new Promise((r) => setTimeout(r, 1_500));
    const later = await s.store.load(runtime.workflowId);
    expect(later?.runtime.status).toBe('completed');
    expect(later?.runtime.tasks.slow).toMatchObject({ status: 'completed', attemptNo: 2 });
  }, 40_000);

  it('ready-repair dispatches a ready task whose dispatch was lost', async () => {
    const s = await stack({ start: false, coordinator: { readySweepIntervalInMs: 300, readyRepairThresholdInMs: 1_000, cancelPollIntervalInMs: 200 } });
    const workflowId = await s.submit({ name: 'lost-dispatch', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }, { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } }] });
    // Lose the submit wake-up ...
    for (let tries = 0; tries < 20; tries++) {
      const messages = await s.completions.receive({ maxMessages: 32, maxWaitTimeInMs: 100 });
      for (const message of messages) await s.completions.complete(message);
      if (messages.length > 0 && (await s.completions.approximateMessageCount()) === 0) break;
    }
    expect(await s.completions.approximateMessageCount()).toBe(0);
    // ... and record an activation whose push never happened: `a` is ready, nothing is on the queue.
    const loaded = await s.store.load(workflowId);
    if (!loaded) throw new Error('no runtime');
    expect(loaded.runtime.tasks.a?.status).toBe('ready');
    const lost = withTaskStates(loaded.runtime, [], { activated: true, status: 'running' });
    await s.store.save(lost, loaded.etag, { previous: loaded.runtime });
    expect((await s.store.getWorkflow(workflowId))?.status).toBe('running');

    await s.coordinator.start();
    // Not before the threshold: the runtime is younger than 1 s at first.
    const done = await s.waitFor(workflowId, (r) => isTerminalWorkflowStatus(r.status), 15_000);
    expect(done.status).toBe('completed');
    expect(statuses(done)).toEqual({ a: 'completed', b: 'completed' });
    expect(done.tasks.a?.attemptNo).toBe(1);
    expect(s.coordinator.counters.readyRepairs).toBe(1);
    expect(s.coordinator.counters.activations).toBe(0);
    expect(s.logs.some((line) => line.includes(`workflow ${workflowId}: ready-repair dispatched its ready tasks`))).toBe(true);
  }, 30_000);
});
