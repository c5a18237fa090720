import type { CompactUpstreamRefs, StashMarker } from '@jobq/dag-core';
import type { OperationOptions } from './task-queue';

/**
 * Where {@link OutputStore.putOutput} put an output:
 * - `none`: the output was empty (no output); the ref is null;
 * - `inline`: ≤ 32 KiB, the ref is the JSON text itself;
 * - `blob`: > 32 KiB, uploaded to the canonical blob; the ref is `blob:{container}/{path}:{md5}`;
 * - `inline-fallback`: > 32 KiB but the upload failed after its attempts; ≤ 500 KiB, so the ref is
 *   the JSON text and {@link PutOutputResult.warning} says why.
 */
export type OutputPlacement = 'none' | 'inline' | 'blob' | 'inline-fallback';

/** What {@link OutputStore.putOutput} did. */
export interface PutOutputResult {
  /** The `output_ref` for the completion (SPEC §5.3); null when there is no output. */
  ref: string | null;
  placement: OutputPlacement;
  /** Size of the output text in UTF-8 bytes (0 for no output). */
  bytes: number;
  /**
   * Set only for `inline-fallback`: one line saying which upload failed and why, for the worker's
   * log. Never contains a key or SAS.
   */
  warning?: string;
}

/**
 * Task outputs, stashed files and upstream overflow blobs (SPEC §5.2, §5.4). Every failure is a
 * `JobqError`: `invalid-argument` for bad input or a ref the store may not follow, `not-found`
 * for a missing blob, `corrupt` when stored data fails its md5/size check or cannot be decoded,
 * and the transport codes (`unavailable`, `timeout`, `throttled`, `auth`, `aborted`) otherwise.
 */
export interface OutputStore {
  /**
   * The container of the outputs target (`JOBQ_WORKFLOW_BLOBS`'s container, else `{p}-outputs`):
   * what canonical refs name, and what `compactUpstreamRefs`/`expandUpstreamRefs` need.
   */
  readonly outputsContainer: string;

  /**
   * Stores a task's output, given as the JSON text its script wrote (SPEC §5.4), and returns its
   * `output_ref`:
   * - empty (or whitespace-only) text → no output: `{ ref: null, placement: 'none' }`;
   * - text that is not JSON → `invalid-argument` carrying the parser's message;
   * - ≤ 32 768 UTF-8 bytes → inline: the ref is the text, unchanged;
   * - larger → uploaded to `{workflow_id}/{task}.json` in the outputs target with its Content-MD5,
   *   retried with back-off; the ref is `blob:{container}/{workflow_id}/{task}.json:{md5}`;
   * - upload failed after its attempts: ≤ 512 000 bytes → inline with a `warning`; larger → a
   *   `JobqError` saying the size, that the upload failed and that the inline limit is 500 KiB.
   *   An output is never silently dropped.
   */
  putOutput(workflowId: string, taskName: string, json: string, options?: OperationOptions): Promise<PutOutputResult>;

  /**
   * Reads an `output_ref` back as a JSON value (null for a null ref). Inline refs are parsed; blob
   * refs are downloaded and verified: the blob's stored Content-MD5 must equal the ref's md5 (when
   * the ref has one) and the md5 of the downloaded bytes (`corrupt` otherwise; a blob without a
   * stored Content-MD5 is `corrupt` when the ref has no md5 either). Only the store's own
   * containers are followed (the outputs target and the deployment's state containers); a ref
   * naming any other container, or of an unknown form, is `invalid-argument`.
   */
  getOutput(outputRef: string | null, options?: OperationOptions): Promise<unknown>;

  /**
   * Uploads bytes to `workflow-files/{workflow_id}/{task}/{filename}` in the outputs target with
   * their Content-MD5 and returns the marker (SPEC §5.4). `filename` must be a plain file name
   * (no `/`, `\`, control characters; not `.` or `..`), else `invalid-argument`.
   */
  putFile(workflowId: string, taskName: string, filename: string, data: Uint8Array, options?: OperationOptions): Promise<StashMarker>;

  /**
   * Like {@link putFile}, streaming a local file (for big files). The file must not change while
   * it is stashed (a change of size or modification time is `invalid-argument`).
   */
  putFileFromPath(workflowId: string, taskName: string, filename: string, path: string, options?: OperationOptions): Promise<StashMarker>;

  /** Downloads a stashed file; its size and md5 are checked against the marker (`corrupt` otherwise). */
  getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array>;

  /**
   * Streams a stashed file to a temporary file next to `destPath`, checks size and md5, then
   * renames it to `destPath`. On any failure the temporary file is removed and `destPath` is left
   * as it was: never a half-written file.
   */
  downloadFileTo(marker: StashMarker, destPath: string, options?: OperationOptions): Promise<void>;

  /**
   * Writes the compact upstream refs of one task attempt to its overflow blob (SPEC §5.2,
   * `upstream/{workflow_id}/{task}/{attempt}.json` in the state container) and returns the
   * `"<container>/<path>"` location for `__upstream_outputs_blob`.
   */
  putUpstreamOverflow(workflowId: string, taskName: string, attemptNo: number, compact: CompactUpstreamRefs, options?: OperationOptions): Promise<string>;

  /**
   * Reads an overflow blob by its location. A location outside the state container is
   * `invalid-argument`; content that does not decode (or fails its md5) is `corrupt`.
   */
  getUpstreamOverflow(location: string, options?: OperationOptions): Promise<CompactUpstreamRefs>;
}
