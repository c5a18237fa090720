import { describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkflowRuntime } from '@jobq/dag-core';
import { openStack, useHarness, type StackOptions } from './test-helpers/stack';

// End-to-end scenarios over Azurite, Storage Queues and real workers (docs/design.md, docs/workflow-language.md).
// The scenarios about timers (task timeout, ready-repair) and max-fan-in gates run on the in-memory
// adapters and a virtual clock: coordinator-scenarios.memory.test.ts.

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
        { name: 'a', kwargs: { cmd: out('{"x":"s"}') } },
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
        tasks: [
          ...names.map((name) => ({ name, kwargs: { cmd: ':' } })),
          { name: 'sink', depends_on: names, kwargs: { cmd: copyRefs(refs) } },
        ],
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
});
