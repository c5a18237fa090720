import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { shardOf } from '@jobq/dag-core';
import { decodeTaskRowKey, encodeTaskRowKey, indexPartition, prefixRangeEnd, storeNames } from './names';

describe('storeNames', () => {
  it('derives every name of docs/design.md#storage-layout from the prefix', () => {
    expect(storeNames('MyProject')).toEqual({
      prefix: 'MyProject',
      workflowsContainer: 'myproject-workflows',
      indexTable: 'MyProjectWorkflowsIndex',
      tasksTable: 'MyProjectWorkflowTasks',
      workersTable: 'MyProjectWorkers',
      completionQueue: 'myproject-workflow-completions',
      outputsContainer: 'myproject-outputs',
      leaseBlob: '_coordinator.lock',
      statsBlob: '_coordinator.stats.json',
    });
  });

  it('refuses a prefix that cannot make legal names, saying why', () => {
    for (const bad of ['', '1abc', 'my-project', 'my_project', 'a b', 'x'.repeat(33)]) {
      expect(() => storeNames(bad)).toThrow(/cannot name storage/);
    }
    expect(storeNames('x'.repeat(32)).completionQueue.length + '-failed'.length).toBeLessThanOrEqual(63);
  });
});

describe('task RowKeys', () => {
  it('encodes "/" and "%" and reverses', () => {
    expect(encodeTaskRowKey('prep/featurize')).toBe('prep%2Ffeaturize');
    expect(encodeTaskRowKey('50%/x')).toBe('50%25%2Fx');
    expect(decodeTaskRowKey('50%25%2Fx')).toBe('50%/x');
  });

  it('round-trips and keeps prefixes as RowKey ranges, for any names', () => {
    const name = fc.stringMatching(/^[a-z%/2F5]{0,12}$/);
    fc.assert(
      fc.property(name, name, (prefix, rest) => {
        const full = prefix + rest;
        expect(decodeTaskRowKey(encodeTaskRowKey(full))).toBe(full);
        const key = encodeTaskRowKey(full);
        const start = encodeTaskRowKey(prefix);
        expect(key >= start && key < prefixRangeEnd(start)).toBe(true);
      }),
    );
    fc.assert(
      fc.property(name, name, (a, b) => {
        // A RowKey in a prefix's range means the name really has that prefix.
        const key = encodeTaskRowKey(b);
        const start = encodeTaskRowKey(a);
        if (key.startsWith(start)) expect(b.startsWith(a)).toBe(true);
      }),
    );
  });
});

describe('indexPartition', () => {
  it('spreads ids over 16 buckets, the same way every time', () => {
    const buckets = new Set(Array.from({ length: 400 }, (_, i) => indexPartition(`wf-${i}`)));
    expect([...buckets].sort()).toEqual('0123456789abcdef'.split(''));
    expect(indexPartition('abc')).toBe(indexPartition('abc'));
    expect(['wf-1', 'wf-2', 'A.b_c-9', 'x'.repeat(128)].map(indexPartition)).toEqual(['2', 'f', '0', '5']);
  });

  it('puts a workflow in shard indexPartition mod n (docs/sharding.md)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/), fc.constantFrom(1, 2, 4, 8, 16), (id, n) => {
        expect(shardOf(id, n)).toBe(parseInt(indexPartition(id), 16) % n);
      }),
    );
  });
});
