import { isTerminalWorkflowStatus, isValidWorkflowId, taskCount, type WorkflowStatus } from '@jobq/dag-core';
import {
  JobqError,
  isJobqError,
  type LoadedRuntime,
  type OperationOptions,
  type PurgeOptions,
  type PurgeResult,
  type RerunRequest,
  type WorkflowSummary,
} from '@jobq/ports';
import { compareTimes, isLater } from './index-table';

/**
 * What {@link purgeWorkflow} needs from the store: reads for the re-check and one delete per kind
 * of thing a workflow keeps. The store provides them (see `AzureWorkflowStore.purge`); a new kind
 * of per-workflow blob is added to `deleteWorkflowBlobs`, a new form of runtime to `deleteRuntime`.
 */
export interface PurgeParts {
  readIndexRow(workflowId: string, options: OperationOptions | undefined): Promise<WorkflowSummary | null>;
  /** The runtime, null when there is none; a `corrupt` JobqError when it cannot be read. */
  load(workflowId: string, options: OperationOptions | undefined): Promise<LoadedRuntime | null>;
  /**
   * Deletes the runtime if it is still at `etag` (the ETag `load` gave; null for a runtime that
   * could not be read: then as it is now). `changed` when it moved on since, `gone` when it was
   * not there. After `deleted` no save of the workflow can succeed.
   */
  deleteRuntime(workflowId: string, etag: string | null, options: OperationOptions | undefined): Promise<'deleted' | 'changed' | 'gone'>;
  /** Every other blob of the workflow in the store's containers; returns how many were deleted. */
  deleteWorkflowBlobs(workflowId: string, options: OperationOptions | undefined): Promise<number>;
  /** Every task row; returns how many were deleted. */
  deleteTaskRows(workflowId: string, options: OperationOptions | undefined): Promise<number>;
  deleteRequestRow(workflowId: string, options: OperationOptions | undefined): Promise<void>;
  /** Every re-run request of the workflow. */
  listReruns(workflowId: string, options: OperationOptions | undefined): Promise<RerunRequest[]>;
  deleteRerunRow(workflowId: string, requestId: string, options: OperationOptions | undefined): Promise<void>;
  deleteIndexRow(workflowId: string, options: OperationOptions | undefined): Promise<void>;
}

/** The re-check's verdict: what the decision was made on, and why not (null: go ahead). */
interface Verdict {
  status: WorkflowStatus;
  finishedAt: string | null;
  updatedAt: string;
  /** The ETag to delete the runtime at; undefined when there is no runtime left (an earlier purge began). */
  etag: string | null | undefined;
  taskRows: number;
  reason: string | null;
}

function checkTime(at: string | undefined, what: string): void {
  if (at !== undefined && (typeof at !== 'string' || !Number.isFinite(Date.parse(at))))
    throw new JobqError('invalid-argument', `${what} must be an ISO-8601 timestamp`);
}

/** True when a retry request on the index row is newer than the one the runtime applied (`applied`). */
function retryWaits(summary: WorkflowSummary, applied: string | null): boolean {
  const requested = summary.retryRequestedAt;
  return requested !== null && (applied === null || isLater(requested, applied));
}

/**
 * Decides from the index row and the runtime (the truth) whether the workflow may go: finished
 * (its runtime's status is final, or its index row set it aside as corrupt), no retry or re-run
 * waiting, finished before the cutoff.
 */
async function recheck(parts: PurgeParts, workflowId: string, summary: WorkflowSummary, options: PurgeOptions): Promise<Verdict> {
  let loaded: LoadedRuntime | null = null;
  let unreadable: JobqError | null = null;
  try {
    loaded = await parts.load(workflowId, options);
  } catch (error) {
    if (!isJobqError(error, 'corrupt')) throw error;
    unreadable = error;
  }
  const setAside = summary.status === 'corrupt';
  const verdict: Verdict = {
    status: summary.status,
    finishedAt: summary.finishedAt,
    updatedAt: summary.updatedAt,
    etag: undefined,
    taskRows: Object.values(summary.counts).reduce((a, b) => a + b, 0),
    reason: null,
  };
  if (loaded !== null) {
    const runtime = loaded.runtime;
    Object.assign(verdict, {
      status: setAside ? 'corrupt' : runtime.status,
      etag: loaded.etag,
      taskRows: taskCount(runtime),
      updatedAt: runtime.updatedAt,
    });
    if (runtime.finishedAt !== null || !setAside) verdict.finishedAt = runtime.finishedAt;
    if (!setAside && !isTerminalWorkflowStatus(runtime.status)) verdict.reason = `it is not finished: its runtime is ${runtime.status}`;
    else if (!setAside && retryWaits(summary, runtime.retryAppliedAt))
      verdict.reason = `a retry was requested at ${summary.retryRequestedAt} and is not applied yet`;
    else if (!setAside) {
      const applied = new Set((runtime.rerunsApplied ?? []).map((a) => a.id));
      const waiting = (await parts.listReruns(workflowId, options)).find((r) => !applied.has(r.requestId));
      if (waiting !== undefined)
        verdict.reason = `a re-run of task "${waiting.taskName}" was requested at ${waiting.requestedAt} and is not applied yet`;
    }
  } else if (unreadable !== null) {
    verdict.etag = null;
    if (!setAside)
      verdict.reason = `its runtime cannot be read and the coordinator has not set it aside as corrupt (index status ${summary.status}): ${unreadable.message}`;
  } else if (summary.status === 'pending' || !isTerminalWorkflowStatus(summary.status)) {
    // No runtime left: a purge began and stopped half-way, if the index row says it was finished.
    verdict.reason = `it has no runtime and its index row says ${summary.status}: not a finished workflow`;
  }
  if (verdict.reason === null && options.finishedBefore !== undefined) {
    const finished = verdict.finishedAt ?? verdict.updatedAt;
    if (!(compareTimes(finished, options.finishedBefore) < 0))
      verdict.reason = `it finished at ${finished}, not before ${options.finishedBefore}`;
  }
  return verdict;
}

/**
 * The purge of one workflow (see `WorkflowStore.purge`): re-check, then delete the runtime (only
 * if it is the one checked: the point after which no save can bring the workflow back), the other
 * blobs, what the caller keeps elsewhere (`beforeIndexRow`), the task rows, the request row and
 * the re-run rows, and the index row last.
 */
export async function purgeWorkflow(parts: PurgeParts, workflowId: string, options: PurgeOptions = {}): Promise<PurgeResult> {
  if (!isValidWorkflowId(workflowId))
    throw new JobqError('invalid-argument', 'a workflow id is 1–128 letters, digits, ".", "_" and "-", starting with a letter or digit');
  checkTime(options.finishedBefore, 'finishedBefore');
  const summary = await parts.readIndexRow(workflowId, options);
  if (summary === null) return { workflowId, outcome: 'not-found', status: null, finishedAt: null, reason: null, blobs: 0, taskRows: 0 };
  const verdict = await recheck(parts, workflowId, summary, options);
  const result = (outcome: PurgeResult['outcome'], extra: Partial<PurgeResult> = {}): PurgeResult => ({
    workflowId,
    outcome,
    status: verdict.status,
    finishedAt: verdict.finishedAt,
    reason: null,
    blobs: 0,
    taskRows: 0,
    ...extra,
  });
  if (verdict.reason !== null) return result('skipped', { reason: verdict.reason });
  if (options.dryRun) return result('would-purge', { taskRows: verdict.taskRows });
  let runtimeBlobs = 0;
  if (verdict.etag !== undefined) {
    const deleted = await parts.deleteRuntime(workflowId, verdict.etag, options);
    if (deleted === 'changed')
      return result('skipped', { reason: 'it changed while being purged (a save since it was checked): left as it is' });
    if (deleted === 'deleted') runtimeBlobs = 1;
  }
  const blobs = runtimeBlobs + (await parts.deleteWorkflowBlobs(workflowId, options));
  await options.beforeIndexRow?.();
  const taskRows = await parts.deleteTaskRows(workflowId, options);
  await parts.deleteRequestRow(workflowId, options);
  for (const rerun of await parts.listReruns(workflowId, options)) await parts.deleteRerunRow(workflowId, rerun.requestId, options);
  await parts.deleteIndexRow(workflowId, options);
  return result('purged', { blobs, taskRows });
}
