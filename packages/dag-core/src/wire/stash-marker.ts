import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isNonNegativeSafeInteger, isPlainObject, isPositiveSafeInteger } from './internal';
import { isBase64Md5 } from './output-ref';

/** The key that marks a stashed-file reference in a task output. */
export const STASH_MARKER_KEY = '__jobq_stash__';

/**
 * The blob-name prefix of stashed files: `workflow-files/{workflow_id}/{task}/{attempt}/{filename}`
 * (markers written before files were keyed by attempt name `workflow-files/{workflow_id}/{task}/{filename}`).
 */
export const STASH_BLOB_PREFIX = 'workflow-files/';

/** A file-stash marker, decoded (camelCase). */
export interface StashMarker {
  /** The blob name, `workflow-files/{workflow_id}/{task}/{attempt}/{filename}` (older markers: without `{attempt}/`). */
  blobName: string;
  /** The base64 Content-MD5 of the blob. */
  md5: string;
  /** The blob size in bytes. */
  size: number;
}

/**
 * A file-stash marker as it appears in output JSON:
 * `{"__jobq_stash__":{"v":1,"state":"ready","blob_name":"…","md5":"…","size":N}}`.
 */
export interface StashMarkerJson {
  __jobq_stash__: { v: 1; state: 'ready'; blob_name: string; md5: string; size: number };
}

/** One marker found by {@link findStashMarkers}: `key` is null for a top-level marker. */
export interface FoundStashMarker {
  key: string | null;
  marker: StashMarker;
}

/**
 * True for a plain file name: non-empty, not `.` or `..`, and free of `/`, `\` and control
 * characters (U+0000–U+001F, U+007F).
 */
export function isPlainFileName(filename: unknown): filename is string {
  return (
    typeof filename === 'string' &&
    filename.length > 0 &&
    filename !== '.' &&
    filename !== '..' &&
    // eslint-disable-next-line no-control-regex
    !/[/\\\u0000-\u001f\u007f]/.test(filename)
  );
}

/**
 * The blob name of a file stashed by one task attempt:
 * `workflow-files/{workflow_id}/{task_name}/{attempt_no}/{filename}`. The name is unambiguous (a
 * workflow id has no `/`, a file name has none either, and the segment before it is the attempt),
 * and it lives beside, never inside, the `outputs/` folder of output blobs. Returns an error (never
 * throws) when the filename is not a plain file name (see {@link isPlainFileName}), the workflow
 * id is invalid, the task name empty or the attempt number not an integer ≥ 1.
 */
export function stashBlobName(workflowId: string, taskName: string, attemptNo: number, filename: string): DecodeResult<string> {
  if (!isValidWorkflowId(workflowId)) {
    return decodeError(`stash: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidTaskName(taskName)) {
    return decodeError(`stash: task name must be a non-empty string, got ${describeValue(taskName)}`);
  }
  if (!isPositiveSafeInteger(attemptNo)) {
    return decodeError(`stash: attempt number must be an integer ≥ 1, got ${describeValue(attemptNo)}`);
  }
  if (!isPlainFileName(filename)) {
    return decodeError(
      `stash: filename must be a plain file name (non-empty, not "." or "..", no "/", "\\" or control characters), got ${describeValue(filename)}`,
    );
  }
  return decodeOk(`${STASH_BLOB_PREFIX}${workflowId}/${taskName}/${attemptNo}/${filename}`);
}

function validBlobName(blobName: unknown): blobName is string {
  return typeof blobName === 'string' && blobName.startsWith(STASH_BLOB_PREFIX) && blobName.length > STASH_BLOB_PREFIX.length;
}

/**
 * Builds the marker object a worker puts in a task output in place of a stashed file.
 *
 * @throws RangeError when `blobName` does not start with `workflow-files/`, `md5` is not a base64
 *   MD5 (24 characters ending in `==`), or `size` is not an integer ≥ 0.
 */
export function makeStashMarker(marker: StashMarker): StashMarkerJson {
  const { blobName, md5, size } = marker;
  if (!validBlobName(blobName)) {
    throw new RangeError(`stash: blob name must start with "${STASH_BLOB_PREFIX}", got ${describeValue(blobName)}`);
  }
  if (!isBase64Md5(md5)) throw new RangeError(`stash: md5 must be a base64 MD5 digest, got ${describeValue(md5)}`);
  if (!isNonNegativeSafeInteger(size)) throw new RangeError(`stash: size must be an integer ≥ 0, got ${describeValue(size)}`);
  return { [STASH_MARKER_KEY]: { v: 1, state: 'ready', blob_name: blobName, md5, size } };
}

/**
 * True when `value` is an object with an own `__jobq_stash__` key, well-formed or not. Use it to
 * tell a malformed marker (`isStashMarkerLike` true, {@link parseStashMarker} null) from ordinary
 * data.
 */
export function isStashMarkerLike(value: unknown): boolean {
  return isPlainObject(value) && Object.hasOwn(value, STASH_MARKER_KEY);
}

const INNER_KEYS = new Set(['v', 'state', 'blob_name', 'md5', 'size']);

/**
 * Decodes a file-stash marker. Returns null for anything that is not a well-formed version-1
 * "ready" marker: the object must have `__jobq_stash__` as its only key, and the inner object
 * exactly the keys `v` (1), `state` ("ready"), `blob_name` (starting with `workflow-files/`),
 * `md5` (base64 MD5) and `size` (integer ≥ 0). Never throws.
 */
export function parseStashMarker(value: unknown): StashMarker | null {
  if (!isPlainObject(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== STASH_MARKER_KEY) return null;
  const inner = value[STASH_MARKER_KEY];
  if (!isPlainObject(inner)) return null;
  const innerKeys = Object.keys(inner);
  if (innerKeys.length !== INNER_KEYS.size || !innerKeys.every((k) => INNER_KEYS.has(k))) return null;
  const { v, state, blob_name: blobName, md5, size } = inner;
  if (v !== 1 || state !== 'ready') return null;
  if (!validBlobName(blobName) || !isBase64Md5(md5) || !isNonNegativeSafeInteger(size)) return null;
  return { blobName, md5, size };
}

/**
 * Finds the well-formed stash markers in a task output: the output itself (key null), or the
 * direct values of a top-level object's keys (key = that key), in key order. Deeper nesting and
 * array elements are not searched; malformed markers are skipped (see {@link isStashMarkerLike}).
 */
export function findStashMarkers(output: unknown): FoundStashMarker[] {
  const top = parseStashMarker(output);
  if (top !== null) return [{ key: null, marker: top }];
  if (!isPlainObject(output)) return [];
  const found: FoundStashMarker[] = [];
  for (const [key, value] of Object.entries(output)) {
    const marker = parseStashMarker(value);
    if (marker !== null) found.push({ key, marker });
  }
  return found;
}
