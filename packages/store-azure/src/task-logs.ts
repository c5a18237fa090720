import { isValidWorkflowId } from '@jobq/dag-core';
import {
  JobqError,
  TASK_LOG_FOLDER,
  isJobqError,
  parseTaskLogName,
  taskLogBlobPath,
  taskLogMetadataFromBlob,
  taskLogMetadataToBlob,
  type GetTaskLogOptions,
  type OperationOptions,
  type TaskLogEntry,
  type TaskLogMetadata,
  type TaskLogRead,
} from '@jobq/ports';
import { storeCall } from './errors';
import { bodyStream, checkBlobPath, describeBlob, readAll, type BlobIo, type BlobTarget } from './output-blob';

/**
 * Task logs in the outputs target (docs/observability.md#task-logs):
 * `workflow-logs/{wf}/{task}/{attempt}.log`, written with one Put Blob each time (no retries: the
 * worker bounds the call and only warns when it fails).
 */

function logPath(workflowId: string, taskName: string, attemptNo: number): string {
  if (!isValidWorkflowId(workflowId)) throw new JobqError('invalid-argument', `"${String(workflowId).slice(0, 200)}" is not a workflow id`);
  if (typeof taskName !== 'string' || taskName === '') throw new JobqError('invalid-argument', 'a task log needs a task name');
  if (!Number.isSafeInteger(attemptNo) || attemptNo < 1)
    throw new JobqError('invalid-argument', `attempt ${String(attemptNo)} is not a number ≥ 1`);
  const path = taskLogBlobPath(workflowId, taskName, attemptNo);
  checkBlobPath(path, `log of task "${taskName}"`);
  return path;
}

export async function putTaskLog(
  io: BlobIo,
  target: BlobTarget,
  workflowId: string,
  taskName: string,
  attemptNo: number,
  text: Uint8Array,
  metadata: TaskLogMetadata,
  options?: OperationOptions,
): Promise<void> {
  const path = logPath(workflowId, taskName, attemptNo);
  if (!(text instanceof Uint8Array)) throw new JobqError('invalid-argument', 'a task log must be bytes (a Uint8Array)');
  const operation = `upload the log of task "${taskName}" (attempt ${attemptNo}) to ${describeBlob(target.container, path)}`;
  const blob = target.client.getBlockBlobClient(path);
  await io.writeInto(target, options, () =>
    storeCall({ operation }, io.transferLimit(text.byteLength), options, async (abortSignal) => {
      await blob.upload(text, text.byteLength, {
        abortSignal,
        metadata: taskLogMetadataToBlob(metadata),
        blobHTTPHeaders: { blobContentType: 'text/plain; charset=utf-8' },
      });
    }),
  );
}

export async function getTaskLog(
  io: BlobIo,
  target: BlobTarget,
  workflowId: string,
  taskName: string,
  attemptNo: number,
  options: GetTaskLogOptions = {},
): Promise<TaskLogRead | null> {
  const path = logPath(workflowId, taskName, attemptNo);
  const operation = `read the log of task "${taskName}" (attempt ${attemptNo}) from ${describeBlob(target.container, path)}`;
  const blob = target.client.getBlobClient(path);
  const offset = Math.max(0, options.offset ?? 0);
  const count = options.count === undefined ? undefined : Math.max(0, options.count);
  const conditions = options.ifNoneMatch !== undefined ? { ifNoneMatch: options.ifNoneMatch } : undefined;
  try {
    if (count === 0) throw Object.assign(new Error('empty range'), { emptyRange: true });
    return await storeCall({ operation }, io.transferLimit(count), options, async (abortSignal) => {
      const response = await blob.download(offset, count, { abortSignal, ...(conditions ? { conditions } : {}) });
      const etag = response.etag ?? '';
      if (response._response.status === 304) return { notModified: true as const, etag: options.ifNoneMatch ?? etag };
      const bytes = await readAll(bodyStream(response.readableStreamBody, operation, abortSignal));
      const size = rangeTotal(response.contentRange) ?? response.contentLength ?? bytes.byteLength;
      return { notModified: false as const, bytes, size, etag, metadata: taskLogMetadataFromBlob(response.metadata) };
    });
  } catch (error) {
    const status = isJobqError(error) ? error.details.statusCode : undefined;
    if (isJobqError(error, 'not-found')) return null;
    if (status === 304 && options.ifNoneMatch !== undefined) return { notModified: true, etag: options.ifNoneMatch };
    // A range at or past the end (416), or an empty one: no bytes, but the log's size and etag.
    if (status === 416 || (error as { emptyRange?: boolean }).emptyRange) {
      const properties = await storeCall({ operation, notFound: 'not-found' }, io.settings.operationTimeoutInMs, options, (abortSignal) =>
        blob.getProperties({ abortSignal }),
      ).catch((e: unknown) => {
        if (isJobqError(e, 'not-found')) return null;
        throw e;
      });
      if (properties === null) return null;
      const etag = properties.etag ?? '';
      if (options.ifNoneMatch !== undefined && options.ifNoneMatch === etag) return { notModified: true, etag };
      return {
        notModified: false,
        bytes: new Uint8Array(0),
        size: properties.contentLength ?? 0,
        etag,
        metadata: taskLogMetadataFromBlob(properties.metadata),
      };
    }
    throw error;
  }
}

function rangeTotal(contentRange: string | undefined): number | undefined {
  const match = contentRange ? /\/(\d+)$/.exec(contentRange) : null;
  return match ? Number(match[1]) : undefined;
}

export async function listTaskLogs(
  io: BlobIo,
  target: BlobTarget,
  workflowId: string,
  taskName: string | undefined,
  options?: OperationOptions,
): Promise<TaskLogEntry[]> {
  if (!isValidWorkflowId(workflowId)) throw new JobqError('invalid-argument', `"${String(workflowId).slice(0, 200)}" is not a workflow id`);
  const folder = `${TASK_LOG_FOLDER}${workflowId}/`;
  const prefix = taskName === undefined ? folder : `${folder}${taskName}/`;
  const operation = `list the task logs under ${describeBlob(target.container, prefix)}`;
  const entries: TaskLogEntry[] = [];
  try {
    await storeCall({ operation }, io.settings.operationTimeoutInMs * 4, options, async (abortSignal) => {
      // One task: a delimiter listing, so the logs of task `a/b` (under `a/b/`) are not `a`'s.
      const items =
        taskName === undefined
          ? target.client.listBlobsFlat({ prefix, includeMetadata: true, abortSignal })
          : target.client.listBlobsByHierarchy('/', { prefix, includeMetadata: true, abortSignal });
      for await (const item of items) {
        if ('kind' in item && item.kind === 'prefix') continue;
        const name = parseTaskLogName(item.name.slice(folder.length));
        if (name === null || (taskName !== undefined && name.taskName !== taskName)) continue;
        entries.push({ ...name, size: item.properties.contentLength ?? 0, metadata: taskLogMetadataFromBlob(item.metadata) });
      }
    });
  } catch (error) {
    if (isJobqError(error, 'not-found') && error.details.serviceCode === 'ContainerNotFound') return [];
    throw error;
  }
  return entries.sort((a, b) => (a.taskName < b.taskName ? -1 : a.taskName > b.taskName ? 1 : a.attemptNo - b.attemptNo));
}
