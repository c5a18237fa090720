import { JobqError } from './errors';
import { SHARD_COUNTS, SHARD_MANIFEST_VERSION, type ShardCount, type ShardManifest } from './ownership';
import type { ShardFilter } from './workflow-store';

/**
 * Storage names of coordinator shards (docs/sharding.md#names). Shard 0 keeps the names of a
 * deployment without shards, so a coordinator that knows nothing of shards is fenced by shard 0's
 * lease; shard k ≥ 1 has names of its own.
 */

/** The highest shard index a deployment can have (16 shards). */
const MAX_SHARD_INDEX = Math.max(...SHARD_COUNTS) - 1;

/** The manifest blob, in the workflows container: `{"version":1,"shards":n}`. */
export const SHARD_MANIFEST_BLOB = '_shards/manifest.json';

/** The folder of member records, in the workflows container. */
export const SHARD_MEMBERS_FOLDER = '_shards/members/';

/**
 * A member (coordinator) id: 1–128 letters, digits, `.`, `_` and `-`, starting with a letter or
 * digit (it is part of a blob name).
 */
export const SHARD_MEMBER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** `invalid-argument` unless `shard` is a whole number from 0 to 15. */
export function checkShardIndex(shard: number): void {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard > MAX_SHARD_INDEX) {
    throw new JobqError('invalid-argument', `a shard index is a whole number from 0 to ${MAX_SHARD_INDEX}, got ${String(shard)}`);
  }
}

/** `invalid-argument` unless `memberId` matches {@link SHARD_MEMBER_ID_PATTERN}. */
export function checkShardMemberId(memberId: string): void {
  if (typeof memberId !== 'string' || !SHARD_MEMBER_ID_PATTERN.test(memberId)) {
    throw new JobqError(
      'invalid-argument',
      `a member id is 1–128 letters, digits, ".", "_" and "-", starting with a letter or digit, got ${JSON.stringify(memberId)}`,
    );
  }
}

/** The completion queue of shard `shard`: `base` for shard 0, `{base}-{k}` for shard k ≥ 1 (`base` is `{p}-workflow-completions`). */
export function shardCompletionQueue(base: string, shard: number): string {
  checkShardIndex(shard);
  return shard === 0 ? base : `${base}-${shard}`;
}

/** The lease blob of shard `shard`: `_coordinator.lock` for shard 0, `_shards/{k}.lock` for k ≥ 1. */
export function shardLockBlob(shard: number): string {
  checkShardIndex(shard);
  return shard === 0 ? '_coordinator.lock' : `_shards/${shard}.lock`;
}

/** The stats blob of shard `shard`: `_coordinator.stats.json` for shard 0, `_shards/{k}.stats.json` for k ≥ 1. */
export function shardStatsBlob(shard: number): string {
  checkShardIndex(shard);
  return shard === 0 ? '_coordinator.stats.json' : `_shards/${shard}.stats.json`;
}

/** The record of member `memberId`: `_shards/members/{id}.json`. */
export function shardMemberBlob(memberId: string): string {
  checkShardMemberId(memberId);
  return `${SHARD_MEMBERS_FOLDER}${memberId}.json`;
}

/** `invalid-argument` unless `shards` is one of {@link SHARD_COUNTS}. */
export function checkShardCount(shards: unknown): asserts shards is ShardCount {
  if (!SHARD_COUNTS.includes(shards as ShardCount)) {
    throw new JobqError('invalid-argument', `a shard count must be one of ${SHARD_COUNTS.join(', ')}, got ${String(shards)}`);
  }
}

/** Reads a manifest's text: `unsupported` for an unknown version, `corrupt` for anything else it cannot read. */
export function parseShardManifest(text: string): ShardManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const j = (typeof json === 'object' && json !== null && !Array.isArray(json) ? json : null) as {
    version?: unknown;
    shards?: unknown;
  } | null;
  if (j === null || typeof j.version !== 'number')
    throw new JobqError('corrupt', 'the shard manifest _shards/manifest.json is not a JSON object with a version');
  if (j.version !== SHARD_MANIFEST_VERSION) {
    throw new JobqError(
      'unsupported',
      `the shard manifest _shards/manifest.json has version ${j.version}; this jobq reads version ${SHARD_MANIFEST_VERSION}: upgrade it`,
    );
  }
  if (!SHARD_COUNTS.includes(j.shards as ShardCount)) {
    throw new JobqError(
      'corrupt',
      `the shard manifest _shards/manifest.json names ${String(j.shards)} shards (one of ${SHARD_COUNTS.join(', ')} expected)`,
    );
  }
  return { version: SHARD_MANIFEST_VERSION, shards: j.shards as ShardCount };
}

/** `invalid-argument` unless `shard` is `{index, count}` with count one of {@link SHARD_COUNTS} and 0 ≤ index < count. */
export function checkShardFilter(shard: ShardFilter): void {
  const { index, count } = (typeof shard === 'object' && shard !== null ? shard : {}) as Partial<ShardFilter>;
  if (!SHARD_COUNTS.includes(count as ShardCount) || !Number.isSafeInteger(index) || index! < 0 || index! >= count!) {
    throw new JobqError(
      'invalid-argument',
      `a shard filter is {index, count} with count one of ${SHARD_COUNTS.join(', ')} and index from 0 to count − 1, got ${JSON.stringify(shard)}`,
    );
  }
}
