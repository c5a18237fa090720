import { describe, expect, it } from '@jest/globals';
import { BoundedLabel, METRICS, OTHER_LABEL_VALUE, metricsMarkdownTable, noopInstruments } from './index';

describe('METRICS', () => {
  it('keys each definition by its name, with prometheus-safe names and labels and no id labels', () => {
    for (const [key, m] of Object.entries(METRICS)) {
      expect(m.name).toBe(key);
      expect(m.name).toMatch(/^jobq_[a-z_]+$/);
      if (m.type === 'counter') expect(m.name).toMatch(/_total$/);
      for (const label of m.labels) expect(label).toMatch(/^[a-z_]+$/);
      expect(m.labels.filter((l) => /(^|_)id$/.test(l))).toEqual([]);
      if (m.type === 'histogram') expect('buckets' in m && m.buckets.length > 0).toBe(true);
    }
  });

  it('renders one table row per metric', () => {
    const table = metricsMarkdownTable().split('\n');
    expect(table).toHaveLength(Object.keys(METRICS).length + 2);
    expect(table[2]).toContain('`jobq_coordinator_completions_total` | counter | `result`');
  });

  it('the no-op instruments record nothing and never throw', () => {
    expect(noopInstruments.enabled).toBe(false);
    expect(() => noopInstruments.inc('jobq_coordinator_completions_total', { result: 'applied' })).not.toThrow();
  });
});

describe('BoundedLabel', () => {
  it('passes the first distinct values, then gives "other"', () => {
    const label = new BoundedLabel(2);
    expect([label.value('a'), label.value('b'), label.value('a'), label.value('c'), label.value('b')]).toEqual([
      'a',
      'b',
      'a',
      OTHER_LABEL_VALUE,
      'b',
    ]);
  });
});
