import type { OperationOptions, OutputStore, PurgeResult, WorkflowStore, WorkflowSummary } from '@jobq/ports';

/** Options of {@link purgeWorkflow}. */
export interface PurgeWorkflowOptions extends OperationOptions {
  /** Check and report only; delete nothing. */
  dryRun?: boolean;
  /** Purge only a workflow that finished before this ISO-8601 time (re-checked on its runtime). */
  finishedBefore?: string;
}

/** What {@link purgeWorkflow} did: the store's result, and the output blobs it deleted. */
export interface WorkflowPurge extends PurgeResult {
  /** Blobs deleted from the outputs target (outputs, stashed files, task logs). */
  outputBlobs: number;
}

/**
 * Purges one finished workflow everywhere: the store re-checks it (finished, no retry waiting,
 * finished before the cutoff) and deletes its runtime first; its outputs go before its index row,
 * so a purge that fails half-way leaves it listed for the next one to finish. Never touches a
 * workflow that is not finished (`skipped`, with the reason).
 */
export async function purgeWorkflow(
  store: WorkflowStore,
  outputs: OutputStore,
  workflowId: string,
  options: PurgeWorkflowOptions = {},
): Promise<WorkflowPurge> {
  const op: OperationOptions = options.abortSignal ? { abortSignal: options.abortSignal } : {};
  let outputBlobs = 0;
  const result = await store.purge(workflowId, {
    ...op,
    ...(options.dryRun ? { dryRun: true } : {}),
    ...(options.finishedBefore !== undefined ? { finishedBefore: options.finishedBefore } : {}),
    beforeIndexRow: async () => {
      outputBlobs = await outputs.deleteWorkflowOutputs(workflowId, op);
    },
  });
  return { ...result, outputBlobs };
}

/**
 * The workflows whose last save is final (completed, failed, cancelled, corrupt) and that finished
 * before `cutoff` (ISO-8601), page by page: a server-side query of the index, never a full read.
 * Rows may change between pages; {@link purgeWorkflow} re-checks each one.
 */
export async function* finishedWorkflows(
  store: WorkflowStore,
  cutoff: string,
  options: OperationOptions & { pageSize?: number } = {},
): AsyncGenerator<WorkflowSummary> {
  let continuationToken: string | undefined;
  do {
    const page = await store.listWorkflows({
      finishedBefore: cutoff,
      limit: options.pageSize ?? 1_000,
      ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
      ...(continuationToken === undefined ? {} : { continuationToken }),
    });
    for (const item of page.items) yield item;
    continuationToken = page.continuationToken ?? undefined;
  } while (continuationToken !== undefined);
}
