import type { ContainerClient } from '@azure/storage-blob';
import { isValidWorkflowId } from '@jobq/dag-core';
import { OUTPUT_BLOB_PREFIX, STASH_BLOB_PREFIX } from '@jobq/dag-core/wire';
import { JobqError, isJobqError, mapLimit } from '@jobq/ports';
import { storeCall, type CallOptions } from './errors';
import { definitionFolder, stateFolder, upstreamFolder } from './runtime-layout';

/**
 * The folders that hold a workflow's blobs, for purging it. Every one is a fixed engine folder
 * followed by `{workflow_id}/`: a workflow id holds no `/`, so the folder of workflow `a` never
 * contains a blob of workflow `a.b` (a bare `a` prefix would), and a workflow named like an engine
 * folder (`upstream`, `outputs`) has its own `upstream/upstream/`, never the whole folder.
 */

/** The workflows container's folders of a workflow, its head `{wf}.json` aside: snapshots and logs, definitions, upstream overflow blobs. */
export function stateFolders(workflowId: string): string[] {
  const id = checkedId(workflowId);
  return [stateFolder(id), definitionFolder(id), upstreamFolder(id)];
}

/** Task log blobs (written by workers) in the outputs target. */
export const TASK_LOG_BLOB_PREFIX = 'workflow-logs/';

/** The outputs target's folders of a workflow: output blobs, stashed files, task logs. */
export function outputFolders(workflowId: string): string[] {
  const id = checkedId(workflowId);
  return [`${OUTPUT_BLOB_PREFIX}${id}/`, `${STASH_BLOB_PREFIX}${id}/`, `${TASK_LOG_BLOB_PREFIX}${id}/`];
}

function checkedId(workflowId: string): string {
  if (!isValidWorkflowId(workflowId)) {
    throw new JobqError(
      'invalid-argument',
      `"${String(workflowId).slice(0, 200)}" is not a workflow id (1–128 letters, digits, ".", "_" and "-", starting with a letter or digit)`,
    );
  }
  return workflowId;
}

/** Settings of {@link deleteBlobFolders}. */
export interface FolderDeleteSettings {
  timeoutInMs: number;
  /** Deletes in flight at once. */
  concurrency: number;
}

/** Blob names per listing page. */
const LIST_PAGE_SIZE = 5_000;

/**
 * Deletes every blob under each folder (a prefix that must end in `/`), snapshots included, and
 * returns how many it deleted. A missing container holds nothing; a blob already gone is not counted.
 */
export async function deleteBlobFolders(
  container: ContainerClient,
  folders: readonly string[],
  settings: FolderDeleteSettings,
  options: CallOptions | undefined,
): Promise<number> {
  let deleted = 0;
  for (const folder of folders) {
    if (!folder.endsWith('/') || folder === '/')
      throw new JobqError('internal', `refusing to delete blobs under "${folder}": a folder ends in "/"`);
    deleted += await deleteFolder(container, folder, settings, options);
  }
  return deleted;
}

async function deleteFolder(
  container: ContainerClient,
  folder: string,
  settings: FolderDeleteSettings,
  options: CallOptions | undefined,
): Promise<number> {
  const where = `"${container.containerName}/${folder}"`;
  let deleted = 0;
  let token: string | undefined;
  do {
    let page: { names: string[]; next: string | undefined };
    try {
      page = await storeCall({ operation: `list the blobs under ${where}` }, settings.timeoutInMs, options, async (abortSignal) => {
        const iterator = container
          .listBlobsFlat({ prefix: folder, abortSignal })
          .byPage({ maxPageSize: LIST_PAGE_SIZE, ...(token ? { continuationToken: token } : {}) });
        const first = await iterator.next();
        if (first.done) return { names: [], next: undefined };
        const names = first.value.segment.blobItems.map((b) => b.name).filter((name) => name.startsWith(folder));
        return { names, next: first.value.continuationToken || undefined };
      });
    } catch (error) {
      if (isJobqError(error, 'not-found')) return deleted; // no container: nothing to delete
      throw error;
    }
    await mapLimit(page.names, settings.concurrency, async (name) => {
      const response = await storeCall(
        { operation: `delete blob "${container.containerName}/${name}"` },
        settings.timeoutInMs,
        options,
        (abortSignal) => container.getBlobClient(name).deleteIfExists({ deleteSnapshots: 'include', abortSignal }),
      );
      if (response.succeeded) deleted++;
    });
    token = page.next;
  } while (token !== undefined);
  return deleted;
}
