import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isPlainObject, isPositiveSafeInteger, parseJson, quoteShort } from './internal';
import { blobOutputRef, canonicalOutputBlobPath, isValidContainerName, parseOutputRef } from './output-ref';

/**
 * The upstream outputs of a task in compact form, as carried in a task message
 * (`__upstream_outputs_compact`) or in an overflow blob. Empty sections are omitted.
 *
 * - `s`: parents whose output is in their canonical blob
 *   (`blob:{outputs container}/{workflow_id}/{parent}.json`);
 * - `i`: parent → output ref text kept verbatim. Normally the inline output JSON; a blob ref that
 *   is not canonical (other container or path) is also kept here unchanged, so nothing is lost;
 * - `n`: parents with no output (succeeded without output, or skipped).
 */
export interface CompactUpstreamRefs {
  s?: string[];
  i?: Record<string, string>;
  n?: string[];
}

/** One parent of a task and its recorded `output_ref` (null: no output). */
export interface UpstreamParent {
  name: string;
  outputRef: string | null;
}

/**
 * Compacts the output refs of a task's parents. A canonical blob ref of (`workflowId`, parent)
 * in `outputsContainer`, with or without md5, goes to `s` (its md5 is dropped: readers verify
 * the blob's stored Content-MD5 instead); null goes to `n`; every other ref (inline JSON, a
 * non-canonical blob ref, or an unrecognised ref) goes to `i` as its exact string. Parent order
 * is kept inside each section.
 *
 * @throws RangeError on an invalid workflow id or container name, an empty or duplicated parent name.
 */
export function compactUpstreamRefs(
  workflowId: string,
  parents: ReadonlyArray<UpstreamParent>,
  outputsContainer: string,
): CompactUpstreamRefs {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`upstream refs: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidContainerName(outputsContainer)) {
    throw new RangeError(`upstream refs: invalid container name ${describeValue(outputsContainer)}`);
  }
  const s: string[] = [];
  const inline: Array<[string, string]> = [];
  const n: string[] = [];
  const seen = new Set<string>();
  for (const { name, outputRef } of parents) {
    if (!isValidTaskName(name)) {
      throw new RangeError(`upstream refs: invalid parent name ${describeValue(name)}`);
    }
    if (seen.has(name)) throw new RangeError(`upstream refs: parent ${quoteShort(name)} is listed twice`);
    seen.add(name);
    if (outputRef === null) {
      n.push(name);
      continue;
    }
    const parsed = parseOutputRef(outputRef);
    if (
      parsed.kind === 'blob' &&
      parsed.container === outputsContainer &&
      parsed.path === canonicalOutputBlobPath(workflowId, name)
    ) {
      s.push(name);
    } else {
      inline.push([name, outputRef]);
    }
  }
  return build(s, inline, n);
}

function build(s: string[], inline: Array<[string, string]>, n: string[]): CompactUpstreamRefs {
  const out: CompactUpstreamRefs = {};
  if (s.length > 0) out.s = s;
  if (inline.length > 0) out.i = Object.fromEntries(inline);
  if (n.length > 0) out.n = n;
  return out;
}

/**
 * Expands compact refs back into parent → output ref. Parents in `s` get the canonical blob ref
 * WITHOUT md5, `blob:{outputsContainer}/{workflow_id}/{parent}.json`; `i` entries are returned
 * verbatim; `n` entries map to null.
 *
 * @throws RangeError on an invalid workflow id or container name.
 */
export function expandUpstreamRefs(
  workflowId: string,
  compact: CompactUpstreamRefs,
  outputsContainer: string,
): Record<string, string | null> {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`upstream refs: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidContainerName(outputsContainer)) {
    throw new RangeError(`upstream refs: invalid container name ${describeValue(outputsContainer)}`);
  }
  const entries: Array<[string, string | null]> = [];
  for (const name of compact.s ?? []) {
    entries.push([name, blobOutputRef(outputsContainer, canonicalOutputBlobPath(workflowId, name))]);
  }
  for (const [name, ref] of Object.entries(compact.i ?? {})) entries.push([name, ref]);
  for (const name of compact.n ?? []) entries.push([name, null]);
  return Object.fromEntries(entries);
}

function decodeNameList(value: unknown, context: string, key: 's' | 'n', seen: Set<string>): DecodeResult<string[]> {
  if (!Array.isArray(value)) {
    return decodeError(`${context}: "${key}" must be an array of parent names, got ${describeValue(value)}`);
  }
  const names: string[] = [];
  for (let k = 0; k < value.length; k++) {
    const name: unknown = value[k];
    if (!isValidTaskName(name)) {
      return decodeError(`${context}: "${key}[${k}]" must be a non-empty string, got ${describeValue(name)}`);
    }
    if (seen.has(name)) {
      return decodeError(`${context}: parent ${quoteShort(name)} appears more than once`);
    }
    seen.add(name);
    names.push(name);
  }
  return decodeOk(names);
}

function decodeCompact(value: unknown, context: string): DecodeResult<CompactUpstreamRefs> {
  if (!isPlainObject(value)) {
    return decodeError(`${context}: must be an object with "s", "i" and/or "n", got ${describeValue(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== 's' && key !== 'i' && key !== 'n') {
      return decodeError(`${context}: unknown key ${quoteShort(key)} (expected "s", "i" and/or "n")`);
    }
  }
  const seen = new Set<string>();
  let s: string[] = [];
  let n: string[] = [];
  const inline: Array<[string, string]> = [];
  if (Object.hasOwn(value, 's')) {
    const r = decodeNameList(value.s, context, 's', seen);
    if (!r.ok) return r;
    s = r.value;
  }
  if (Object.hasOwn(value, 'i')) {
    const i = value.i;
    if (!isPlainObject(i)) {
      return decodeError(`${context}: "i" must be an object of parent name → output ref, got ${describeValue(i)}`);
    }
    for (const [name, ref] of Object.entries(i)) {
      if (!isValidTaskName(name)) return decodeError(`${context}: "i" has an empty parent name`);
      if (typeof ref !== 'string') {
        return decodeError(`${context}: "i"[${quoteShort(name)}] must be a string, got ${describeValue(ref)}`);
      }
      if (seen.has(name)) return decodeError(`${context}: parent ${quoteShort(name)} appears more than once`);
      seen.add(name);
      inline.push([name, ref]);
    }
  }
  if (Object.hasOwn(value, 'n')) {
    const r = decodeNameList(value.n, context, 'n', seen);
    if (!r.ok) return r;
    n = r.value;
  }
  return decodeOk(build(s, inline, n));
}

/**
 * Checks an untrusted value (e.g. `__upstream_outputs_compact` from a task message) and returns
 * it as {@link CompactUpstreamRefs}, with empty sections dropped. Only the keys `s`, `i`, `n` are
 * allowed; a parent may appear in one section only. Never throws.
 */
export function decodeCompactUpstreamRefs(value: unknown): DecodeResult<CompactUpstreamRefs> {
  return decodeCompact(value, 'upstream refs');
}

/**
 * The path of the overflow blob holding a task attempt's compact upstream refs when they are too
 * big for the task message: `upstream/{workflow_id}/{task_name}/{attempt_no}.json`. The path is
 * inside the engine's STATE container (not the outputs container); the task message then carries
 * `__upstream_outputs_blob: "{state container}/{path}"`.
 *
 * @throws RangeError on an invalid workflow id, task name or attempt number.
 */
export function upstreamOverflowBlobPath(workflowId: string, taskName: string, attemptNo: number): string {
  if (!isValidWorkflowId(workflowId)) {
    throw new RangeError(`upstream refs: invalid workflow id ${describeValue(workflowId)}`);
  }
  if (!isValidTaskName(taskName)) {
    throw new RangeError(`upstream refs: invalid task name ${describeValue(taskName)}`);
  }
  if (!isPositiveSafeInteger(attemptNo)) {
    throw new RangeError(`upstream refs: attempt number must be an integer ≥ 1, got ${describeValue(attemptNo)}`);
  }
  return `upstream/${workflowId}/${taskName}/${attemptNo}.json`;
}

/** The content of an upstream overflow blob: the compact refs as JSON text (keys `s`, `i`, `n` in that order). */
export function encodeUpstreamOverflow(compact: CompactUpstreamRefs): string {
  const out: CompactUpstreamRefs = {};
  if (compact.s !== undefined && compact.s.length > 0) out.s = compact.s;
  if (compact.i !== undefined && Object.keys(compact.i).length > 0) out.i = compact.i;
  if (compact.n !== undefined && compact.n.length > 0) out.n = compact.n;
  return JSON.stringify(out);
}

/** Decodes the content of an upstream overflow blob. Never throws; errors start with `upstream overflow:`. */
export function decodeUpstreamOverflow(text: string): DecodeResult<CompactUpstreamRefs> {
  if (typeof text !== 'string') {
    return decodeError(`upstream overflow: expected JSON text, got ${describeValue(text)}`);
  }
  const parsed = parseJson(text);
  if (!parsed.ok) return decodeError(`upstream overflow: not valid JSON (${parsed.error})`);
  return decodeCompact(parsed.value, 'upstream overflow');
}
