import { describe, expect, it } from '@jest/globals';
import { emptyCounts } from '@jobq/dag-core';
import { fractionBar, layerOf, layerRollup, percentDone, progressText, statusBar, table, truncate } from './format';

describe('format helpers', () => {
  it('layerOf strips a trailing -NNN (three or more digits, optional _N) only', () => {
    expect(layerOf('train-001')).toBe('train');
    expect(layerOf('train-0001_2')).toBe('train');
    expect(layerOf('shard-12')).toBe('shard-12');
    expect(layerOf('a-b-123')).toBe('a-b');
    expect(layerOf('prep')).toBe('prep');
    expect(layerOf('-123')).toBe('-123');
  });

  it('rolls tasks up by layer in order of first appearance, failures counted together', () => {
    const rows = layerRollup([
      { taskName: 'prep', status: 'completed' },
      { taskName: 'train-001', status: 'failed' },
      { taskName: 'train-002', status: 'upstream_failed' },
      { taskName: 'train-003', status: 'running' },
      { taskName: 'prep-extra', status: 'cancelled' },
    ]);
    expect(rows.map((r) => r.layer)).toEqual(['prep', 'train', 'prep-extra']);
    expect(rows[1]).toEqual({ layer: 'train', total: 3, pending: 0, ready: 0, running: 1, completed: 0, failed: 2, skipped: 0 });
  });

  it('draws bars of the requested width with every non-empty group visible', () => {
    const counts = { ...emptyCounts(), completed: 98, failed: 1, running: 1 };
    const bar = statusBar(counts, 50);
    expect(bar).toHaveLength(52);
    expect(bar).toContain('X');
    expect(bar).toContain('>');
    expect(statusBar(emptyCounts(), 10)).toBe(`[${' '.repeat(10)}]`);
    expect(fractionBar(1, 4, 8)).toBe('[##......]');
    expect(percentDone({ ...emptyCounts(), completed: 1, pending: 2 })).toBe('33%');
    expect(progressText({ ...emptyCounts(), completed: 2, failed: 1, skipped: 1, pending: 1 })).toBe('2/5 done, 1 fail, 1 skip');
    expect(progressText({ ...emptyCounts(), completed: 1, failed: 1, upstream_failed: 1, cancelled: 2 })).toBe('1/5 done, 2 fail, 2 cancelled');
  });

  it('pads table columns and truncates long text', () => {
    expect(table(['A', { header: 'N', right: true }], [['xyz', '5'], ['q', '10']]).split('\n')).toEqual(['A     N', '---  --', 'xyz   5', 'q    10']);
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('line one\nline two', 100)).toBe('line one line two');
  });
});
