import { createHash } from 'node:crypto';
import { Readable, addAbortSignal } from 'node:stream';
import type { BlobHTTPHeaders, BlobRequestConditions, ContainerClient } from '@azure/storage-blob';
import { JobqError, isJobqError } from '@jobq/ports';
import { storeCall, type CallOptions } from './errors';

/**
 * Blob plumbing shared by outputs, stashed files and overflow blobs: md5s, blob-path safety,
 * lazy container creation, upload attempts with back-off, verified downloads. Every SDK call goes
 * through {@link storeCall}.
 */

/** One container the store reads or writes, with the client of the account it lives on. */
export interface BlobTarget {
  container: string;
  client: ContainerClient;
}

/** Settings of {@link BlobIo}. */
export interface BlobIoSettings {
  /** Limit of a small call (and of the fixed part of a transfer). */
  operationTimeoutInMs: number;
  /** A transfer of N bytes may take `operationTimeoutInMs + N / minTransferBytesPerSecond`. */
  minTransferBytesPerSecond: number;
  /** Create a missing container on the first write into it. */
  createIfMissing: boolean;
  /** Attempts of an upload (each with the SDK's own short retries). */
  uploadAttempts: number;
  /** First pause between upload attempts; doubles up to {@link uploadMaxRetryDelayInMs}. */
  uploadRetryDelayInMs: number;
  uploadMaxRetryDelayInMs: number;
}

/** Size assumed for the time limit of a download whose size is not known in advance. */
const UNKNOWN_DOWNLOAD_BYTES = 64 * 1024 * 1024;

/** Blocks of parallel uploads: small enough that each request fits the per-try time limit. */
export const UPLOAD_BLOCK_BYTES = 4 * 1024 * 1024;
export const UPLOAD_CONCURRENCY = 4;

/** The base64 MD5 of bytes, as in a blob's Content-MD5. */
export function md5Base64(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('base64');
}

/** `blob "container/path"`, for messages. */
export function describeBlob(container: string, path: string): string {
  return `blob "${container}/${path}"`;
}

/**
 * Refuses blob paths the SDK would not send as they are: `.` and `..` segments are collapsed by
 * URL parsing (`wf/../x` becomes `x`, and a leading `..` would leave the container), `\` is read
 * as `/`, and Azure strips a trailing `.` or `/`. Longer than 1 024 characters is refused too.
 */
export function checkBlobPath(path: string, what: string): void {
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

/** Resolves after `ms`, or rejects with `aborted` when the caller's signal fires. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new JobqError('aborted', 'aborted by the caller'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new JobqError('aborted', 'aborted by the caller'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The body of a Node download response as a Readable that ends with an AbortError when `signal` fires. */
export function bodyStream(body: NodeJS.ReadableStream | undefined, operation: string, signal: AbortSignal): Readable {
  if (!(body instanceof Readable)) throw new JobqError('internal', `${operation} failed: the download returned no Node stream`);
  return addAbortSignal(signal, body);
}

/** Reads a whole stream into one buffer. */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/** What a download is checked against. */
export interface Expected {
  /** The md5 the caller holds (from a ref or marker); null/undefined: trust the stored Content-MD5. */
  md5?: string | null;
  /** The size the caller holds (from a marker). */
  size?: number;
}

/**
 * Checks downloaded content: its size (when expected), that the stored Content-MD5 is the one the
 * caller expects, and that the content hashes to both. Content that cannot be checked at all (no
 * expected md5 and no stored Content-MD5) is refused too. `actualMd5` and `actualSize` are of the
 * bytes received.
 */
export function verifyContent(
  where: string,
  actualMd5: string,
  actualSize: number,
  storedMd5: string | undefined,
  expected: Expected,
): void {
  const corrupt = (why: string): never => {
    throw new JobqError('corrupt', `${where} ${why}`, {
      details: {
        actualMd5,
        actualSize,
        storedMd5: storedMd5 ?? null,
        expectedMd5: expected.md5 ?? null,
        expectedSize: expected.size ?? null,
      },
    });
  };
  if (expected.size !== undefined && actualSize !== expected.size) corrupt(`has ${actualSize} bytes; ${expected.size} were expected`);
  if (expected.md5 && storedMd5 !== undefined && storedMd5 !== expected.md5) {
    corrupt(`has Content-MD5 ${storedMd5} but ${expected.md5} was expected (the blob was replaced or damaged)`);
  }
  if (storedMd5 !== undefined && actualMd5 !== storedMd5)
    corrupt(`content hashes to ${actualMd5}, not to its stored Content-MD5 ${storedMd5}`);
  if (expected.md5 && actualMd5 !== expected.md5) corrupt(`content hashes to ${actualMd5}, not to the expected ${expected.md5}`);
  if (!expected.md5 && storedMd5 === undefined) corrupt('has no Content-MD5 to verify its content against');
}

/** How many attempts an upload made (filled in by {@link BlobIo.withAttempts}). */
export interface UploadTally {
  attempts: number;
}

/** Bytes and the stored Content-MD5 of a downloaded blob. */
export interface Downloaded {
  bytes: Buffer;
  storedMd5: string | undefined;
}

/** Blob calls with the store's time limits, lazy container creation and upload attempts. */
export class BlobIo {
  private readonly ensured = new Map<string, Promise<void>>();

  constructor(readonly settings: BlobIoSettings) {}

  /** Time limit of a transfer of `bytes` (unknown: a generous default). */
  transferLimit(bytes: number | undefined): number {
    const size = bytes ?? UNKNOWN_DOWNLOAD_BYTES;
    return this.settings.operationTimeoutInMs + Math.ceil((size * 1000) / this.settings.minTransferBytesPerSecond);
  }

  /**
   * Creates a container if it does not exist; concurrent callers share one call, which is bounded
   * by the time limit but not by any one caller's signal (one caller's abort must not fail the others).
   */
  ensureContainer(target: BlobTarget): Promise<void> {
    const key = `${target.client.url}`;
    let pending = this.ensured.get(key);
    if (!pending) {
      pending = storeCall(
        { operation: `create container "${target.container}"` },
        this.settings.operationTimeoutInMs,
        undefined,
        async (abortSignal) => {
          await target.client.createIfNotExists({ abortSignal });
        },
      );
      this.ensured.set(key, pending);
      // A failed creation may be retried by a later write.
      pending.catch(() => this.ensured.delete(key));
    }
    return pending;
  }

  /**
   * Runs a write; when it fails because the container is missing (and creating is allowed),
   * creates the container and runs it once more.
   */
  async writeInto<T>(target: BlobTarget, options: CallOptions | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (!this.settings.createIfMissing || !isJobqError(error, 'not-found') || error.details.serviceCode !== 'ContainerNotFound')
        throw error;
      this.ensured.delete(`${target.client.url}`);
      if (options?.abortSignal?.aborted) throw new JobqError('aborted', `create container "${target.container}" was aborted by the caller`);
      await this.ensureContainer(target);
      return await write();
    }
  }

  /**
   * Runs an upload up to `uploadAttempts` times, pausing `uploadRetryDelayInMs` (doubling, capped)
   * between attempts. Only retryable failures are tried again; the caller's abort is never retried.
   * Throws the last failure; `tally.attempts` says how many attempts were made.
   */
  async withAttempts<T>(options: CallOptions | undefined, upload: () => Promise<T>, tally: UploadTally = { attempts: 0 }): Promise<T> {
    let delay = this.settings.uploadRetryDelayInMs;
    for (let attempt = 1; ; attempt++) {
      tally.attempts = attempt;
      try {
        return await upload();
      } catch (error) {
        const retry = isJobqError(error) && error.retryable && attempt < this.settings.uploadAttempts;
        if (!retry) throw error;
        await pause(delay, options?.abortSignal);
        delay = Math.min(delay * 2, this.settings.uploadMaxRetryDelayInMs);
      }
    }
  }

  /** Uploads bytes in one request (or blocks, when big) with their Content-MD5 and content type. */
  async uploadBytes(
    target: BlobTarget,
    path: string,
    bytes: Uint8Array,
    headers: BlobHTTPHeaders,
    operation: string,
    options: CallOptions | undefined,
    tally?: UploadTally,
  ): Promise<void> {
    await this.withAttempts(
      options,
      () => this.writeInto(target, options, () => this.putData(target, path, bytes, headers, operation, options)),
      tally,
    );
  }

  /**
   * Creates a blob that is written once and never replaced: like {@link uploadBytes}, but the
   * single request, or the commit of the block list, carries If-None-Match `*` (blocks staged for a
   * blob that turns out to exist are never committed). When the blob is already there (another
   * writer created it first, or an earlier try of ours whose answer was lost), it is left as it is
   * and its stored Content-MD5 and size are returned. A blob found without a Content-MD5 is
   * `corrupt`.
   */
  async createOnce(
    target: BlobTarget,
    path: string,
    bytes: Uint8Array,
    headers: BlobHTTPHeaders,
    operation: string,
    options: CallOptions | undefined,
    tally?: UploadTally,
  ): Promise<{ created: true } | { created: false; md5: string; size: number }> {
    const where = describeBlob(target.container, path);
    return this.withAttempts(
      options,
      () =>
        this.writeInto(target, options, async () => {
          try {
            await this.putData(target, path, bytes, headers, operation, options, { ifNoneMatch: '*' });
            return { created: true as const };
          } catch (error) {
            if (!isAlreadyThere(error)) throw error;
          }
          let found;
          try {
            found = await storeCall(
              { operation: `read the properties of ${where}` },
              this.settings.operationTimeoutInMs,
              options,
              (abortSignal) => target.client.getBlobClient(path).getProperties({ abortSignal }),
            );
          } catch (error) {
            // Azurite refuses the create while another writer's blocks are staged but not yet
            // committed: the blob is on its way; try again after the pause.
            if (!isJobqError(error, 'not-found')) throw error;
            throw new JobqError('unavailable', `${operation} failed: ${where} is being written by another writer`, { retryable: true });
          }
          const md5 = storedMd5Of(found.contentMD5);
          if (md5 === undefined) throw new JobqError('corrupt', `${operation} failed: ${where} is already there, without a Content-MD5`);
          return { created: false as const, md5, size: found.contentLength ?? 0 };
        }),
      tally,
    );
  }

  /** One upload call (single request, or blocks and their commit) under the transfer time limit. */
  private putData(
    target: BlobTarget,
    path: string,
    bytes: Uint8Array,
    headers: BlobHTTPHeaders,
    operation: string,
    options: CallOptions | undefined,
    conditions?: BlobRequestConditions,
  ): Promise<void> {
    const blob = target.client.getBlockBlobClient(path);
    return storeCall({ operation }, this.transferLimit(bytes.byteLength), options, async (abortSignal) => {
      await blob.uploadData(bytes, {
        abortSignal,
        blobHTTPHeaders: headers,
        blockSize: UPLOAD_BLOCK_BYTES,
        maxSingleShotSize: UPLOAD_BLOCK_BYTES,
        concurrency: UPLOAD_CONCURRENCY,
        ...(conditions ? { conditions } : {}),
      });
    });
  }

  /** Downloads a whole blob with its stored Content-MD5 (the SDK's bytes are checked by the caller). */
  download(
    target: BlobTarget,
    path: string,
    operation: string,
    expectedSize: number | undefined,
    options: CallOptions | undefined,
  ): Promise<Downloaded> {
    const blob = target.client.getBlobClient(path);
    return storeCall({ operation }, this.transferLimit(expectedSize), options, async (abortSignal) => {
      const response = await blob.download(0, undefined, { abortSignal, maxRetryRequests: 3 });
      const bytes = await readAll(bodyStream(response.readableStreamBody, operation, abortSignal));
      return { bytes, storedMd5: storedMd5Of(response.blobContentMD5 ?? response.contentMD5) };
    });
  }
}

/**
 * True for the answer to a create with If-None-Match `*` when the blob exists: 409
 * `BlobAlreadyExists` (the service's and Azurite's answer, to a single put and to a block-list
 * commit alike); a 412 (failed precondition) is read the same way.
 */
function isAlreadyThere(error: unknown): boolean {
  if (!isJobqError(error)) return false;
  const { statusCode, serviceCode } = error.details;
  return serviceCode === 'BlobAlreadyExists' || statusCode === 412;
}

/**
 * A stored Content-MD5 (bytes) as base64; undefined when absent or empty. Pass the download's
 * `blobContentMD5 ?? contentMD5`: a whole-blob GET returns the stored md5 as Content-MD5, a range
 * GET as x-ms-blob-content-md5.
 */
export function storedMd5Of(contentMD5: Uint8Array | undefined): string | undefined {
  return contentMD5 && contentMD5.byteLength > 0 ? Buffer.from(contentMD5).toString('base64') : undefined;
}

/** Strict UTF-8 decoding: bytes that are not UTF-8 are `corrupt`. */
export function decodeUtf8(bytes: Uint8Array, where: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new JobqError('corrupt', `${where} is not UTF-8 text`);
  }
}
