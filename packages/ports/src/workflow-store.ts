import type { TaskStatus, WorkflowRuntime, WorkflowStatus } from '@jobq/dag-core';
import type { OperationOptions } from './task-queue';

/**
 * @experimental The storage side of workflows (SPEC §6). The Azure adapter and its contract suite
 * arrive with `@jobq/store-azure`; these shapes may still grow.
 */

/** A runtime with the ETag it was read at. */
export interface LoadedRuntime {
  runtime: WorkflowRuntime;
  etag: string;
}

/** One row of the workflow index. */
export interface WorkflowSummary {
  workflowId: string;
  name: string;
  /** The index status: `pending` also while a retry request waits to be applied. */
  status: WorkflowStatus;
  counts: Partial<Record<TaskStatus, number>>;
  queues: string[];
  definitionHash: string;
  createdAt: string;
  updatedAt: string;
  cancelRequestedAt: string | null;
  retryRequestedAt: string | null;
  error: string | null;
}

/** One row of the task table. */
export interface TaskRow {
  workflowId: string;
  taskName: string;
  status: TaskStatus;
  queue: string;
  attemptNo: number;
  updatedAt: string;
  error: string | null;
}

/** A page of results and the token for the next one (null at the end). */
export interface Page<T> {
  items: T[];
  continuationToken: string | null;
}

/** Which workflows to list. */
export interface WorkflowFilter extends OperationOptions {
  status?: readonly WorkflowStatus[];
  /** Newest first. */
  recent?: boolean;
  limit?: number;
  continuationToken?: string;
}

/** Which task rows to list. */
export interface TaskFilter extends OperationOptions {
  workflowId?: string;
  /** Task names starting with this (a RowKey range). */
  namePrefix?: string;
  status?: readonly TaskStatus[];
  queue?: string;
  limit?: number;
  continuationToken?: string;
}

/** The coordinator's exclusive right to write a prefix's runtimes (SPEC §9). */
export interface CoordinatorLease {
  readonly leaseId: string;
  /** Fires when the lease cannot be renewed or was broken: stop writing at once. */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

/** Options of {@link WorkflowStore.acquireLease}. */
export interface AcquireLeaseOptions extends OperationOptions {
  /** Break a lease held by someone else first (`--break-lease`). */
  breakExisting?: boolean;
}

/** Runtime blobs with ETag compare-and-swap, plus the index and task rows derived from them. */
export interface WorkflowStore {
  /** Writes a new runtime (If-None-Match) and its index row; `conflict` when the id holds another definition. */
  create(runtime: WorkflowRuntime, definitionHash: string, options?: OperationOptions): Promise<{ etag: string }>;
  load(workflowId: string, options?: OperationOptions): Promise<LoadedRuntime | null>;
  /** Writes the runtime if it is still at `etag`; `conflict` (nothing written) otherwise. */
  save(runtime: WorkflowRuntime, etag: string, options?: OperationOptions): Promise<{ etag: string }>;
  getWorkflow(workflowId: string, options?: OperationOptions): Promise<WorkflowSummary | null>;
  listWorkflows(filter?: WorkflowFilter): Promise<Page<WorkflowSummary>>;
  listTasks(filter?: TaskFilter): Promise<Page<TaskRow>>;
  /** Records a cancel request's timestamp on the index row, touching nothing else. */
  requestCancel(workflowId: string, at: string, options?: OperationOptions): Promise<void>;
  /** Records a retry request's timestamp on the index row, touching nothing else. */
  requestRetry(workflowId: string, at: string, options?: OperationOptions): Promise<void>;
  /** Takes the coordinator lease; `lease-held` while someone else has it. */
  acquireLease(options?: AcquireLeaseOptions): Promise<CoordinatorLease>;
}
