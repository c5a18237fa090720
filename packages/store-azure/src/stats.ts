import type { ContainerClient } from '@azure/storage-blob';
import { JobqError, isJobqError } from '@jobq/ports';
import { storeCall, type CallOptions } from './errors';
import type { CoordinatorStats } from '@jobq/ports';

/**
 * The coordinator's counters (docs/design.md#the-coordinator): a JSON blob, `_coordinator.stats.json` in the workflows
 * container, replaced every 10 s and read by `doctor`. It is not the lock blob, so writing it needs
 * no lease id while the coordinator holds the lease.
 */

/** Replaces the stats document; `invalid-argument` for anything but a JSON object. */
export async function writeStats(
  container: ContainerClient,
  blobName: string,
  stats: CoordinatorStats,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<void> {
  if (typeof stats !== 'object' || stats === null || Array.isArray(stats)) {
    throw new JobqError('invalid-argument', 'coordinator stats must be a JSON object');
  }
  const body = Buffer.from(JSON.stringify(stats), 'utf8');
  await storeCall({ operation: 'write the coordinator stats' }, timeoutInMs, options, (abortSignal) =>
    container
      .getBlockBlobClient(blobName)
      .upload(body, body.length, { blobHTTPHeaders: { blobContentType: 'application/json' }, abortSignal }),
  );
}

/** The last stats document, or null when none was written; `corrupt` when it is not a JSON object. */
export async function readStats(
  container: ContainerClient,
  blobName: string,
  timeoutInMs: number,
  options: CallOptions | undefined,
): Promise<CoordinatorStats | null> {
  let bytes: Buffer;
  try {
    bytes = await storeCall({ operation: 'read the coordinator stats' }, timeoutInMs, options, (abortSignal) =>
      container.getBlockBlobClient(blobName).downloadToBuffer(0, undefined, { abortSignal }),
    );
  } catch (error) {
    if (isJobqError(error, 'not-found')) return null;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new JobqError('corrupt', 'the coordinator stats blob is not a JSON object');
  }
  return json as CoordinatorStats;
}
