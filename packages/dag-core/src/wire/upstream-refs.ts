import { type DecodeResult, decodeError, decodeOk } from './decode-result';
import { isValidTaskName, isValidWorkflowId } from './ids';
import { describeValue, isPlainObject, isPositiveSafeInteger, parseJson, quoteShort } from './internal';
import {
  blobOutputRef,
  canonicalOutputAttempt,
  canonicalOutputBlobPath,
  isValidContainerName,
  legacyOutputBlobPath,
  parseAttemptText,
} from './output-ref';

/**
 * The parents whose output is in a canonical blob, grouped by attempt number (decimal text):
 * `{"1": ["a", "b"], "3": ["c"]}` stands for `blob:{outputs container}/outputs/{workflow_id}/a/1.json`,
 * `…/b/1.json` and `…/c/3.json`.
 */
export type CanonicalParentsByAttempt = Record<string, string[]>;

/**
 * The upstream outputs of a task in compact form, as carried in a task message
 * (`__upstream_outputs_compact`) or in an overflow blob. Empty sections are omitted.
 *
 * - `s`: parents whose output is in their canonical blob, grouped by attempt
 *   ({@link CanonicalParentsByAttempt}). Messages written before outputs were keyed by attempt
 *   carry an array of parent names instead, whose outputs are at the legacy path
 *   `{workflow_id}/{parent}.json`; it is still decoded and expanded, never produced;
 * - `i`: parent → output ref text kept verbatim. Normally the inline output JSON; any blob ref that
 *   is not canonical (other container, legacy path) is also kept here unchanged, md5 included;
 * - `n`: parents with no output (succeeded without output, or skipped).
 */
export interface CompactUpstreamRefs {
  s?: CanonicalParentsByAttempt | string[];
  i?: Record<string, string>;
  n?: string[];
}

/** One parent of a task and its recorded `output_ref` (null: no output). */
export interface UpstreamParent {
  name: string;
  outputRef: string | null;
}

/**
 * Compacts the output refs of a task's parents. A blob ref (with or without md5) to a canonical
 * output path of (`workflowId`, parent, attempt) in `outputsContainer` goes to `s` under its
 * attempt; its md5 is dropped, which is sound because that blob is written once and never
 * replaced, so readers can verify it against its stored Content-MD5. null goes to `n`; every other
 * ref (inline JSON, a blob ref at the legacy path or elsewhere, an unrecognised ref) goes to `i`
 * as its exact string. Parent order is kept inside each section and group; groups are in attempt
 * order.
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
  const byAttempt = new Map<number, string[]>();
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
    const attemptNo = canonicalOutputAttempt(outputRef, workflowId, name, outputsContainer);
    if (attemptNo === null) {
      inline.push([name, outputRef]);
      continue;
    }
    const group = byAttempt.get(attemptNo);
    if (group) group.push(name);
    else byAttempt.set(attemptNo, [name]);
  }
  const groups = [...byAttempt.entries()].sort(([a], [b]) => a - b).map(([attemptNo, names]) => [String(attemptNo), names]);
  return build(Object.fromEntries(groups) as CanonicalParentsByAttempt, inline, n);
}

function build(s: CompactUpstreamRefs['s'], inline: Array<[string, string]>, n: string[]): CompactUpstreamRefs {
  const out: CompactUpstreamRefs = {};
  const canonical = withoutEmptyGroups(s);
  if (canonical !== undefined) out.s = canonical;
  if (inline.length > 0) out.i = Object.fromEntries(inline);
  if (n.length > 0) out.n = n;
  return out;
}

/** `s` without empty attempt groups; undefined when nothing is left. */
function withoutEmptyGroups(s: CompactUpstreamRefs['s']): CompactUpstreamRefs['s'] {
  if (s === undefined) return undefined;
  if (Array.isArray(s)) return s.length > 0 ? s : undefined;
  const groups = Object.entries(s).filter(([, names]) => names.length > 0);
  return groups.length > 0 ? Object.fromEntries(groups) : undefined;
}

/**
 * Expands compact refs back into parent → output ref. Parents in `s` get the canonical blob ref
 * of their attempt WITHOUT md5, `blob:{outputsContainer}/outputs/{workflow_id}/{parent}/{attempt}.json`
 * (a legacy `s` array gives `blob:{outputsContainer}/{workflow_id}/{parent}.json`); `i` entries are
 * returned verbatim; `n` entries map to null.
 *
 * @throws RangeError on an invalid workflow id, container name or attempt key.
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
  const s = compact.s ?? [];
  if (Array.isArray(s)) {
    for (const name of s) entries.push([name, blobOutputRef(outputsContainer, legacyOutputBlobPath(workflowId, name))]);
  } else {
    for (const [key, names] of Object.entries(s)) {
      const attemptNo = parseAttemptText(key);
      if (attemptNo === null) throw new RangeError(`upstream refs: "s" key ${quoteShort(key)} is not an attempt number`);
      for (const name of names) entries.push([name, blobOutputRef(outputsContainer, canonicalOutputBlobPath(workflowId, name, attemptNo))]);
    }
  }
  for (const [name, ref] of Object.entries(compact.i ?? {})) entries.push([name, ref]);
  for (const name of compact.n ?? []) entries.push([name, null]);
  return Object.fromEntries(entries);
}

function decodeNameList(value: unknown, context: string, key: string, seen: Set<string>): DecodeResult<string[]> {
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

/** `s` in either form: attempt → parent names, or (legacy) an array of parent names. */
function decodeCanonicalSection(value: unknown, context: string, seen: Set<string>): DecodeResult<CompactUpstreamRefs['s']> {
  if (Array.isArray(value)) return decodeNameList(value, context, 's', seen);
  if (!isPlainObject(value)) {
    return decodeError(
      `${context}: "s" must be an object of attempt number → parent names (or an array of parent names), got ${describeValue(value)}`,
    );
  }
  const groups: Array<[number, string[]]> = [];
  for (const [key, names] of Object.entries(value)) {
    const attemptNo = parseAttemptText(key);
    if (attemptNo === null)
      return decodeError(`${context}: "s" key ${quoteShort(key)} must be an attempt number (an integer ≥ 1 without leading zeros)`);
    const r = decodeNameList(names, context, `s.${key}`, seen);
    if (!r.ok) return r;
    groups.push([attemptNo, r.value]);
  }
  groups.sort(([a], [b]) => a - b);
  return decodeOk(Object.fromEntries(groups.map(([attemptNo, names]) => [String(attemptNo), names])));
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
  let s: CompactUpstreamRefs['s'];
  let n: string[] = [];
  const inline: Array<[string, string]> = [];
  if (Object.hasOwn(value, 's')) {
    const r = decodeCanonicalSection(value.s, context, seen);
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
  return JSON.stringify(build(compact.s, Object.entries(compact.i ?? {}), compact.n ?? []));
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
