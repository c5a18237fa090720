// The table of examples in docs/conditions.md is evaluated here, so the document cannot drift
// from the evaluator: every row's result and skip reason.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileCondition, conditionSkipReason, evaluateCondition } from './index';

const DOC = join(__dirname, '..', '..', '..', '..', 'docs', 'conditions.md');
const MARKER = '<!-- conditions-table:';

// The scenario the document states above its table.
const DEPENDS_ON = ['a', 'train-gpu', 'train-cpu', 'train-tpu'];
const INPUTS = {
  a: { accuracy: 0.95, loss: 0.1, tags: ['gpu'], note: null },
  'train-gpu': null,
  'train-cpu': { accuracy: 0.85 },
  'train-tpu': { accuracy: 0.95 },
};
const STATUS = { a: 'completed', 'train-gpu': 'failed', 'train-cpu': 'completed', 'train-tpu': 'completed' };

interface Row {
  condition: string;
  result: string;
  reason: string | null;
}

function tableRows(): Row[] {
  const text = readFileSync(DOC, 'utf8');
  const start = text.indexOf(MARKER);
  if (start < 0) throw new Error(`${DOC}: no ${MARKER} marker`);
  const rows: Row[] = [];
  for (const line of text.slice(start).split('\n').slice(3)) {
    if (!line.startsWith('|')) break;
    const match = /^\| `(.+)` \| (\w+) \| (?:—|`(.+)`) \|$/.exec(line);
    if (match === null) throw new Error(`${DOC}: a table row that does not read: ${line}`);
    rows.push({ condition: match[1]!, result: match[2]!, reason: match[3] ?? null });
  }
  return rows;
}

describe('docs/conditions.md', () => {
  const rows = tableRows();

  it('has a table of examples with every result', () => {
    expect(new Set(rows.map((r) => r.result))).toEqual(new Set(['true', 'false', 'unknown', 'error']));
  });

  it.each(rows.map((r) => [r.condition, r] as const))('%s', (_, row) => {
    const compiled = compileCondition(row.condition, DEPENDS_ON);
    if (!compiled.ok) throw new Error(compiled.issues[0]?.message);
    const evaluation = evaluateCondition(compiled.value, INPUTS, { parentStatus: STATUS });
    expect(evaluation.ok ? String(evaluation.truth) : 'error').toBe(row.result);
    expect(conditionSkipReason(evaluation)).toBe(row.reason);
  });
});
