import type { RequestPolicyFactory } from '@azure/storage-blob';
import {
  BLOB_REF_PREFIX,
  INLINE_FALLBACK_MAX_BYTES,
  INLINE_OUTPUT_MAX_BYTES,
  blobOutputRef,
  canonicalOutputBlobPath,
  isValidContainerName,
  parseOutputRef,
  utf8ByteLength,
  type CompactUpstreamRefs,
  type StashMarker,
} from '@jobq/dag-core/wire';
import {
  JobqError,
  errorMessage,
  isJobqError,
  type JobqErrorCode,
  type OperationOptions,
  type OutputStore,
  type PutOutputOptions,
  type PutOutputResult,
  type GetTaskLogOptions,
  type TaskLogEntry,
  type TaskLogMetadata,
  type TaskLogRead,
} from '@jobq/ports';
import { getTaskLog, listTaskLogs, putTaskLog } from './task-logs';
import { accountClients, type StorageAccountConnection } from './clients';
import { storeNames, type StoreNames } from './names';
import { BlobIo, checkBlobPath, decodeUtf8, describeBlob, md5Base64, verifyContent, type BlobTarget } from './output-blob';
import { getOverflow, putOverflow } from './overflow';
import { downloadStashTo, getStashBytes, putStashBytes, putStashFile } from './stash';
import { deleteBlobFolders, outputFolders } from './workflow-folders';

/** Blob deletes in flight at once while purging a workflow's outputs. */
const DELETE_CONCURRENCY = 8;

/** Where large and file outputs go when it is not `{p}-outputs` on the state account (`JOBQ_WORKFLOW_BLOBS`). */
export interface OutputsTargetOptions {
  /** The account of the container; the state account when absent. */
  connection?: StorageAccountConnection;
  container: string;
}

/** Options of {@link openOutputStore}. */
export interface OutputStoreOptions {
  /** The state account (where `{p}-workflows` lives). */
  connection: StorageAccountConnection;
  /** The deployment prefix (docs/design.md#storage-layout). */
  prefix: string;
  /** The outputs target of `JOBQ_WORKFLOW_BLOBS=ACCOUNT/CONTAINER`; default `{p}-outputs` on the state account. */
  outputs?: OutputsTargetOptions;
  /** Limit of each call (and each SDK try). Default 30 s. Transfers get extra time by size. */
  operationTimeoutInMs?: number;
  /** Attempts of an upload before giving up (outputs then fall back to inline up to 500 KiB). Default 3. */
  uploadAttempts?: number;
  /** First pause between upload attempts; doubles up to {@link uploadMaxRetryDelayInMs}. Default 200 ms. */
  uploadRetryDelayInMs?: number;
  /** Default 2 s. */
  uploadMaxRetryDelayInMs?: number;
  /** A transfer of N bytes may take `operationTimeoutInMs + N / minTransferBytesPerSecond`. Default 1 MiB/s. */
  minTransferBytesPerSecond?: number;
  /** Create the outputs and workflows containers on the first write into them when missing. Default true. */
  createIfMissing?: boolean;
  /** Extra blob pipeline policies (e.g. a transaction counter or, in tests, fault injection). */
  blobPolicies?: readonly RequestPolicyFactory[];
}

/** Defaults of {@link OutputStoreOptions}. */
export const OUTPUT_STORE_DEFAULTS = {
  operationTimeoutInMs: 30_000,
  uploadAttempts: 3,
  uploadRetryDelayInMs: 200,
  uploadMaxRetryDelayInMs: 2_000,
  minTransferBytesPerSecond: 1024 * 1024,
  createIfMissing: true,
} as const;

/** `JOBQ_WORKFLOW_BLOBS`, parsed. */
export interface WorkflowBlobsSpec {
  account: string;
  container: string;
}

/**
 * Parses `JOBQ_WORKFLOW_BLOBS` = `ACCOUNT/CONTAINER` (docs/design.md#queues-and-backends); a malformed value is
 * `invalid-config`. Turning the account into a connection is the caller's business.
 */
export function parseWorkflowBlobs(spec: string): WorkflowBlobsSpec {
  const match = /^([a-z0-9]{3,24})\/([^/]+)$/.exec(spec.trim());
  if (!match || !isValidContainerName(match[2])) {
    throw new JobqError(
      'invalid-config',
      `JOBQ_WORKFLOW_BLOBS "${spec}" must be ACCOUNT/CONTAINER (an account of 3–24 lowercase letters and digits, a container of 3–63 lowercase letters, digits and hyphens)`,
    );
  }
  return { account: match[1] ?? '', container: match[2] };
}

function integerAtLeast(name: string, value: number | undefined, fallback: number, min = 1): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min)
    throw new JobqError('invalid-config', `${name} must be an integer ≥ ${min}, got ${String(value)}`);
  return v;
}

/**
 * Opens the output store. Nothing is sent: containers are created (when allowed) on the first
 * write that finds them missing, so a worker starts even while the outputs account is down.
 */
export function openOutputStore(options: OutputStoreOptions): Promise<AzureOutputStore> {
  return Promise.resolve().then(() => {
    const names = storeNames(options.prefix);
    const operationTimeoutInMs = integerAtLeast(
      'operationTimeoutInMs',
      options.operationTimeoutInMs,
      OUTPUT_STORE_DEFAULTS.operationTimeoutInMs,
      100,
    );
    const io = new BlobIo({
      operationTimeoutInMs,
      uploadAttempts: integerAtLeast('uploadAttempts', options.uploadAttempts, OUTPUT_STORE_DEFAULTS.uploadAttempts),
      uploadRetryDelayInMs: integerAtLeast(
        'uploadRetryDelayInMs',
        options.uploadRetryDelayInMs,
        OUTPUT_STORE_DEFAULTS.uploadRetryDelayInMs,
        0,
      ),
      uploadMaxRetryDelayInMs: integerAtLeast(
        'uploadMaxRetryDelayInMs',
        options.uploadMaxRetryDelayInMs,
        OUTPUT_STORE_DEFAULTS.uploadMaxRetryDelayInMs,
        0,
      ),
      minTransferBytesPerSecond: integerAtLeast(
        'minTransferBytesPerSecond',
        options.minTransferBytesPerSecond,
        OUTPUT_STORE_DEFAULTS.minTransferBytesPerSecond,
      ),
      createIfMissing: options.createIfMissing ?? OUTPUT_STORE_DEFAULTS.createIfMissing,
    });
    const settings = { operationTimeoutInMs, ...(options.blobPolicies ? { blobPolicies: options.blobPolicies } : {}) };
    const state = accountClients(options.connection, settings);
    let outputs: BlobTarget;
    if (options.outputs) {
      const { container, connection } = options.outputs;
      if (!isValidContainerName(container)) {
        throw new JobqError(
          'invalid-config',
          `outputs container "${String(container)}" is not a container name (3–63 lowercase letters, digits and hyphens)`,
        );
      }
      const account = connection ? accountClients(connection, settings) : state;
      outputs = { container, client: account.container(container) };
    } else {
      outputs = { container: names.outputsContainer, client: state.container(names.outputsContainer) };
    }
    return new AzureOutputStore(io, names, {
      outputs,
      workflows: { container: names.workflowsContainer, client: state.container(names.workflowsContainer) },
      defaultOutputs: { container: names.outputsContainer, client: state.container(names.outputsContainer) },
    });
  });
}

/** The containers an {@link AzureOutputStore} writes and reads. */
export interface OutputStoreTargets {
  /** The outputs target: canonical output blobs and stashed files. */
  outputs: BlobTarget;
  /** `{p}-workflows` on the state account: overflow blobs. */
  workflows: BlobTarget;
  /** `{p}-outputs` on the state account (read-only when the outputs target is elsewhere). */
  defaultOutputs: BlobTarget;
}

/** Only the codes that say "the upload did not go through"; anything else reads as `unavailable`. */
const TRANSPORT_CODES = new Set<JobqErrorCode>(['unavailable', 'timeout', 'throttled', 'auth']);

/** JSON-looking text (for telling a damaged inline output from a ref of another form). */
const JSON_START = /^\s*(?:[{["\-0-9]|true\b|false\b|null\b)/;

/**
 * {@link OutputStore} on Azure Blob Storage (docs/design.md#task-message, docs/design.md#outputs). Outputs and stashed files go to
 * the outputs target, overflow blobs to `{p}-workflows`; reads follow only these containers.
 */
export class AzureOutputStore implements OutputStore {
  readonly outputsContainer: string;

  /** @internal use {@link openOutputStore} */
  constructor(
    private readonly io: BlobIo,
    readonly names: StoreNames,
    private readonly targets: OutputStoreTargets,
  ) {
    this.outputsContainer = targets.outputs.container;
  }

  async putOutput(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    json: string,
    options?: PutOutputOptions,
  ): Promise<PutOutputResult> {
    if (typeof json !== 'string') throw new JobqError('invalid-argument', 'an output must be JSON text (a string)');
    const path = this.canonicalPath(workflowId, taskName, attemptNo);
    const what = `the output of task "${taskName}" (attempt ${attemptNo}) in workflow "${workflowId}"`;
    if (json.trim() === '') return { ref: null, placement: 'none', bytes: 0 };
    try {
      JSON.parse(json);
    } catch (error) {
      throw new JobqError('invalid-argument', `${what} is not valid JSON: ${errorMessage(error)}`);
    }
    const bytes = utf8ByteLength(json);
    // Asked once: an output it refuses goes to the blob, and never inline, even when the upload fails.
    const fitsInline = options?.fitsInline?.(json);
    if (fitsInline ?? bytes <= INLINE_OUTPUT_MAX_BYTES) return { ref: json, placement: 'inline', bytes };

    const { outputs } = this.targets;
    const body = Buffer.from(json, 'utf8');
    const md5 = md5Base64(body);
    const blob = describeBlob(outputs.container, path);
    const tally = { attempts: 0 };
    try {
      const headers = { blobContentMD5: Buffer.from(md5, 'base64'), blobContentType: 'application/json' };
      const stored = await this.io.createOnce(outputs, path, body, headers, `upload ${what} to ${blob}`, options, tally);
      if (stored.created) return { ref: blobOutputRef(outputs.container, path, md5), placement: 'blob', bytes };
      // Another delivery of this attempt stored its output first: every completion of the attempt
      // names that blob, whose bytes never change.
      return { ref: blobOutputRef(outputs.container, path, stored.md5), placement: 'blob', bytes: stored.size, adopted: true };
    } catch (error) {
      const failure = isJobqError(error) ? error : new JobqError('internal', `upload ${what} failed: ${String(error)}`);
      if (failure.code === 'aborted') throw failure;
      const { attempts } = tally;
      const afterAttempts = `after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
      if (fitsInline === undefined && bytes <= INLINE_FALLBACK_MAX_BYTES) {
        return {
          ref: json,
          placement: 'inline-fallback',
          bytes,
          warning: `${what} (${bytes} bytes) could not be uploaded to ${blob} ${afterAttempts} (${failure.message}); it is sent inline instead (allowed up to 500 KiB, ${INLINE_FALLBACK_MAX_BYTES} bytes)`,
        };
      }
      const why =
        fitsInline === undefined
          ? `is too large to send inline (limit 500 KiB, ${INLINE_FALLBACK_MAX_BYTES} bytes)`
          : 'does not fit in the completion message, so it cannot be sent inline';
      throw new JobqError(
        TRANSPORT_CODES.has(failure.code) ? failure.code : 'unavailable',
        `${what} is ${bytes} bytes: it could not be uploaded to ${blob} ${afterAttempts} (${failure.message}) and ${why}`,
        {
          retryable: failure.retryable,
          cause: failure,
          details: {
            workflowId,
            taskName,
            attemptNo,
            bytes,
            inlineLimit: fitsInline === undefined ? INLINE_FALLBACK_MAX_BYTES : null,
            attempts,
            uploadError: failure.code,
          },
        },
      );
    }
  }

  async getOutput(outputRef: string | null, options?: OperationOptions): Promise<unknown> {
    if (outputRef === null) return null;
    if (typeof outputRef !== 'string') throw new JobqError('invalid-argument', 'an output ref must be a string');
    const parsed = parseOutputRef(outputRef);
    if (parsed.kind === 'inline') return JSON.parse(parsed.json) as unknown;
    if (parsed.kind === 'unknown') {
      const shown = outputRef.length > 100 ? `${outputRef.slice(0, 100)}…` : outputRef;
      if (!outputRef.startsWith(BLOB_REF_PREFIX) && JSON_START.test(outputRef)) {
        throw new JobqError('corrupt', `inline output "${shown}" is not valid JSON`);
      }
      throw new JobqError('invalid-argument', `"${shown}" is not an output ref (inline JSON, or blob:{container}/{path}[:{md5}])`);
    }
    const target = this.readableContainer(parsed.container);
    if (!target) {
      throw new JobqError(
        'invalid-argument',
        `output ref names container "${parsed.container}", which is not one of this deployment's (${this.knownContainers().join(', ')}); refusing to follow it`,
      );
    }
    checkBlobPath(parsed.path, 'output ref');
    const where = `output ${describeBlob(parsed.container, parsed.path)}`;
    const { bytes, storedMd5 } = await this.io.download(target, parsed.path, `read ${where}`, undefined, options);
    verifyContent(where, md5Base64(bytes), bytes.byteLength, storedMd5, { md5: parsed.md5 });
    const text = decodeUtf8(bytes, where);
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new JobqError('corrupt', `${where} is not valid JSON: ${errorMessage(error)}`);
    }
  }

  putFile(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    data: Uint8Array,
    options?: OperationOptions,
  ): Promise<StashMarker> {
    if (!(data instanceof Uint8Array)) return Promise.reject(new JobqError('invalid-argument', 'stash: data must be a Uint8Array'));
    return putStashBytes(this.io, this.targets.outputs, { workflowId, taskName, attemptNo, filename }, data, options);
  }

  putFileFromPath(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    path: string,
    options?: OperationOptions,
  ): Promise<StashMarker> {
    return putStashFile(this.io, this.targets.outputs, { workflowId, taskName, attemptNo, filename }, path, options);
  }

  getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array> {
    return getStashBytes(this.io, this.targets.outputs, marker, options);
  }

  downloadFileTo(marker: StashMarker, destPath: string, options?: OperationOptions): Promise<void> {
    return downloadStashTo(this.io, this.targets.outputs, marker, destPath, options);
  }

  putUpstreamOverflow(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    compact: CompactUpstreamRefs,
    options?: OperationOptions,
  ): Promise<string> {
    return putOverflow(this.io, this.targets.workflows, workflowId, taskName, attemptNo, compact, options);
  }

  getUpstreamOverflow(location: string, options?: OperationOptions): Promise<CompactUpstreamRefs> {
    return getOverflow(this.io, this.targets.workflows, location, options);
  }

  putTaskLog(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    text: Uint8Array,
    metadata: TaskLogMetadata,
    options?: OperationOptions,
  ): Promise<void> {
    return Promise.resolve().then(() =>
      putTaskLog(this.io, this.targets.outputs, workflowId, taskName, attemptNo, text, metadata, options),
    );
  }

  getTaskLog(workflowId: string, taskName: string, attemptNo: number, options?: GetTaskLogOptions): Promise<TaskLogRead | null> {
    return Promise.resolve().then(() => getTaskLog(this.io, this.targets.outputs, workflowId, taskName, attemptNo, options));
  }

  listTaskLogs(workflowId: string, taskName?: string, options?: OperationOptions): Promise<TaskLogEntry[]> {
    return Promise.resolve().then(() => listTaskLogs(this.io, this.targets.outputs, workflowId, taskName, options));
  }

  /**
   * Deletes the `outputs/{wf}/`, `workflow-files/{wf}/` and `workflow-logs/{wf}/` folders of a
   * workflow in the outputs target, and in `{p}-outputs` of the state account when the target is
   * elsewhere (outputs written before `JOBQ_WORKFLOW_BLOBS` was set are still read from there).
   */
  async deleteWorkflowOutputs(workflowId: string, options?: OperationOptions): Promise<number> {
    const folders = outputFolders(workflowId);
    const { outputs, defaultOutputs } = this.targets;
    const targets = outputs.client.url === defaultOutputs.client.url ? [outputs] : [outputs, defaultOutputs];
    let deleted = 0;
    for (const target of targets) {
      deleted += await deleteBlobFolders(
        target.client,
        folders,
        { timeoutInMs: this.io.settings.operationTimeoutInMs, concurrency: DELETE_CONCURRENCY },
        options,
      );
    }
    return deleted;
  }

  /** The canonical blob path of the output of a task attempt, or `invalid-argument`. */
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

  /** The containers a ref may name: the outputs target first (it wins a name clash), then the state account's. */
  private readableContainer(container: string): BlobTarget | undefined {
    const { outputs, workflows, defaultOutputs } = this.targets;
    return [outputs, workflows, defaultOutputs].find((t) => t.container === container);
  }

  private knownContainers(): string[] {
    const { outputs, workflows, defaultOutputs } = this.targets;
    return [...new Set([outputs.container, workflows.container, defaultOutputs.container])];
  }
}
