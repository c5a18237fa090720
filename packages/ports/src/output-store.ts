import type { CompactUpstreamRefs, StashMarker } from '@jobq/dag-core/wire';
import type { TaskLogStore } from './task-log';
import type { OperationOptions } from './task-queue';

/**
 * Where {@link OutputStore.putOutput} put an output:
 * - `none`: the output was empty (no output); the ref is null;
 * - `inline`: small enough to travel in the completion (≤ 32 KiB, or what
 *   {@link PutOutputOptions.fitsInline} accepts); the ref is the JSON text itself;
 * - `blob`: in the canonical blob of the attempt; the ref is `blob:{container}/{path}:{md5}`;
 * - `inline-fallback`: not small enough, but the upload failed after its attempts and the output
 *   may still travel inline (≤ 500 KiB, or what `fitsInline` accepts), so the ref is the JSON text
 *   and {@link PutOutputResult.warning} says why.
 */
export type OutputPlacement = 'none' | 'inline' | 'blob' | 'inline-fallback';

/** Options of {@link OutputStore.putOutput}. */
export interface PutOutputOptions extends OperationOptions {
  /**
   * Whether the output (its JSON text) may travel inline in the completion. When given, it
   * replaces the 32 KiB rule (e.g. the worker's "≤ 32 KiB and the encoded completion message fits
   * the completion queue"), and it is also the only test of the inline fallback after a failed
   * upload: an output it refuses is never sent inline (the 500 KiB fallback rule applies only
   * without it).
   */
  fitsInline?: (json: string) => boolean;
}

/** What {@link OutputStore.putOutput} did. */
export interface PutOutputResult {
  /** The `output_ref` for the completion (docs/design.md#completion-and-wake-up-messages); null when there is no output. */
  ref: string | null;
  placement: OutputPlacement;
  /**
   * Size of the output text in UTF-8 bytes (0 for no output); for an adopted blob (see
   * {@link adopted}), the size of that blob.
   */
  bytes: number;
  /**
   * Set (true) only for `blob`, when the blob of this attempt was already there: another delivery
   * of the same attempt (or an earlier try of this call whose answer was lost) wrote it first. The
   * ref then names that blob, with its md5, and this call's output is dropped, so every completion
   * of one attempt names the same, unchanging bytes.
   */
  adopted?: boolean;
  /**
   * Set only for `inline-fallback`: one line saying which upload failed and why, for the worker's
   * log. Never contains a key or SAS.
   */
  warning?: string;
}

/**
 * Task outputs, stashed files and upstream overflow blobs (docs/design.md#task-message, docs/design.md#outputs). Every failure is a
 * `JobqError`: `invalid-argument` for bad input or a ref the store may not follow, `not-found`
 * for a missing blob, `corrupt` when stored data fails its md5/size check or cannot be decoded,
 * and the transport codes (`unavailable`, `timeout`, `throttled`, `auth`, `aborted`) otherwise.
 */
export interface OutputStore extends TaskLogStore {
  /**
   * The container of the outputs target (`JOBQ_WORKFLOW_BLOBS`'s container, else `{p}-outputs`):
   * what canonical refs name, and what `compactUpstreamRefs`/`expandUpstreamRefs` need.
   */
  readonly outputsContainer: string;

  /**
   * Stores the output of one task attempt, given as the JSON text its script wrote (docs/design.md#outputs),
   * and returns its `output_ref`:
   * - empty (or whitespace-only) text → no output: `{ ref: null, placement: 'none' }`;
   * - text that is not JSON → `invalid-argument` carrying the parser's message;
   * - ≤ 32 768 UTF-8 bytes (or accepted by `options.fitsInline`) → inline: the ref is the text, unchanged;
   * - otherwise → uploaded with its Content-MD5 to `outputs/{workflow_id}/{task}/{attempt}.json` in
   *   the outputs target, retried with back-off; the ref is
   *   `blob:{container}/outputs/{workflow_id}/{task}/{attempt}.json:{md5}`. The blob is created
   *   once and never replaced: when it is already there (another delivery of the same attempt
   *   wrote it first), its ref, with the md5 it was stored with, is returned (`adopted`), so
   *   every completion of an attempt names the same bytes;
   * - upload failed after its attempts: when the output may still travel inline (`fitsInline`
   *   when given, else ≤ 512 000 bytes) → inline with a `warning`; otherwise a `JobqError` saying
   *   the size, that the upload failed and why it cannot be sent inline. An output is never
   *   silently dropped.
   */
  putOutput(workflowId: string, taskName: string, attemptNo: number, json: string, options?: PutOutputOptions): Promise<PutOutputResult>;

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
   * Uploads bytes stashed by one task attempt to
   * `workflow-files/{workflow_id}/{task}/{attempt}/{filename}` in the outputs target with their
   * Content-MD5 and returns the marker (docs/design.md#outputs). `filename` must be a plain file name (no `/`,
   * `\`, control characters; not `.` or `..`), else `invalid-argument`. Stashing the same name
   * again in the same attempt replaces the file (the marker's md5 and size tell the versions apart).
   */
  putFile(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    data: Uint8Array,
    options?: OperationOptions,
  ): Promise<StashMarker>;

  /**
   * Like {@link putFile}, streaming a local file (for big files). The file must not change while
   * it is stashed (a change of size or modification time is `invalid-argument`).
   */
  putFileFromPath(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    path: string,
    options?: OperationOptions,
  ): Promise<StashMarker>;

  /** Downloads a stashed file; its size and md5 are checked against the marker (`corrupt` otherwise). */
  getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array>;

  /**
   * Streams a stashed file to a temporary file next to `destPath`, checks size and md5, then
   * renames it to `destPath`. On any failure the temporary file is removed and `destPath` is left
   * as it was: never a half-written file.
   */
  downloadFileTo(marker: StashMarker, destPath: string, options?: OperationOptions): Promise<void>;

  /**
   * Writes the compact upstream refs of one task attempt to its overflow blob (docs/design.md#task-message,
   * `upstream/{workflow_id}/{task}/{attempt}.json` in the state container) and returns the
   * `"<container>/<path>"` location for `__upstream_outputs_blob`.
   */
  putUpstreamOverflow(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    compact: CompactUpstreamRefs,
    options?: OperationOptions,
  ): Promise<string>;

  /**
   * Deletes every output blob, stashed file and task log of a workflow from the outputs target:
   * the blobs under `outputs/{workflow_id}/`, `workflow-files/{workflow_id}/` and
   * `workflow-logs/{workflow_id}/` (and under the same folders of the deployment's default outputs
   * container when the target is elsewhere). Only whole `{workflow_id}/` folders: workflow `a`
   * never touches `a.b`'s blobs. Returns how many blobs were deleted (0 when there were none);
   * `invalid-argument` for an id that is not a workflow id. Used to purge finished workflows.
   */
  deleteWorkflowOutputs(workflowId: string, options?: OperationOptions): Promise<number>;

  /**
   * Reads an overflow blob by its location. A location outside the state container is
   * `invalid-argument`; content that does not decode (or fails its md5) is `corrupt`.
   */
  getUpstreamOverflow(location: string, options?: OperationOptions): Promise<CompactUpstreamRefs>;
}
