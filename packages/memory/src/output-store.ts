import { createHash, randomUUID } from 'node:crypto';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isValidWorkflowId } from '@jobq/dag-core';
import {
  BLOB_REF_PREFIX,
  INLINE_FALLBACK_MAX_BYTES,
  INLINE_OUTPUT_MAX_BYTES,
  OUTPUT_BLOB_PREFIX,
  STASH_BLOB_PREFIX,
  blobOutputRef,
  canonicalOutputBlobPath,
  decodeUpstreamOverflow,
  encodeUpstreamOverflow,
  isBase64Md5,
  isValidContainerName,
  parseBlobLocation,
  parseOutputRef,
  stashBlobName,
  upstreamOverflowBlobPath,
  utf8ByteLength,
  type CompactUpstreamRefs,
  type StashMarker,
} from '@jobq/dag-core/wire';
import {
  JobqError,
  TASK_LOG_FOLDER,
  errorMessage,
  isJobqError,
  parseTaskLogName,
  taskLogBlobPath,
  taskLogMetadataFromBlob,
  taskLogMetadataToBlob,
  type GetTaskLogOptions,
  type OperationOptions,
  type OutputStore,
  type PutOutputOptions,
  type PutOutputResult,
  type TaskLogEntry,
  type TaskLogMetadata,
  type TaskLogRead,
} from '@jobq/ports';

/** Options of {@link MemoryOutputStore}. */
export interface MemoryOutputStoreOptions {
  /** The outputs container refs name (default `memory-outputs`). */
  outputsContainer?: string;
  /** The state container of overflow blobs (default `memory-workflows`). */
  workflowsContainer?: string;
}

/** Task log blobs (written by workers) in the outputs container. */
const TASK_LOG_BLOB_PREFIX = 'workflow-logs/';

/** The outputs container's folders that hold one workflow's blobs under `{folder}{workflow_id}/`. */
const OUTPUT_FOLDERS = [OUTPUT_BLOB_PREFIX, STASH_BLOB_PREFIX, TASK_LOG_BLOB_PREFIX] as const;

/** The state container's folder of a workflow's overflow blobs, `upstream/{workflow_id}/`. */
const UPSTREAM_FOLDER = 'upstream/';

/**
 * The workflow a blob under one of `folders` belongs to: the path segment after the folder. A
 * workflow id holds no `/`, so `a`'s folder never holds a blob of `a.b`. Null outside those folders.
 */
function ownerOf(path: string, folders: readonly string[]): string | null {
  for (const folder of folders) {
    if (!path.startsWith(folder)) continue;
    const end = path.indexOf('/', folder.length);
    return end > folder.length ? path.slice(folder.length, end) : null;
  }
  return null;
}

/** A stored blob: its bytes and the Content-MD5 it was stored with (kept apart, so damage can be simulated). */
interface Blob {
  bytes: Uint8Array;
  md5: string;
  /** Blob metadata (task logs). */
  metadata?: Record<string, string>;
  etag?: string;
}

/** What a read is checked against. */
interface Expected {
  md5?: string | null;
  size?: number;
}

function md5Base64(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('base64');
}

function describeBlob(container: string, path: string): string {
  return `blob "${container}/${path}"`;
}

/** Refuses blob paths the Azure store refuses too (`.`/`..` segments, `\`, control characters, a trailing `.` or `/`, > 1 024 characters). */
function checkBlobPath(path: string, what: string): void {
  const refuse = (why: string): never => {
    throw new JobqError('invalid-argument', `${what}: blob path "${path.slice(0, 200)}" ${why}`);
  };
  if (path.length === 0) refuse('is empty');
  if (path.length > 1024) refuse(`has ${path.length} characters; blob names have at most 1 024`);
  // eslint-disable-next-line no-control-regex
  if (/[\\\u0000-\u001f\u007f]/.test(path)) refuse('contains "\\" or a control character');
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) refuse('contains a "." or ".." segment');
  if (path.endsWith('.') || path.endsWith('/')) refuse('ends with "." or "/"');
}

/** The checks of a read (as the Azure store makes them): size, stored md5 against the expected one, content against both. */
function verifyContent(where: string, blob: Blob, expected: Expected): void {
  const actualMd5 = md5Base64(blob.bytes);
  const corrupt = (why: string): never => {
    throw new JobqError('corrupt', `${where} ${why}`);
  };
  if (expected.size !== undefined && blob.bytes.byteLength !== expected.size)
    corrupt(`has ${blob.bytes.byteLength} bytes; ${expected.size} were expected`);
  if (expected.md5 && blob.md5 !== expected.md5)
    corrupt(`has Content-MD5 ${blob.md5} but ${expected.md5} was expected (the blob was replaced or damaged)`);
  if (actualMd5 !== blob.md5) corrupt(`content hashes to ${actualMd5}, not to its stored Content-MD5 ${blob.md5}`);
}

function decodeUtf8(bytes: Uint8Array, where: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new JobqError('corrupt', `${where} is not UTF-8 text`);
  }
}

function localError(what: string, error: unknown): JobqError {
  if (isJobqError(error)) return error;
  const code = (error as { code?: unknown }).code;
  const label = typeof code === 'string' ? code : errorMessage(error);
  return new JobqError('invalid-argument', `cannot ${what}: ${label}`, { cause: error });
}

/** JSON-looking text (for telling a damaged inline output from a ref of another form). */
const JSON_START = /^\s*(?:[{["\-0-9]|true\b|false\b|null\b)/;

/**
 * {@link OutputStore} in memory, with the semantics of the Azure store: outputs inline up to 32 KiB
 * (or what `fitsInline` accepts), else in the attempt's blob `outputs/{wf}/{task}/{attempt}.json`,
 * created once (a second delivery of the attempt adopts the first blob and its md5); stashed files
 * under `workflow-files/{wf}/{task}/{attempt}/{file}`; overflow blobs `upstream/{wf}/{task}/{attempt}.json`
 * in the state container; every read checked against the stored md5 (and the ref's or marker's).
 * It passes the same contract suite as the Azure store.
 *
 * Each blob is also filed under its workflow, so {@link deleteWorkflowOutputs} (and
 * {@link deleteStateBlobs}, for the store's purge) cost the workflow's blobs, not every blob.
 *
 * Test hooks: {@link corrupt} (damage a blob, keeping its md5), {@link breakUploads} /
 * {@link restoreUploads} (uploads fail as with an unreachable service), {@link writeBlob} (a blob
 * written behind the store's back, e.g. a task log), {@link blobCount}.
 */
export class MemoryOutputStore implements OutputStore {
  readonly outputsContainer: string;
  readonly workflowsContainer: string;
  private readonly blobs = new Map<string, Blob>();
  /** Keys of the blobs under a workflow's outputs-container folders (outputs, stashed files, logs), by workflow id. */
  private readonly outputKeys = new Map<string, Set<string>>();
  /** Keys of the blobs under a workflow's state-container folder (overflow blobs), by workflow id. */
  private readonly stateKeys = new Map<string, Set<string>>();
  private uploadsBroken = false;
  private etags = 0;

  constructor(options: MemoryOutputStoreOptions = {}) {
    this.outputsContainer = options.outputsContainer ?? 'memory-outputs';
    this.workflowsContainer = options.workflowsContainer ?? 'memory-workflows';
    for (const container of [this.outputsContainer, this.workflowsContainer]) {
      if (!isValidContainerName(container))
        throw new JobqError(
          'invalid-config',
          `"${String(container)}" is not a container name (3–63 lowercase letters, digits and hyphens)`,
        );
    }
  }

  putOutput(workflowId: string, taskName: string, attemptNo: number, json: string, options?: PutOutputOptions): Promise<PutOutputResult> {
    return run(() => {
      if (typeof json !== 'string') throw new JobqError('invalid-argument', 'an output must be JSON text (a string)');
      const path = this.canonicalPath(workflowId, taskName, attemptNo);
      const what = `the output of task "${taskName}" (attempt ${attemptNo}) in workflow "${workflowId}"`;
      if (json.trim() === '') return { ref: null, placement: 'none', bytes: 0 };
      try {
        JSON.parse(json);
      } catch (error) {
        throw new JobqError('invalid-argument', `${what} is not valid JSON: ${errorMessage(error)}`);
      }
      checkAborted(options);
      const bytes = utf8ByteLength(json);
      const fitsInline = options?.fitsInline?.(json);
      if (fitsInline ?? bytes <= INLINE_OUTPUT_MAX_BYTES) return { ref: json, placement: 'inline', bytes };
      const blob = describeBlob(this.outputsContainer, path);
      if (this.uploadsBroken) {
        const failure = `upload ${what} to ${blob} failed: the storage service could not be reached`;
        if (fitsInline === undefined && bytes <= INLINE_FALLBACK_MAX_BYTES) {
          return {
            ref: json,
            placement: 'inline-fallback',
            bytes,
            warning: `${what} (${bytes} bytes) could not be uploaded to ${blob} after 1 attempt (${failure}); it is sent inline instead (allowed up to 500 KiB, ${INLINE_FALLBACK_MAX_BYTES} bytes)`,
          };
        }
        const why =
          fitsInline === undefined
            ? `is too large to send inline (limit 500 KiB, ${INLINE_FALLBACK_MAX_BYTES} bytes)`
            : 'does not fit in the completion message, so it cannot be sent inline';
        throw new JobqError(
          'unavailable',
          `${what} is ${bytes} bytes: it could not be uploaded to ${blob} after 1 attempt (${failure}) and ${why}`,
          {
            details: { workflowId, taskName, attemptNo, bytes },
          },
        );
      }
      const key = this.key(this.outputsContainer, path);
      const existing = this.blobs.get(key);
      if (existing !== undefined) {
        // Another delivery of this attempt stored its output first: every completion names that blob.
        return {
          ref: blobOutputRef(this.outputsContainer, path, existing.md5),
          placement: 'blob',
          bytes: existing.bytes.byteLength,
          adopted: true,
        };
      }
      const body = Buffer.from(json, 'utf8');
      const md5 = md5Base64(body);
      this.store(this.outputsContainer, path, { bytes: body, md5 });
      return { ref: blobOutputRef(this.outputsContainer, path, md5), placement: 'blob', bytes };
    });
  }

  getOutput(outputRef: string | null, options?: OperationOptions): Promise<unknown> {
    return run(() => {
      if (outputRef === null) return null;
      if (typeof outputRef !== 'string') throw new JobqError('invalid-argument', 'an output ref must be a string');
      const ref: string = outputRef;
      const parsed = parseOutputRef(ref);
      if (parsed.kind === 'inline') return JSON.parse(parsed.json) as unknown;
      if (parsed.kind === 'unknown') {
        const shown = ref.length > 100 ? `${ref.slice(0, 100)}…` : ref;
        if (!ref.startsWith(BLOB_REF_PREFIX) && JSON_START.test(ref))
          throw new JobqError('corrupt', `inline output "${shown}" is not valid JSON`);
        throw new JobqError('invalid-argument', `"${shown}" is not an output ref (inline JSON, or blob:{container}/{path}[:{md5}])`);
      }
      if (parsed.container !== this.outputsContainer && parsed.container !== this.workflowsContainer) {
        throw new JobqError(
          'invalid-argument',
          `output ref names container "${parsed.container}", which is not one of this store's (${this.outputsContainer}, ${this.workflowsContainer}); refusing to follow it`,
        );
      }
      checkBlobPath(parsed.path, 'output ref');
      checkAborted(options);
      const where = `output ${describeBlob(parsed.container, parsed.path)}`;
      const blob = this.read(parsed.container, parsed.path, where);
      verifyContent(where, blob, { md5: parsed.md5 });
      const text = decodeUtf8(blob.bytes, where);
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new JobqError('corrupt', `${where} is not valid JSON: ${errorMessage(error)}`);
      }
    });
  }

  putFile(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    data: Uint8Array,
    options?: OperationOptions,
  ): Promise<StashMarker> {
    return run(() => {
      if (!(data instanceof Uint8Array)) throw new JobqError('invalid-argument', 'stash: data must be a Uint8Array');
      const blobName = this.stashName(workflowId, taskName, attemptNo, filename);
      checkAborted(options);
      this.checkUpload(`stash file ${describeBlob(this.outputsContainer, blobName)}`);
      const bytes = new Uint8Array(data); // a copy: the caller may reuse its buffer
      const md5 = md5Base64(bytes);
      this.store(this.outputsContainer, blobName, { bytes, md5 });
      return { blobName, md5, size: bytes.byteLength };
    });
  }

  async putFileFromPath(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    path: string,
    options?: OperationOptions,
  ): Promise<StashMarker> {
    const blobName = this.stashName(workflowId, taskName, attemptNo, filename);
    const before = await localStat(path);
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(path));
    } catch (error) {
      throw localError(`read "${path}"`, error);
    }
    const after = await localStat(path);
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || bytes.byteLength !== before.size) {
      throw new JobqError('invalid-argument', `stash: "${path}" changed while it was being uploaded; stash it again once it is complete`);
    }
    checkAborted(options);
    this.checkUpload(`stash file ${describeBlob(this.outputsContainer, blobName)}`);
    const md5 = md5Base64(bytes);
    this.store(this.outputsContainer, blobName, { bytes, md5 });
    return { blobName, md5, size: bytes.byteLength };
  }

  getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array> {
    return run(() => {
      checkMarker(marker);
      checkAborted(options);
      const where = `stashed file ${describeBlob(this.outputsContainer, marker.blobName)}`;
      const blob = this.read(this.outputsContainer, marker.blobName, where);
      verifyContent(where, blob, marker);
      return new Uint8Array(blob.bytes);
    });
  }

  async downloadFileTo(marker: StashMarker, destPath: string, options?: OperationOptions): Promise<void> {
    // Verified before anything is written: a damaged file never reaches the disk.
    const bytes = await this.getFile(marker, options);
    const temp = join(dirname(destPath), `.${basename(destPath)}.${randomUUID().slice(0, 8)}.jobq-part`);
    try {
      await writeFile(temp, bytes, { flag: 'wx' });
      await rename(temp, destPath);
    } catch (error) {
      await rm(temp, { force: true });
      throw localError(`write "${destPath}"`, error);
    }
  }

  putUpstreamOverflow(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    compact: CompactUpstreamRefs,
    options?: OperationOptions,
  ): Promise<string> {
    return run(() => {
      let path: string;
      try {
        path = upstreamOverflowBlobPath(workflowId, taskName, attemptNo);
      } catch (error) {
        throw new JobqError('invalid-argument', errorMessage(error));
      }
      checkBlobPath(path, `upstream overflow of task "${taskName}"`);
      checkAborted(options);
      this.checkUpload(`write upstream overflow ${describeBlob(this.workflowsContainer, path)}`);
      const bytes = Buffer.from(encodeUpstreamOverflow(compact), 'utf8');
      this.store(this.workflowsContainer, path, { bytes, md5: md5Base64(bytes) });
      return `${this.workflowsContainer}/${path}`;
    });
  }

  /**
   * Deletes the blobs under `outputs/{wf}/`, `workflow-files/{wf}/` and `workflow-logs/{wf}/` of the
   * outputs container (only whole `{wf}/` folders: `a` never reaches `a.b`) and returns how many.
   */
  deleteWorkflowOutputs(workflowId: string, options?: OperationOptions): Promise<number> {
    return run(() => {
      checkWorkflowIdOf(workflowId);
      checkAborted(options);
      return this.dropAll(this.outputKeys, workflowId);
    });
  }

  /**
   * Deletes a workflow's overflow blobs, `upstream/{wf}/` of the state container, and returns how
   * many: what the Azure workflow store's purge deletes besides the runtime (give this store to
   * `MemoryWorkflowStore` as its `stateBlobs`).
   */
  deleteStateBlobs(workflowId: string): number {
    checkWorkflowIdOf(workflowId);
    return this.dropAll(this.stateKeys, workflowId);
  }

  getUpstreamOverflow(location: string, options?: OperationOptions): Promise<CompactUpstreamRefs> {
    return run(() => {
      const parsed = typeof location === 'string' ? parseBlobLocation(location) : null;
      if (parsed === null)
        throw new JobqError(
          'invalid-argument',
          `upstream overflow: "${String(location).slice(0, 200)}" is not a "<container>/<path>" location`,
        );
      if (parsed.container !== this.workflowsContainer) {
        throw new JobqError(
          'invalid-argument',
          `upstream overflow: location "${location.slice(0, 200)}" is not in the state container "${this.workflowsContainer}"; refusing to follow it`,
        );
      }
      checkBlobPath(parsed.path, 'upstream overflow');
      checkAborted(options);
      const where = `upstream overflow ${describeBlob(parsed.container, parsed.path)}`;
      const blob = this.read(parsed.container, parsed.path, where);
      verifyContent(where, blob, {});
      const decoded = decodeUpstreamOverflow(decodeUtf8(blob.bytes, where));
      if (!decoded.ok) throw new JobqError('corrupt', `${where}: ${decoded.error}`);
      return decoded.value;
    });
  }

  putTaskLog(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    text: Uint8Array,
    metadata: TaskLogMetadata,
    options?: OperationOptions,
  ): Promise<void> {
    return run(() => {
      const path = this.taskLogPath(workflowId, taskName, attemptNo);
      if (!(text instanceof Uint8Array)) throw new JobqError('invalid-argument', 'a task log must be bytes (a Uint8Array)');
      checkAborted(options);
      this.checkUpload(`upload the log of task "${taskName}" (attempt ${attemptNo})`);
      const bytes = new Uint8Array(text);
      this.store(this.outputsContainer, path, {
        bytes,
        md5: md5Base64(bytes),
        metadata: taskLogMetadataToBlob(metadata),
        etag: `"${++this.etags}"`,
      });
    });
  }

  getTaskLog(workflowId: string, taskName: string, attemptNo: number, options: GetTaskLogOptions = {}): Promise<TaskLogRead | null> {
    return run(() => {
      const path = this.taskLogPath(workflowId, taskName, attemptNo);
      checkAborted(options);
      const blob = this.blobs.get(this.key(this.outputsContainer, path));
      if (blob === undefined) return null;
      const etag = blob.etag ?? `"${blob.md5}"`;
      if (options.ifNoneMatch !== undefined && options.ifNoneMatch === etag) return { notModified: true, etag };
      const start = Math.min(Math.max(0, options.offset ?? 0), blob.bytes.byteLength);
      const end = options.count === undefined ? blob.bytes.byteLength : Math.min(blob.bytes.byteLength, start + Math.max(0, options.count));
      return {
        notModified: false,
        bytes: blob.bytes.slice(start, end),
        size: blob.bytes.byteLength,
        etag,
        metadata: taskLogMetadataFromBlob(blob.metadata),
      };
    });
  }

  listTaskLogs(workflowId: string, taskName?: string, options?: OperationOptions): Promise<TaskLogEntry[]> {
    return run(() => {
      checkWorkflowIdOf(workflowId);
      checkAborted(options);
      const folder = `${this.outputsContainer}/${TASK_LOG_FOLDER}${workflowId}/`;
      const entries: TaskLogEntry[] = [];
      for (const key of this.outputKeys.get(workflowId) ?? []) {
        if (!key.startsWith(folder)) continue;
        const name = parseTaskLogName(key.slice(folder.length));
        if (name === null || (taskName !== undefined && name.taskName !== taskName)) continue;
        const blob = this.blobs.get(key);
        if (blob === undefined) continue;
        entries.push({ ...name, size: blob.bytes.byteLength, metadata: taskLogMetadataFromBlob(blob.metadata) });
      }
      return entries.sort((a, b) => (a.taskName < b.taskName ? -1 : a.taskName > b.taskName ? 1 : a.attemptNo - b.attemptNo));
    });
  }

  // ---- test hooks ------------------------------------------------------------------------------

  /** Replaces a stored blob's bytes (same size, one byte changed) behind the store's back, keeping its stored md5. */
  corrupt(target: string | StashMarker): Promise<void> {
    return run(() => {
      let key: string;
      if (typeof target === 'string') {
        const parsed = parseOutputRef(target);
        if (parsed.kind !== 'blob') throw new JobqError('invalid-argument', 'corrupt: not a blob ref');
        key = this.key(parsed.container, parsed.path);
      } else {
        key = this.key(this.outputsContainer, target.blobName);
      }
      const blob = this.blobs.get(key);
      if (blob === undefined) throw new JobqError('not-found', `corrupt: no blob ${key}`);
      const damaged = new Uint8Array(blob.bytes);
      const i = Math.floor(damaged.length / 2);
      damaged[i] = damaged[i] === 0x61 ? 0x62 : 0x61;
      this.blobs.set(key, { bytes: damaged, md5: blob.md5 });
    });
  }

  /**
   * Writes a blob behind the store's back (as a worker writes its task log
   * `workflow-logs/{wf}/{task}/{attempt}.log` in the outputs container), in one of the store's containers.
   */
  writeBlob(container: string, path: string, data: Uint8Array): void {
    if (container !== this.outputsContainer && container !== this.workflowsContainer) {
      throw new JobqError(
        'invalid-argument',
        `writeBlob: "${container}" is not one of this store's containers (${this.outputsContainer}, ${this.workflowsContainer})`,
      );
    }
    checkBlobPath(path, 'writeBlob');
    const bytes = new Uint8Array(data);
    this.store(container, path, { bytes, md5: md5Base64(bytes) });
  }

  /** Makes every upload fail (as an unreachable service would) until {@link restoreUploads}. */
  breakUploads(): void {
    this.uploadsBroken = true;
  }

  restoreUploads(): void {
    this.uploadsBroken = false;
  }

  /** The number of stored blobs (outputs, stashed files, overflow blobs). */
  get blobCount(): number {
    return this.blobs.size;
  }

  // ---- internals -------------------------------------------------------------------------------

  private key(container: string, path: string): string {
    return `${container}/${path}`;
  }

  /** Stores a blob and files it under its workflow (when it is in one of a workflow's folders). */
  private store(container: string, path: string, blob: Blob): void {
    const key = this.key(container, path);
    this.blobs.set(key, blob);
    const file = (byWorkflow: Map<string, Set<string>>, workflowId: string | null) => {
      if (workflowId === null) return;
      let keys = byWorkflow.get(workflowId);
      if (keys === undefined) byWorkflow.set(workflowId, (keys = new Set()));
      keys.add(key);
    };
    if (container === this.outputsContainer) file(this.outputKeys, ownerOf(path, OUTPUT_FOLDERS));
    if (container === this.workflowsContainer) file(this.stateKeys, ownerOf(path, [UPSTREAM_FOLDER]));
  }

  /** Deletes every blob filed under a workflow in `byWorkflow`; returns how many there were. */
  private dropAll(byWorkflow: Map<string, Set<string>>, workflowId: string): number {
    const keys = byWorkflow.get(workflowId);
    if (keys === undefined) return 0;
    byWorkflow.delete(workflowId);
    let deleted = 0;
    for (const key of keys) if (this.blobs.delete(key)) deleted++;
    return deleted;
  }

  private read(container: string, path: string, where: string): Blob {
    const blob = this.blobs.get(this.key(container, path));
    if (blob === undefined) throw new JobqError('not-found', `${where} does not exist`);
    return blob;
  }

  private checkUpload(operation: string): void {
    if (this.uploadsBroken) throw new JobqError('unavailable', `${operation} failed: the storage service could not be reached`);
  }

  private canonicalPath(workflowId: string, taskName: string, attemptNo: number): string {
    let path: string;
    try {
      path = canonicalOutputBlobPath(workflowId, taskName, attemptNo);
    } catch (error) {
      throw new JobqError('invalid-argument', errorMessage(error));
    }
    checkBlobPath(path, `output of task "${taskName}"`);
    return path;
  }

  private taskLogPath(workflowId: string, taskName: string, attemptNo: number): string {
    checkWorkflowIdOf(workflowId);
    if (typeof taskName !== 'string' || taskName === '') throw new JobqError('invalid-argument', 'a task log needs a task name');
    if (!Number.isSafeInteger(attemptNo) || attemptNo < 1)
      throw new JobqError('invalid-argument', `attempt ${String(attemptNo)} is not a number ≥ 1`);
    const path = taskLogBlobPath(workflowId, taskName, attemptNo);
    checkBlobPath(path, `log of task "${taskName}"`);
    return path;
  }

  private stashName(workflowId: string, taskName: string, attemptNo: number, filename: string): string {
    const name = stashBlobName(workflowId, taskName, attemptNo, filename);
    if (!name.ok) throw new JobqError('invalid-argument', name.error);
    checkBlobPath(name.value, `stash file "${filename}" of task "${taskName}"`);
    return name.value;
  }
}

function run<T>(fn: () => T): Promise<T> {
  return new Promise((resolve) => resolve(fn()));
}

function checkAborted(options: OperationOptions | undefined): void {
  if (options?.abortSignal?.aborted) throw new JobqError('aborted', 'aborted by the caller');
}

function checkWorkflowIdOf(workflowId: string): void {
  if (!isValidWorkflowId(workflowId)) {
    throw new JobqError(
      'invalid-argument',
      `"${String(workflowId).slice(0, 200)}" is not a workflow id (1–128 letters, digits, ".", "_" and "-", starting with a letter or digit)`,
    );
  }
}

/** Checks a marker that came from an output (i.e. from a message) before following it. */
function checkMarker(marker: StashMarker): void {
  const ok =
    typeof marker === 'object' &&
    marker !== null &&
    typeof marker.blobName === 'string' &&
    marker.blobName.startsWith(STASH_BLOB_PREFIX) &&
    isBase64Md5(marker.md5) &&
    Number.isSafeInteger(marker.size) &&
    marker.size >= 0;
  if (!ok) throw new JobqError('invalid-argument', 'stash: not a stash marker ({ blobName: "workflow-files/…", md5, size })');
  checkBlobPath(marker.blobName, 'stash marker');
}

async function localStat(path: string): Promise<{ size: number; mtimeMs: number }> {
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new JobqError('invalid-argument', `stash: "${path}" is not a regular file`);
    return { size: s.size, mtimeMs: s.mtimeMs };
  } catch (error) {
    throw localError(`read "${path}"`, error);
  }
}
