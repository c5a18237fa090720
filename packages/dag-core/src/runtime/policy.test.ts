import { describe, expect, it } from '@jest/globals';
import { policyVerdict } from './settle';
import type { DepPolicy } from '../definition/types';
import { isBlocking, isSatisfying, type TaskStatus } from './types';

// Every combination of three parents' outcomes against every policy, checked against the table of
// SPEC §3.2 written out independently: "ready when", "upstream_failed when", failure test first.
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

describe('dependency policy truth table (SPEC §3.2)', () => {
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
