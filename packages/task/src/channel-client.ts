import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { makeStashMarker, parseStashMarker, type StashMarker } from '@jobq/dag-core/wire';
import {
  JobqError,
  TASK_CHANNEL_MAX_JSON_BYTES as MAX_JSON_REQUEST_BYTES,
  TASK_CHANNEL_ROUTES as CHANNEL_ROUTES,
  isJobqError,
  errorMessage,
  taskChannelError as errorFromAnswer,
  type OperationOptions,
  type OutputStore,
} from '@jobq/ports';

/** What the task helpers need of storage: the output store, or the worker's task channel. */
export type TaskStorage = Pick<OutputStore, 'getOutput' | 'getFile' | 'downloadFileTo' | 'putFileFromPath'>;

type Body = { json: unknown } | { file: string; size: number };

function localError(what: string, error: unknown): JobqError {
  if (isJobqError(error)) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new JobqError('invalid-argument', `cannot ${what}: ${code ?? errorMessage(error)}`, {
    cause: error,
  });
}

function verify(marker: StashMarker, md5: string, size: number): void {
  const where = `stashed file ${marker.blobName}`;
  if (size !== marker.size) throw new JobqError('corrupt', `${where} arrived with ${size} bytes; ${marker.size} were expected`);
  if (md5 !== marker.md5) throw new JobqError('corrupt', `${where} arrived hashing to ${md5}, not to the expected ${marker.md5}`);
}

/**
 * The task helpers' side of the worker's task channel (`JOBQ_TASK_SOCKET`, `JOBQ_TASK_TOKEN`): the
 * reads and writes a task may do, done by its worker. Every failure is a `JobqError`, with the
 * worker's code and message when the worker refused or failed the request.
 */
export class TaskChannelClient implements TaskStorage {
  constructor(
    private readonly socketPath: string,
    private readonly token: string,
  ) {}

  /** The output behind `ref` (one of this task's upstream refs), read by the worker. */
  async getOutput(ref: string | null, options?: OperationOptions): Promise<unknown> {
    if (ref === null) return null;
    const answer = await this.call('POST', CHANNEL_ROUTES.output, { json: { ref } }, options);
    const body = (await this.readJson(answer, options)) as { value?: unknown } | null;
    return body?.value ?? null;
  }

  /** The bytes of a file stashed in a parent's output, size and md5 checked. */
  async getFile(marker: StashMarker, options?: OperationOptions): Promise<Uint8Array> {
    const answer = await this.call('POST', CHANNEL_ROUTES.file, { json: { marker: makeStashMarker(marker) } }, options);
    const chunks: Buffer[] = [];
    const hash = createHash('md5');
    await this.receive(answer, options, async (source) => {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        hash.update(chunk);
        chunks.push(chunk);
      }
    });
    const bytes = Buffer.concat(chunks);
    verify(marker, hash.digest('base64'), bytes.byteLength);
    return bytes;
  }

  /** Writes a file stashed in a parent's output to `destPath`, through a checked temporary file. */
  async downloadFileTo(marker: StashMarker, destPath: string, options?: OperationOptions): Promise<void> {
    const temp = join(dirname(destPath), `.${basename(destPath)}.${randomBytes(4).toString('hex')}.jobq-part`);
    const answer = await this.call('POST', CHANNEL_ROUTES.file, { json: { marker: makeStashMarker(marker) } }, options);
    let handle;
    try {
      handle = await open(temp, 'wx');
    } catch (error) {
      answer.destroy();
      throw localError(`write next to "${destPath}"`, error);
    }
    try {
      const hash = createHash('md5');
      let size = 0;
      const sink = handle.createWriteStream();
      await this.receive(answer, options, (source) =>
        pipeline(
          source,
          async function* (chunks: AsyncIterable<Buffer>) {
            for await (const chunk of chunks) {
              hash.update(chunk);
              size += chunk.byteLength;
              yield chunk;
            }
          },
          sink,
        ),
      );
      verify(marker, hash.digest('base64'), size);
      try {
        await rename(temp, destPath);
      } catch (error) {
        throw localError(`write "${destPath}"`, error);
      }
    } catch (error) {
      await handle.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Streams a local file to the worker, which stashes it for this task (the worker never opens a
   * path the task names). The file must not change while it is sent.
   */
  async putFileFromPath(
    workflowId: string,
    taskName: string,
    attemptNo: number,
    filename: string,
    path: string,
    options?: OperationOptions,
  ): Promise<StashMarker> {
    const before = await stat(path).catch((error: unknown) => {
      throw localError(`read "${path}"`, error);
    });
    if (!before.isFile()) throw new JobqError('invalid-argument', `stash: "${path}" is not a regular file`);
    const query = new URLSearchParams({ name: filename, workflow: workflowId, task: taskName, attempt: String(attemptNo) });
    const answer = await this.call('PUT', `${CHANNEL_ROUTES.stash}?${query.toString()}`, { file: path, size: before.size }, options);
    const body = (await this.readJson(answer, options)) as { marker?: unknown } | null;
    const after = await stat(path).catch((error: unknown) => {
      throw localError(`read "${path}"`, error);
    });
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
      throw new JobqError('invalid-argument', `stash: "${path}" changed while it was being uploaded; stash it again once it is complete`);
    }
    const marker = parseStashMarker(body?.marker);
    if (marker === null) throw new JobqError('internal', 'the task channel answered a stash without a well-formed marker');
    return marker;
  }

  /** Sends a request; resolves with a 200 answer, rejects with the worker's error otherwise. */
  private call(method: string, path: string, body: Body, options: OperationOptions | undefined): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const upload = 'file' in body;
      const text = upload ? '' : JSON.stringify(body.json);
      const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
      if (upload) {
        headers['content-type'] = 'application/octet-stream';
        headers['content-length'] = String(body.size);
        // The worker answers before the bytes are sent: a refused upload sends nothing.
        headers.expect = '100-continue';
      } else {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(text));
      }
      const req = request({
        socketPath: this.socketPath,
        path,
        method,
        headers,
        agent: false,
        ...(options?.abortSignal ? { signal: options.abortSignal } : {}),
      });
      let answered = false;
      let source: Readable | undefined;
      req.on('response', (answer) => {
        answered = true;
        source?.unpipe(req);
        source?.destroy();
        if (answer.statusCode === 200) {
          resolve(answer);
          return;
        }
        this.readText(answer, options).then(
          (text) => reject(errorFromAnswer(answer.statusCode ?? 0, text)),
          (error: unknown) => reject(error instanceof Error ? error : new Error(String(error))),
        );
      });
      req.on('error', (error) => {
        if (!answered) reject(this.transportError(error, options));
      });
      if (!upload) {
        req.end(text);
        return;
      }
      req.on('continue', () => {
        source = createReadStream(body.file);
        source.on('error', (error) => req.destroy(localError(`read "${body.file}"`, error)));
        source.pipe(req);
      });
    });
  }

  private transportError(error: unknown, options: OperationOptions | undefined): JobqError {
    if (isJobqError(error)) return error;
    if (options?.abortSignal?.aborted) return new JobqError('aborted', 'the task channel request was aborted', { cause: error });
    const code = (error as NodeJS.ErrnoException).code;
    return new JobqError(
      'unavailable',
      `cannot reach the worker's task channel at ${this.socketPath} (${code ?? errorMessage(error)}): has the attempt ended?`,
      { cause: error, retryable: false },
    );
  }

  /** Consumes an answer's body with `consume`, translating a broken transfer. */
  private async receive(
    answer: IncomingMessage,
    options: OperationOptions | undefined,
    consume: (source: IncomingMessage) => Promise<unknown>,
  ): Promise<void> {
    try {
      await consume(answer);
    } catch (error) {
      throw this.transportError(error, options);
    }
    if (!answer.complete) throw new JobqError('unavailable', 'the task channel closed the transfer before its end', { retryable: false });
  }

  private async readText(answer: IncomingMessage, options: OperationOptions | undefined): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    await this.receive(answer, options, async (source) => {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        size += chunk.length;
        // Error answers are one line; outputs can be large, so only what an error answer holds is capped.
        if (answer.statusCode === 200 || size <= MAX_JSON_REQUEST_BYTES) chunks.push(chunk);
      }
    });
    return Buffer.concat(chunks).toString('utf8');
  }

  private async readJson(answer: IncomingMessage, options: OperationOptions | undefined): Promise<unknown> {
    const text = await this.readText(answer, options);
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new JobqError('internal', `the task channel answered text that is not JSON: ${errorMessage(error)}`);
    }
  }
}
