import { randomUUID, createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { isBase64Md5, stashBlobName, STASH_BLOB_PREFIX, type StashMarker } from '@jobq/dag-core/wire';
import { errorMessage, isJobqError, JobqError } from '@jobq/ports';
import { storeCall, type CallOptions } from './errors';
import {
  UPLOAD_BLOCK_BYTES,
  UPLOAD_CONCURRENCY,
  bodyStream,
  checkBlobPath,
  describeBlob,
  md5Base64,
  storedMd5Of,
  verifyContent,
  type BlobIo,
  type BlobTarget,
} from './output-blob';

/**
 * File stash (docs/design.md#outputs): files uploaded by a task attempt to
 * `workflow-files/{workflow_id}/{task}/{attempt}/{filename}` in the outputs target, referred to by
 * a marker `{ blobName, md5, size }`, read back with size and md5 verified. Markers written before
 * files were keyed by attempt (`workflow-files/{workflow_id}/{task}/{filename}`) read the same way.
 */

/** Who stashes a file, and under which name. */
export interface StashedName {
  workflowId: string;
  taskName: string;
  attemptNo: number;
  filename: string;
}

const OCTET_STREAM = 'application/octet-stream';

/** The blob name of a stashed file, or `invalid-argument`. */
function blobNameOf({ workflowId, taskName, attemptNo, filename }: StashedName): string {
  const name = stashBlobName(workflowId, taskName, attemptNo, filename);
  if (!name.ok) throw new JobqError('invalid-argument', name.error);
  checkBlobPath(name.value, `stash file "${filename}" of task "${taskName}"`);
  return name.value;
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

/** Uploads bytes as a stashed file. */
export async function putStashBytes(
  io: BlobIo,
  target: BlobTarget,
  name: StashedName,
  data: Uint8Array,
  options: CallOptions | undefined,
): Promise<StashMarker> {
  const blobName = blobNameOf(name);
  const md5 = md5Base64(data);
  const headers = { blobContentMD5: Buffer.from(md5, 'base64'), blobContentType: OCTET_STREAM };
  await io.uploadBytes(target, blobName, data, headers, `stash file ${describeBlob(target.container, blobName)}`, options);
  return { blobName, md5, size: data.byteLength };
}

/** Hashes a local file as a stream; local errors are `invalid-argument` naming the path. */
async function hashFile(path: string): Promise<{ md5: string; size: number; mtimeMs: number }> {
  const before = await localStat(path);
  const hash = createHash('md5');
  try {
    await pipeline(createReadStream(path), hash);
  } catch (error) {
    throw localError(`read "${path}"`, error);
  }
  return { md5: hash.digest('base64'), size: before.size, mtimeMs: before.mtimeMs };
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

function localError(what: string, error: unknown): JobqError {
  if (isJobqError(error)) return error;
  const code = (error as { code?: unknown }).code;
  const label = typeof code === 'string' ? code : errorMessage(error);
  return new JobqError('invalid-argument', `cannot ${what}: ${label}`, { cause: error });
}

/**
 * Streams a local file to the stash: hashes it first (the md5 is stored as the blob's
 * Content-MD5 when the upload commits), uploads it in blocks, and refuses the result if the file
 * changed meanwhile (size or modification time).
 */
export async function putStashFile(
  io: BlobIo,
  target: BlobTarget,
  name: StashedName,
  path: string,
  options: CallOptions | undefined,
): Promise<StashMarker> {
  const blobName = blobNameOf(name);
  const before = await hashFile(path);
  const blob = target.client.getBlockBlobClient(blobName);
  const operation = `stash file ${describeBlob(target.container, blobName)}`;
  await io.withAttempts(options, () =>
    io.writeInto(target, options, () =>
      storeCall({ operation }, io.transferLimit(before.size), options, async (abortSignal) => {
        await blob.uploadFile(path, {
          abortSignal,
          blobHTTPHeaders: { blobContentMD5: Buffer.from(before.md5, 'base64'), blobContentType: OCTET_STREAM },
          blockSize: UPLOAD_BLOCK_BYTES,
          maxSingleShotSize: UPLOAD_BLOCK_BYTES,
          concurrency: UPLOAD_CONCURRENCY,
        });
      }),
    ),
  );
  const after = await localStat(path);
  if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
    throw new JobqError('invalid-argument', `stash: "${path}" changed while it was being uploaded; stash it again once it is complete`);
  }
  return { blobName, md5: before.md5, size: before.size };
}

/** Downloads a stashed file into memory, verified against its marker. */
export async function getStashBytes(
  io: BlobIo,
  target: BlobTarget,
  marker: StashMarker,
  options: CallOptions | undefined,
): Promise<Uint8Array> {
  checkMarker(marker);
  const where = `stashed file ${describeBlob(target.container, marker.blobName)}`;
  const { bytes, storedMd5 } = await io.download(target, marker.blobName, `download ${where}`, marker.size, options);
  verifyContent(where, md5Base64(bytes), bytes.byteLength, storedMd5, marker);
  return bytes;
}

/**
 * Streams a stashed file into a temporary file next to `destPath` (same directory, so the final
 * rename is atomic), verifies size and md5, then renames it over `destPath`. The temporary file
 * is removed on every failure.
 */
export async function downloadStashTo(
  io: BlobIo,
  target: BlobTarget,
  marker: StashMarker,
  destPath: string,
  options: CallOptions | undefined,
): Promise<void> {
  checkMarker(marker);
  const where = `stashed file ${describeBlob(target.container, marker.blobName)}`;
  const temp = join(dirname(destPath), `.${basename(destPath)}.${randomUUID().slice(0, 8)}.jobq-part`);
  let handle;
  try {
    handle = await open(temp, 'wx');
  } catch (error) {
    throw localError(`write next to "${destPath}"`, error);
  }
  try {
    const blob = target.client.getBlobClient(marker.blobName);
    const result = await storeCall({ operation: `download ${where}` }, io.transferLimit(marker.size), options, async (abortSignal) => {
      const response = await blob.download(0, undefined, { abortSignal, maxRetryRequests: 3 });
      const hash = createHash('md5');
      let size = 0;
      // Tells a failure of the download (translated by storeCall) from one of the local write.
      let downloadFailed = false;
      try {
        await pipeline(
          bodyStream(response.readableStreamBody, `download ${where}`, abortSignal),
          async function* (source: AsyncIterable<Buffer>) {
            try {
              for await (const chunk of source) {
                hash.update(chunk);
                size += chunk.byteLength;
                yield chunk;
              }
            } catch (error) {
              downloadFailed = true;
              throw error;
            }
          },
          handle.createWriteStream(),
        );
      } catch (error) {
        if (downloadFailed) throw error;
        throw localError(`write "${temp}"`, error);
      }
      return { md5: hash.digest('base64'), size, storedMd5: storedMd5Of(response.blobContentMD5 ?? response.contentMD5) };
    });
    verifyContent(where, result.md5, result.size, result.storedMd5, marker);
    try {
      await rename(temp, destPath);
    } catch (error) {
      throw localError(`replace "${destPath}"`, error);
    }
  } catch (error) {
    await handle.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close().catch(() => undefined);
}
