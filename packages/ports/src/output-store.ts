import type { StashMarker } from '@jobq/dag-core';
import type { OperationOptions } from './task-queue';

/**
 * @experimental Task outputs and stashed files (SPEC §5.4). The Azure adapter and its contract
 * suite arrive with `@jobq/store-azure`.
 */
export interface OutputStore {
  /** Stores an output (JSON text) and returns its `output_ref`: inline when small, else a canonical blob ref. */
  putOutput(workflowId: string, taskName: string, json: string, options?: OperationOptions): Promise<string>;
  /** Reads an output ref back as a JSON value, verifying a blob's md5 (`corrupt` on mismatch). */
  getOutput(outputRef: string, options?: OperationOptions): Promise<unknown>;
  /** Uploads a file to `workflow-files/{workflow_id}/{task}/{filename}` and returns its marker. */
  putFile(workflowId: string, taskName: string, filename: string, data: Uint8Array, options?: OperationOptions): Promise<StashMarker>;
  /** Downloads a stashed file, verifying md5 and size. */
  getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array>;
}
