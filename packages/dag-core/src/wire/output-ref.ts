import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isPositiveSafeInteger, parseJson } from './internal';

/**
 * The largest inline output (UTF-8 bytes of the JSON text) a worker puts directly in an
 * `output_ref`; bigger outputs go to a blob. 32 KiB.
 *
 * Note: an inline output travels JSON-escaped inside the completion body, which is itself a
 * string inside the envelope's `kwargs` string, so each `"` in it costs up to 8 bytes on the
 * wire. Staying under this limit does not by itself keep a completion message under a queue's
 * limit: measure the encoded message (see `messageByteLength`).
 */
export const INLINE_OUTPUT_MAX_BYTES = 32768;

/**
 * The largest inline output (UTF-8 bytes) a worker may fall back to when uploading the output
 * blob failed: 500 KiB (512 000 bytes).
 */
export const INLINE_FALLBACK_MAX_BYTES = 512000;

/** The prefix of a blob `output_ref`: `blob:{container}/{path}[:{md5}]`. */
export const BLOB_REF_PREFIX = 'blob:';

/**
 * A parsed `output_ref`:
 * - `inline`: the ref is JSON text (the output itself); `json` is that text, unchanged;
 * - `blob`: `blob:{container}/{path}` with an optional `:{md5}` (base64 Content-MD5) suffix;
 * - `unknown`: anything else, kept in `raw`.
 */
export type OutputRef =
  | { kind: 'inline'; json: string }
  | { kind: 'blob'; container: string; path: string; md5: string | null }
  | { kind: 'unknown'; raw: string };

/** A blob address: a container and a path inside it. */
export interface BlobLocation {
  container: string;
  path: string;
}

const CONTAINER_NAME = /^[a-z0-9-]{3,63}$/;
// 16 bytes in base64: 21 free characters, a 22nd whose low 4 bits are zero, then "==".
const BASE64_MD5 = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

/** True for a container name of 3–63 characters, each a lowercase ASCII letter, digit or hyphen. */
export function isValidContainerName(name: unknown): name is string {
  return typeof name === 'string' && CONTAINER_NAME.test(name);
}

/**
 * True when `text` is the base64 form of a 16-byte MD5 digest (24 characters ending in `==`,
 * as in a blob's Content-MD5). Such text may contain `/` and `+`.
 */
export function isBase64Md5(text: unknown): text is string {
  return typeof text === 'string' && BASE64_MD5.test(text);
}

/**
 * The folder of every task output blob in the outputs container. Stashed files live under
 * `workflow-files/`: no workflow id or task name can make a path of one reach the other.
 */
export const OUTPUT_BLOB_PREFIX = 'outputs/';

/** An attempt number as it appears in a blob path: decimal, no sign, no leading zero. */
const ATTEMPT_TEXT = /^[1-9][0-9]*$/;

/** The attempt number written as `text` by {@link canonicalOutputBlobPath}, or null. */
export function parseAttemptText(text: string): number | null {
  if (!ATTEMPT_TEXT.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * The canonical path of the output blob of one task attempt inside the outputs container:
 * `outputs/{workflow_id}/{task_name}/{attempt_no}.json`. A task name may contain `/`; the path is
 * still unambiguous, since a workflow id has no `/` and the last `/` splits the task name from the
 * attempt. Each attempt has its own blob, written once and never replaced.
 *
 * @throws RangeError when the workflow id, task name or attempt number is invalid.
 */
export function canonicalOutputBlobPath(workflowId: string, taskName: string, attemptNo: number): string {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`output ref: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidTaskName(taskName)) {
    throw new RangeError(`output ref: invalid task name ${describeValue(taskName)}`);
  }
  if (!isPositiveSafeInteger(attemptNo)) {
    throw new RangeError(`output ref: attempt number must be an integer ≥ 1, got ${describeValue(attemptNo)}`);
  }
  return `${OUTPUT_BLOB_PREFIX}${workflowId}/${taskName}/${attemptNo}.json`;
}

/** What a canonical output path names (see {@link canonicalOutputBlobPath}). */
export interface CanonicalOutputPath {
  workflowId: string;
  taskName: string;
  attemptNo: number;
}

/**
 * Reads a path built by {@link canonicalOutputBlobPath} back into its parts; null for any other
 * path. `canonicalOutputBlobPath(parts…)` gives `path` back exactly. Never throws.
 */
export function parseCanonicalOutputPath(path: string): CanonicalOutputPath | null {
  if (typeof path !== 'string' || !path.startsWith(OUTPUT_BLOB_PREFIX) || !path.endsWith('.json')) return null;
  const rest = path.slice(OUTPUT_BLOB_PREFIX.length, -'.json'.length);
  const firstSlash = rest.indexOf('/');
  const lastSlash = rest.lastIndexOf('/');
  if (firstSlash < 0 || lastSlash === firstSlash) return null;
  const workflowId = rest.slice(0, firstSlash);
  const taskName = rest.slice(firstSlash + 1, lastSlash);
  const attemptNo = parseAttemptText(rest.slice(lastSlash + 1));
  if (!isValidWorkflowId(workflowId) || !isValidTaskName(taskName) || attemptNo === null) return null;
  return { workflowId, taskName, attemptNo };
}

/**
 * The path where outputs were kept before they were keyed by attempt, `{workflow_id}/{task_name}.json`
 * (every attempt wrote the same blob). Refs to it are still read; nothing is written there any more.
 *
 * @throws RangeError when the workflow id or task name is invalid.
 */
export function legacyOutputBlobPath(workflowId: string, taskName: string): string {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`output ref: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidTaskName(taskName)) {
    throw new RangeError(`output ref: invalid task name ${describeValue(taskName)}`);
  }
  return `${workflowId}/${taskName}.json`;
}

/**
 * Builds a blob `output_ref`: `blob:{container}/{path}:{md5}`, or `blob:{container}/{path}`
 * when `md5` is absent or null.
 *
 * @throws RangeError when the container name is invalid, the path is empty, `md5` is given but
 *   is not a base64 MD5, or `md5` is absent and the path itself ends in `:{base64 md5}` (such a
 *   ref would read back as having an md5; pass the md5 or choose another path).
 */
export function blobOutputRef(container: string, path: string, md5?: string | null): string {
  if (!isValidContainerName(container)) {
    throw new RangeError(`output ref: invalid container name ${describeValue(container)}`);
  }
  if (typeof path !== 'string' || path.length === 0) {
    throw new RangeError('output ref: blob path must be a non-empty string');
  }
  if (md5 === undefined || md5 === null) {
    const colon = path.lastIndexOf(':');
    if (colon >= 0 && isBase64Md5(path.slice(colon + 1))) {
      throw new RangeError('output ref: a blob path ending in ":{base64 md5}" needs an explicit md5');
    }
    return `${BLOB_REF_PREFIX}${container}/${path}`;
  }
  if (!isBase64Md5(md5)) {
    throw new RangeError(`output ref: md5 must be a base64 MD5 digest (24 characters ending in "=="), got ${describeValue(md5)}`);
  }
  return `${BLOB_REF_PREFIX}${container}/${path}:${md5}`;
}

/**
 * Splits `{container}/{path}` at the first `/`. Returns null unless the container name is valid
 * and the path is non-empty.
 */
export function parseBlobLocation(text: string): BlobLocation | null {
  if (typeof text !== 'string') return null;
  const slash = text.indexOf('/');
  if (slash < 0) return null;
  const container = text.slice(0, slash);
  const path = text.slice(slash + 1);
  if (!isValidContainerName(container) || path.length === 0) return null;
  return { container, path };
}

/**
 * Classifies an `output_ref`. Never throws.
 *
 * - text starting with `blob:` is a blob ref when it has the form `blob:{container}/{path}` with
 *   an optional md5: the text after the LAST `:` is taken as the md5 only if it is a base64 MD5
 *   (24 characters ending in `==`); otherwise the whole rest is `{container}/{path}` (so paths may
 *   contain `:`); a malformed `blob:` text is `unknown`;
 * - otherwise text that `JSON.parse` accepts is `inline`;
 * - anything else is `unknown`.
 */
export function parseOutputRef(ref: string): OutputRef {
  if (typeof ref !== 'string') return { kind: 'unknown', raw: '' };
  if (ref.startsWith(BLOB_REF_PREFIX)) {
    let rest = ref.slice(BLOB_REF_PREFIX.length);
    let md5: string | null = null;
    const colon = rest.lastIndexOf(':');
    if (colon >= 0) {
      const tail = rest.slice(colon + 1);
      if (isBase64Md5(tail)) {
        md5 = tail;
        rest = rest.slice(0, colon);
      }
    }
    const location = parseBlobLocation(rest);
    if (location === null) return { kind: 'unknown', raw: ref };
    return { kind: 'blob', container: location.container, path: location.path, md5 };
  }
  if (parseJson(ref).ok) return { kind: 'inline', json: ref };
  return { kind: 'unknown', raw: ref };
}

/**
 * The attempt number of `ref` when it is a blob ref (with or without md5) to the canonical output
 * path of (`workflowId`, `taskName`) for some attempt, in `container` when given; null otherwise.
 * Never throws.
 */
export function canonicalOutputAttempt(ref: string, workflowId: string, taskName: string, container?: string): number | null {
  const parsed = parseOutputRef(ref);
  if (parsed.kind !== 'blob') return null;
  if (container !== undefined && parsed.container !== container) return null;
  const path = parseCanonicalOutputPath(parsed.path);
  if (path === null || path.workflowId !== workflowId || path.taskName !== taskName) return null;
  return path.attemptNo;
}

/**
 * True when `ref` is a blob ref to the canonical output path of (`workflowId`, `taskName`) for any
 * attempt, with or without md5, and, when `container` is given, in that container. Refs to the
 * legacy path `{workflow_id}/{task}.json` are not canonical. Never throws.
 */
export function isCanonicalOutputRef(ref: string, workflowId: string, taskName: string, container?: string): boolean {
  return canonicalOutputAttempt(ref, workflowId, taskName, container) !== null;
}

/**
 * Parses an inline `output_ref` into its value. Never throws: a blob ref or text that is not
 * JSON gives an error starting with `output ref:`.
 */
export function decodeInlineOutput(ref: string): DecodeResult<unknown> {
  if (typeof ref !== 'string') {
    return decodeError(`output ref: expected a string, got ${describeValue(ref)}`);
  }
  if (ref.startsWith(BLOB_REF_PREFIX)) {
    return decodeError('output ref: is a blob ref, not inline JSON');
  }
  const parsed = parseJson(ref);
  if (!parsed.ok) return decodeError(`output ref: not valid inline JSON (${parsed.error})`);
  return decodeOk(parsed.value);
}
