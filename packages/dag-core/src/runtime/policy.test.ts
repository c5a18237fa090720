import { describe, expect, it } from '@jest/globals';
import { encodeRuntime } from './codec';
import { reduce } from './reduce';
import { policyVerdict } from './settle';
import { Harness, at, decodedRuntime, definition } from './test-helpers/build';
import type { DepPolicy } from '../definition/types';
import { isBlocking, isSatisfying, type TaskStatus } from './types';

// Every combination of three parents' outcomes against every policy, checked against the table of
// docs/workflow-language.md#dependency-policies written out independently: "ready when", "upstream_failed when", failure test first.
const OUTCOMES: TaskStatus[] = ['completed', 'skipped', 'failed', 'upstream_failed', 'cancelled', 'running'];
const POLICIES: DepPolicy[] = ['all', 'any', 'all_settled', 1, 2, 3];

function expected(policy: DepPolicy, outcomes: readonly TaskStatus[]): 'ready' | 'blocked' | 'wait' {
  const n = outcomes.length;
  const s = outcomes.filter((o) => o === 'completed' || o === 'skipped').length;
  const b = outcomes.filter((o) => o === 'failed' || o === 'upstream_failed' || o === 'cancelled').length;
  const table: Record<string, { ready: boolean; failed: boolean }> = {
    all: { ready: s === n, failed: b > 0 },
    any: { ready: s >= 1, failed: b === n },
    all_settled: { ready: s + b === n && s >= 1, failed: s + b === n && s === 0 },
  };
  const row = typeof policy === 'number' ? { ready: s >= policy, failed: n - b < policy } : table[policy]!;
  return row.failed ? 'blocked' : row.ready ? 'ready' : 'wait';
}

const combos: TaskStatus[][] = [];
for (const x of OUTCOMES) for (const y of OUTCOMES) for (const z of OUTCOMES) combos.push([x, y, z]);

describe('dependency policy truth table (docs/workflow-language.md#dependency-policies)', () => {
  it.each(POLICIES.map((p) => [String(p), p] as const))('%s over all %#-th 216 parent outcome combinations', (_name, policy) => {
    const rows = combos.map((outcomes) => {
      const s = outcomes.filter(isSatisfying).length;
      const b = outcomes.filter(isBlocking).length;
      return { outcomes: outcomes.join(','), got: policyVerdict(policy, 3, s, b), want: expected(policy, outcomes) };
    });
    expect(rows.filter((r) => r.got !== r.want)).toEqual([]);
    // The table is not degenerate: every policy reaches all three verdicts.
    expect(new Set(rows.map((r) => r.got))).toEqual(new Set(['ready', 'blocked', 'wait']));
  });

  it('treats a task without dependencies as ready whatever its policy', () => {
    for (const policy of POLICIES) expect(policyVerdict(policy, 0, 0, 0)).toBe('ready');
  });
});

describe('dependency policies through reduce', () => {
  // The same table, end to end: two parents are put in every outcome by editing a stored runtime,
  // then the third parent's completion (success or failure) is delivered and the child's status read.
  const TRIGGERS = [
    { success: true, outcome: 'completed' as TaskStatus },
    { success: false, outcome: 'failed' as TaskStatus },
  ];
  const STATUS_OF = { ready: 'running', blocked: 'upstream_failed', wait: 'pending' } as const;

  it.each(POLICIES.map((p) => [String(p), p] as const))('%s', (_name, policy) => {
    const def = definition([
      { name: 'p1' },
      { name: 'p2' },
      { name: 'p3' },
      { name: 'child', depends_on: ['p1', 'p2', 'p3'], dep_policy: policy },
    ]);
    const base = new Harness(def);
    base.activate(); // p1..p3 running at attempt 1
    const mismatches: string[] = [];
    for (const o1 of OUTCOMES) {
      for (const o2 of OUTCOMES) {
        for (const trigger of TRIGGERS) {
          const json = JSON.parse(encodeRuntime(base.runtime)) as { tasks: Record<string, { status: string }> };
          json.tasks.p1!.status = o1;
          json.tasks.p2!.status = o2;
          const runtime = decodedRuntime(JSON.stringify(json));
          const { runtime: after } = reduce(runtime, {
            type: 'completion',
            now: at(5),
            taskName: 'p3',
            attemptNo: 1,
            success: trigger.success,
            outputRef: null,
            error: trigger.success ? null : 'boom',
          });
          const want = STATUS_OF[expected(policy, [o1, o2, trigger.outcome])];
          const got = after.tasks.child?.status;
          if (got !== want) mismatches.push(`${o1},${o2},${trigger.outcome}: got ${got}, want ${want}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
  });
});
