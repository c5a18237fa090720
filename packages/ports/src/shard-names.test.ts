import { describe, expect, it } from '@jest/globals';
import { isJobqError } from './errors';
import { SHARD_COUNTS } from './ownership';
import {
  SHARD_MANIFEST_BLOB,
  checkShardCount,
  parseShardManifest,
  shardCompletionQueue,
  shardLockBlob,
  shardMemberBlob,
  shardStatsBlob,
} from './shard-names';

/** Azure queue names: 3–63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit. */
const QUEUE_NAME = /^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$/;

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (error) {
    return isJobqError(error) ? error.code : String(error);
  }
  return undefined;
}

describe('shard names', () => {
  it('keeps the unsharded names for shard 0 and gives shard k ≥ 1 its own', () => {
    expect([0, 1, 15].map((k) => shardCompletionQueue('p-workflow-completions', k))).toEqual([
      'p-workflow-completions',
      'p-workflow-completions-1',
      'p-workflow-completions-15',
    ]);
    expect([0, 1, 15].map(shardLockBlob)).toEqual(['_coordinator.lock', '_shards/1.lock', '_shards/15.lock']);
    expect([0, 3].map(shardStatsBlob)).toEqual(['_coordinator.stats.json', '_shards/3.stats.json']);
    expect(shardMemberBlob('host-1.a_b')).toBe('_shards/members/host-1.a_b.json');
    expect(SHARD_MANIFEST_BLOB).toBe('_shards/manifest.json');
  });

  it('fits every shard queue, and its -failed queue, at a 32-character prefix', () => {
    const base = `${'p'.repeat(32)}-workflow-completions`;
    const most = Math.max(...SHARD_COUNTS);
    for (let k = 0; k < most; k++) {
      const queue = shardCompletionQueue(base, k);
      expect(queue).toMatch(QUEUE_NAME);
      expect(`${queue}-failed`).toMatch(QUEUE_NAME);
    }
  });

  it('refuses a shard index outside 0–15 and a member id that cannot name a blob', () => {
    for (const bad of [-1, 16, 1.5, Number.NaN]) {
      expect(codeOf(() => shardLockBlob(bad))).toBe('invalid-argument');
      expect(codeOf(() => shardCompletionQueue('q', bad))).toBe('invalid-argument');
    }
    for (const bad of ['', '_x', 'a/b', 'a b', 'x'.repeat(129)]) expect(codeOf(() => shardMemberBlob(bad))).toBe('invalid-argument');
  });
});

describe('parseShardManifest', () => {
  it('reads version 1, refuses an unknown version as unsupported and anything else as corrupt', () => {
    expect(parseShardManifest('{"version":1,"shards":8}')).toEqual({ version: 1, shards: 8 });
    expect(codeOf(() => parseShardManifest('{"version":2,"shards":8}'))).toBe('unsupported');
    for (const bad of ['', 'null', '[]', '{"shards":4}', '{"version":1,"shards":3}', '{"version":1}'])
      expect(codeOf(() => parseShardManifest(bad))).toBe('corrupt');
    expect(codeOf(() => checkShardCount(32))).toBe('invalid-argument');
    expect(codeOf(() => checkShardCount(0))).toBe('invalid-argument');
  });
});
