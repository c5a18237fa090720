import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  decodeInlineOutput,
  findStashMarkers,
  makeStashMarker,
  parseOutputRef,
  type FoundStashMarker,
  type StashMarkerJson,
} from '@jobq/dag-core/wire';
import { JobqError, envValue, errorMessage, mapLimit, type OperationOptions } from '@jobq/ports';
import { fileExists, helperEnv, injectedCancellationChecker, outputStore, readJsonFile, requireTaskEnv, taskIdentity } from './context';
import { StashedFile } from './stashed-file';

/** Upstream outputs are fetched at most this many at a time by {@link getUpstreamOutputs}. */
const UPSTREAM_READ_CONCURRENCY = 16;

// ---------------------------------------------------------------------------------------------
// setOutput

function describePath(path: string): string {
  return path === '' ? 'the output' : `the output at ${path}`;
}

/** JSON text of a task output; `invalid-argument` for what JSON cannot carry faithfully. */
export function serializeOutput(value: unknown): string {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
    throw new JobqError(
      'invalid-argument',
      `setOutput() needs a JSON value (object, array, string, number, boolean or null), got ${typeof value}`,
    );
  }
  // Paths of the values being serialised, for the error message (keys of the parents, in order).
  const paths = new Map<object, string>();
  let text: string | undefined;
  try {
    text = JSON.stringify(value, function (this: unknown, key: string, item: unknown): unknown {
      // The holder of the root value is JSON.stringify's wrapper object, which is not in `paths`.
      const holderPath = paths.get(this as object);
      const path = holderPath === undefined ? '' : `${holderPath}/${key}`;
      if (typeof item === 'function' || typeof item === 'symbol') {
        throw new JobqError('invalid-argument', `setOutput(): ${describePath(path)} is a ${typeof item}, which JSON cannot hold`);
      }
      if (typeof item === 'object' && item !== null) paths.set(item, path);
      return item;
    });
  } catch (error) {
    if (error instanceof JobqError) throw error;
    const message = errorMessage(error);
    const reason = /circular/i.test(message) ? 'the value has a cycle (an object that contains itself)' : message;
    throw new JobqError('invalid-argument', `setOutput() cannot serialise the output to JSON: ${reason}`, { cause: error });
  }
  if (text === undefined) {
    throw new JobqError(
      'invalid-argument',
      'setOutput() needs a JSON value: the value serialises to nothing (its toJSON() returned undefined?)',
    );
  }
  return text;
}

/**
 * Sets the output of the running workflow task: `value` as JSON in `$JOBQ_OUTPUT_FILE`, which the
 * worker stores once the task exits (inline up to 32 KiB, in a blob above; docs/design.md#outputs). Calling it
 * again replaces the output. The file is written atomically (a temporary file in the same
 * directory, then a rename), so the worker never reads half an output.
 *
 * `undefined`, functions, symbols, `BigInt`s and cycles are refused with an `invalid-argument`
 * error (object properties whose value is `undefined` are left out, as `JSON.stringify` does).
 * {@link StashedFile} handles serialise as their stash markers.
 *
 * @throws JobqError `invalid-config` outside a workflow task (`JOBQ_OUTPUT_FILE` not set).
 */
export async function setOutput(value: unknown): Promise<void> {
  const target = resolve(requireTaskEnv('setOutput', 'JOBQ_OUTPUT_FILE'));
  const text = serializeOutput(value);
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw new JobqError('internal', `setOutput() could not write ${target}: ${errorMessage(error)}`, { cause: error });
  }
}

// ---------------------------------------------------------------------------------------------
// Upstream outputs

type UpstreamRefs = Map<string, string | null>;

async function readUpstreamRefs(helper: string): Promise<UpstreamRefs> {
  const path = requireTaskEnv(helper, 'JOBQ_WORKFLOW_UPSTREAM_REFS');
  const parsed = await readJsonFile(path, 'JOBQ_WORKFLOW_UPSTREAM_REFS');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new JobqError('corrupt', `JOBQ_WORKFLOW_UPSTREAM_REFS file "${path}" must hold a JSON object { parent: outputRef | null }`);
  }
  const refs: UpstreamRefs = new Map();
  for (const [name, ref] of Object.entries(parsed as Record<string, unknown>)) {
    if (ref !== null && typeof ref !== 'string') {
      throw new JobqError('corrupt', `JOBQ_WORKFLOW_UPSTREAM_REFS file "${path}": the ref of "${name}" must be a string or null`);
    }
    refs.set(name, ref);
  }
  return refs;
}

/** All real parents (`JOBQ_WORKFLOW_REAL_UPSTREAM`), or null when the worker did not say. */
async function readRealUpstream(): Promise<string[] | null> {
  const path = envValue(helperEnv(), 'JOBQ_WORKFLOW_REAL_UPSTREAM');
  if (path === null) return null;
  const parsed = await readJsonFile(path, 'JOBQ_WORKFLOW_REAL_UPSTREAM');
  if (!Array.isArray(parsed) || !parsed.every((name): name is string => typeof name === 'string')) {
    throw new JobqError('corrupt', `JOBQ_WORKFLOW_REAL_UPSTREAM file "${path}" must hold a JSON array of task names`);
  }
  return parsed;
}

/** Markers → {@link StashedFile} handles: the output itself, or the values of its top-level keys. */
function withHandles(output: unknown, found: FoundStashMarker[]): unknown {
  if (found.length === 0) return output;
  const first = found[0];
  if (first !== undefined && first.key === null) return new StashedFile(first.marker);
  const copy: Record<string, unknown> = { ...(output as Record<string, unknown>) };
  for (const { key, marker } of found) {
    if (key !== null) copy[key] = new StashedFile(marker);
  }
  return copy;
}

/** The raw JSON value of an output ref: inline refs are decoded locally, blob refs through the store. */
async function readOutputRef(parent: string, ref: string | null, options?: OperationOptions): Promise<unknown> {
  if (ref === null) return null;
  const parsed = parseOutputRef(ref);
  if (parsed.kind === 'inline') {
    const decoded = decodeInlineOutput(ref);
    if (!decoded.ok) throw new JobqError('corrupt', `the output of upstream task "${parent}" is not valid JSON: ${decoded.error}`);
    return decoded.value;
  }
  const outputs = await outputStore();
  return outputs.getOutput(ref, options);
}

function listNames(names: readonly string[]): string {
  if (names.length === 0) return 'none';
  const shown = names.slice(0, 20).map((n) => `"${n}"`);
  return names.length > 20 ? `${shown.join(', ')}, … (${names.length} in all)` : shown.join(', ');
}

/** The ref of `name`, or a clear error saying why there is none. */
async function upstreamRef(helper: string, name: string): Promise<string | null> {
  if (typeof name !== 'string' || name === '') {
    throw new JobqError('invalid-argument', `${helper}() needs the name of an upstream task, got ${JSON.stringify(name) ?? String(name)}`);
  }
  const { taskName } = taskIdentity(helper);
  const refs = await readUpstreamRefs(helper);
  if (refs.has(name)) return refs.get(name) ?? null;
  const real = await readRealUpstream();
  if (real?.includes(name)) {
    throw new JobqError(
      'not-found',
      `${helper}(): upstream task "${name}" of "${taskName}" did not complete (it failed or has not finished), so it has no output; getUpstreamOutputs() returns the upstream tasks that completed or were skipped`,
      { details: { task: name } },
    );
  }
  const merge = name.startsWith('__merge_') ? ' (fan-in merge nodes are transparent: ask for the real upstream tasks)' : '';
  const known = real ?? [...refs.keys()];
  const which = real ? 'upstream tasks' : 'upstream tasks that completed or were skipped';
  throw new JobqError(
    'invalid-argument',
    `${helper}(): "${name}" is not an upstream task of "${taskName}"${merge}; its ${which}: ${listNames(known)}`,
    {
      details: { task: name },
    },
  );
}

/**
 * The output of upstream task `name`, decoded: null when it completed without output or was
 * skipped. A stash marker as the output, or as the value of a top-level key, comes back as a
 * {@link StashedFile} handle. Blob outputs are downloaded and md5-checked.
 *
 * @throws JobqError `invalid-argument` when `name` is not an upstream task, `not-found` when it is
 *   one that did not complete (failed, or still unfinished under an `any`/N policy), `corrupt` when
 *   its stored output fails its check, `invalid-config` outside a workflow task.
 */
export async function getUpstreamOutput(name: string, options?: OperationOptions): Promise<unknown> {
  const ref = await upstreamRef('getUpstreamOutput', name);
  const output = await readOutputRef(name, ref, options);
  return withHandles(output, findStashMarkers(output));
}

/**
 * The outputs of every upstream task that completed or was skipped, `{ name: output | null }`, in
 * the order of the refs file (tasks that failed or did not finish are absent, so a task with an
 * `any`/N policy sees which parents succeeded). Stash markers become {@link StashedFile} handles.
 *
 * @throws JobqError `invalid-config` outside a workflow task.
 */
export async function getUpstreamOutputs(options?: OperationOptions): Promise<Record<string, unknown>> {
  taskIdentity('getUpstreamOutputs');
  const refs = [...(await readUpstreamRefs('getUpstreamOutputs')).entries()];
  const values = await mapLimit(refs, UPSTREAM_READ_CONCURRENCY, async ([name, ref]) => {
    const output = await readOutputRef(name, ref, options);
    return withHandles(output, findStashMarkers(output));
  });
  const result: Record<string, unknown> = {};
  refs.forEach(([name], index) => {
    result[name] = values[index];
  });
  return result;
}

/**
 * The names of the real upstream tasks, in order: all of them (`JOBQ_WORKFLOW_REAL_UPSTREAM`),
 * whatever their state, behind any fan-in merge nodes (docs/workflow-language.md#wide-fan-ins). When the worker does not provide
 * that list, the upstream tasks that completed or were skipped (the refs file's keys).
 *
 * @throws JobqError `invalid-config` outside a workflow task.
 */
export async function getRealUpstreamTasks(): Promise<string[]> {
  taskIdentity('getRealUpstreamTasks');
  const refs = await readUpstreamRefs('getRealUpstreamTasks');
  return (await readRealUpstream()) ?? [...refs.keys()];
}

// ---------------------------------------------------------------------------------------------
// Cancellation

/**
 * Whether the workflow of the running task has been cancelled. Uses the check injected with
 * `configureTaskHelpers({ isCancelled })` when there is one; otherwise true exactly when
 * `JOBQ_WORKFLOW_CANCEL_FILE` is set and a file exists at that path (the worker creates it when it
 * sees the workflow's cancel flag, docs/design.md#cancellation-on-the-worker). Without either it returns false, with no network call.
 *
 * @throws JobqError `invalid-config` outside a workflow task.
 */
export async function isCancelled(): Promise<boolean> {
  const { workflowId } = taskIdentity('isCancelled');
  const checker = injectedCancellationChecker();
  if (checker) return (await checker(workflowId, helperEnv())) === true;
  const path = envValue(helperEnv(), 'JOBQ_WORKFLOW_CANCEL_FILE');
  return path === null ? false : fileExists(path);
}

// ---------------------------------------------------------------------------------------------
// Files

/** Options of {@link stashFile}. */
export interface StashFileOptions extends OperationOptions {
  /** The name to stash the file under (a plain file name); default: the base name of `path`. */
  key?: string;
}

/** The attempt number of the running task (`JOBQ_WORKFLOW_ATTEMPT`); `invalid-config` when unset or malformed. */
function taskAttempt(helper: string): number {
  const text = requireTaskEnv(helper, 'JOBQ_WORKFLOW_ATTEMPT');
  const attemptNo = /^[1-9][0-9]*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(attemptNo)) {
    throw new JobqError(
      'invalid-config',
      `${helper}() needs JOBQ_WORKFLOW_ATTEMPT to be an attempt number (an integer ≥ 1), got "${text.slice(0, 40)}"`,
    );
  }
  return attemptNo;
}

/**
 * Uploads a local file to `workflow-files/{workflow_id}/{task}/{attempt}/{name}` in the outputs
 * target (the attempt is `JOBQ_WORKFLOW_ATTEMPT`) and returns its stash marker
 * (`{"__jobq_stash__":{…}}`). It does **not** set the output: put the marker in it, as the output
 * itself or as the value of a top-level key, e.g.
 * `await setOutput({ model: await stashFile('model.pt') })`. Downstream tasks then get a
 * {@link StashedFile} from `getFile(task, 'model')` or `getUpstreamOutput(task).model`.
 * The file must not change while it is uploaded. Inside a worker the helper streams the bytes to
 * the worker's task channel, which stashes them for this task only.
 *
 * @throws JobqError `invalid-config` outside a workflow task, `invalid-argument` for a name that
 *   is not a plain file name or a file that changed, and the store's transport errors.
 */
export async function stashFile(path: string, options: StashFileOptions = {}): Promise<StashMarkerJson> {
  const { workflowId, taskName } = taskIdentity('stashFile');
  const attemptNo = taskAttempt('stashFile');
  if (typeof path !== 'string' || path === '') throw new JobqError('invalid-argument', 'stashFile() needs the path of a file');
  const absolute = resolve(path);
  const name = options.key ?? basename(absolute);
  const outputs = await outputStore();
  const marker = await outputs.putFileFromPath(
    workflowId,
    taskName,
    attemptNo,
    name,
    absolute,
    options.abortSignal ? { abortSignal: options.abortSignal } : undefined,
  );
  return makeStashMarker(marker);
}

/**
 * The {@link StashedFile} an upstream task stashed: its output's marker (no `key`), or the marker
 * under top-level key `key`.
 *
 * @throws JobqError `not-found` when there is no stashed file there (the message lists the keys
 *   that hold one), plus the errors of {@link getUpstreamOutput}.
 */
export async function getFile(parent: string, key?: string, options?: OperationOptions): Promise<StashedFile> {
  const ref = await upstreamRef('getFile', parent);
  const output = await readOutputRef(parent, ref, options);
  const found = findStashMarkers(output);
  const match = found.find((f) => f.key === (key ?? null));
  if (match) return new StashedFile(match.marker);
  const where = key === undefined ? 'as its output' : `under key "${key}"`;
  const keys = found.map((f) => f.key).filter((k): k is string => k !== null);
  const hint = found.some((f) => f.key === null)
    ? 'its output itself is a stashed file (call getFile() without a key)'
    : `keys holding a stashed file: ${listNames(keys)}`;
  throw new JobqError('not-found', `getFile(): upstream task "${parent}" has no stashed file ${where}; ${hint}`, {
    details: { task: parent },
  });
}
