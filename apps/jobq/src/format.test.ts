import { describe, expect, it } from '@jest/globals';
import { emptyCounts } from '@jobq/dag-core';
import {
  fittedTable,
  fractionBar,
  layerOf,
  layerRollup,
  MIN_WRAPPED_WIDTH,
  percentDone,
  progressText,
  statusBar,
  table,
  truncate,
  wrapText,
} from './format';

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
    expect(progressText({ ...emptyCounts(), completed: 1, failed: 1, upstream_failed: 1, cancelled: 2 })).toBe(
      '1/5 done, 2 fail, 2 cancelled',
    );
  });

  it('pads table columns and truncates long text', () => {
    expect(
      table(
        ['A', { header: 'N', right: true }],
        [
          ['xyz', '5'],
          ['q', '10'],
        ],
      ).split('\n'),
    ).toEqual(['A     N', '---  --', 'xyz   5', 'q    10']);
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('line one\nline two', 100)).toBe('line one line two');
  });

  it('fittedTable wraps a long (masked) connection string to the terminal width after its ";", and leaves it alone when not a terminal', () => {
    const secret = 'DefaultEndpointsProtocol=https;AccountName=envacct;AccountKey=***;EndpointSuffix=core.windows.net';
    const rows = [
      ['prefix', 'envacct/FromEnv', 'env (JOBQ_WORKFLOW_PREFIX)'],
      ['connection string', secret, 'env (JOBQ_STORAGE_CONNECTION_STRING)'],
    ];
    const width = 100;
    const lines = fittedTable(['Setting', 'Value', 'Source'], rows, { wrap: 1, width }).split('\n');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(width);
    expect(lines.slice(2).map((l) => l.trimEnd())).toEqual([
      'prefix             envacct/FromEnv                      env (JOBQ_WORKFLOW_PREFIX)',
      'connection string  DefaultEndpointsProtocol=https;      env (JOBQ_STORAGE_CONNECTION_STRING)',
      '                   AccountName=envacct;AccountKey=***;',
      '                   EndpointSuffix=core.windows.net',
    ]);
    // The pieces put together are the value: nothing is lost.
    const valueWidth = lines[1]?.split('  ')[1]?.length ?? 0;
    expect(
      lines
        .slice(3)
        .map((l) => l.slice(19, 19 + valueWidth).trim())
        .join(''),
    ).toBe(secret);
    expect(fittedTable(['Setting', 'Value', 'Source'], rows, { wrap: 1, width: null })).toBe(table(['Setting', 'Value', 'Source'], rows));
    // A terminal too narrow for the other columns: the value still gets its minimum width.
    const narrow = fittedTable(['Setting', 'Value', 'Source'], rows, { wrap: 1, width: 40 }).split('\n');
    expect(narrow[1]?.split('  ').map((dashes) => dashes.length)).toEqual([17, MIN_WRAPPED_WIDTH, 36]);
    expect(
      narrow
        .slice(2)
        .map((l) => l.slice(19, 19 + MIN_WRAPPED_WIDTH).trim())
        .join(''),
    ).toBe(`envacct/FromEnv${secret}`);
    expect(wrapText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(wrapText('DefaultEndpointsProtocol=https;', 28)).toEqual(['DefaultEndpointsProtocol=', 'https;']);
    expect(wrapText('sv=2024&sig=***&se=2030', 10)).toEqual(['sv=2024&', 'sig=***&', 'se=2030']);
  });
});
