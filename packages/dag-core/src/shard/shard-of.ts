/**
 * Coordinator shards (docs/sharding.md): a workflow belongs to shard `shardOf(id, n)` of a
 * deployment with `n` shards. The hash is the one that picks a workflow's index partition
 * (`fnv1a32(id) & 0xf`, one of 16), so shard k of n is exactly the index partitions p with
 * p mod n = k: a shard's scans query its own partitions, and index rows never move.
 */

/** The shard counts a deployment may have: each divides the 16 index partitions. */
const ALLOWED_SHARD_COUNTS: readonly number[] = [1, 2, 4, 8, 16];

/**
 * 32-bit FNV-1a over the UTF-16 code units of `text` (for the ASCII of workflow ids, its bytes), as
 * an unsigned integer.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** True for a shard count a deployment may have: 1, 2, 4, 8 or 16. */
export function isShardCount(n: unknown): n is 1 | 2 | 4 | 8 | 16 {
  return typeof n === 'number' && ALLOWED_SHARD_COUNTS.includes(n);
}

/** The index partition (0–15) of a workflow id: the low 4 bits of {@link fnv1a32}. */
export function indexPartitionOf(workflowId: string): number {
  return fnv1a32(workflowId) & 0xf;
}

/**
 * The shard (0 … n−1) of workflow `workflowId` in a deployment of `n` shards: its index partition
 * mod n. A `RangeError` naming the allowed counts for any other `n`.
 */
export function shardOf(workflowId: string, n: number): number {
  if (!isShardCount(n)) throw new RangeError(`a shard count must be one of ${ALLOWED_SHARD_COUNTS.join(', ')}, got ${String(n)}`);
  return indexPartitionOf(workflowId) % n;
}
