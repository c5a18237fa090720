import { indexPartitionOf } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';

/** A prefix makes legal container, table and queue names (docs/design.md#names), `-failed` suffixes included. */
const PREFIX = /^[A-Za-z][A-Za-z0-9]{0,31}$/;

/** Every storage name derived from a deployment prefix (docs/design.md#storage-layout). */
export interface StoreNames {
  /** The prefix as given (tables keep its case). */
  prefix: string;
  /** Container of runtime blobs, the lease and the stats: `{p}-workflows`. */
  workflowsContainer: string;
  /** `{PREFIX}WorkflowsIndex`. */
  indexTable: string;
  /** `{PREFIX}WorkflowTasks`. */
  tasksTable: string;
  /** `{PREFIX}Workers`: one heartbeat row per worker. */
  workersTable: string;
  /** `{p}-workflow-completions`. */
  completionQueue: string;
  /** Default outputs container `{p}-outputs` (when `JOBQ_WORKFLOW_BLOBS` is not set). */
  outputsContainer: string;
  leaseBlob: '_coordinator.lock';
  statsBlob: '_coordinator.stats.json';
}

/** Derives the names of a prefix; a prefix that cannot make legal names is a clear `invalid-config` error. */
export function storeNames(prefix: string): StoreNames {
  if (!PREFIX.test(prefix)) {
    throw new JobqError(
      'invalid-config',
      `prefix "${prefix}" cannot name storage: it must start with a letter and have at most 32 letters and digits (no "-", "_" or spaces)`,
    );
  }
  const p = prefix.toLowerCase();
  return {
    prefix,
    workflowsContainer: `${p}-workflows`,
    indexTable: `${prefix}WorkflowsIndex`,
    tasksTable: `${prefix}WorkflowTasks`,
    workersTable: `${prefix}Workers`,
    completionQueue: `${p}-workflow-completions`,
    outputsContainer: `${p}-outputs`,
    leaseBlob: '_coordinator.lock',
    statsBlob: '_coordinator.stats.json',
  };
}

/** The runtime blob of a workflow, inside the workflows container. */
export function runtimeBlobName(workflowId: string): string {
  return `${workflowId}.json`;
}

/**
 * A task name as a Table RowKey: `%` → `%25`, then `/` → `%2F`. Character by character, so name
 * prefixes stay RowKey prefixes (a prefix query is a RowKey range) and the mapping reverses.
 * Task names cannot hold the other characters RowKeys forbid (`\`, `#`, `?`, control characters).
 */
export function encodeTaskRowKey(taskName: string): string {
  return taskName.replace(/%/g, '%25').replace(/\//g, '%2F');
}

/** The task name of a RowKey written by {@link encodeTaskRowKey}. */
export function decodeTaskRowKey(rowKey: string): string {
  return rowKey.replace(/%2F/g, '/').replace(/%25/g, '%');
}

/** The smallest string greater than every string starting with `prefix` (the end of a RowKey range). */
export function prefixRangeEnd(prefix: string): string {
  return `${prefix}\uffff`;
}

/**
 * The index PartitionKey of a workflow: one of 16 buckets (`0`–`f`) by an FNV-1a hash of its id
 * (`@jobq/dag-core`'s `indexPartitionOf`, which also places the workflow in its shard: docs/sharding.md).
 */
export function indexPartition(workflowId: string): string {
  return indexPartitionOf(workflowId).toString(16);
}
