import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  decodeInlineOutput,
  findStashMarkers,
  isPlainFileName,
  makeStashMarker,
  parseOutputRef,
  parseStashMarker,
  STASH_BLOB_PREFIX,
  type StashMarker,
} from '@jobq/dag-core/wire';
import {
  errorMessage,
  JobqError,
  TASK_CHANNEL_MAX_JSON_BYTES as MAX_JSON_REQUEST_BYTES,
  TASK_CHANNEL_MD5_HEADER as MD5_HEADER,
  TASK_CHANNEL_ROUTES as CHANNEL_ROUTES,
  TASK_SOCKET_VARIABLE,
  TASK_TOKEN_VARIABLE,
  isJobqError,
  oneLine,
  taskChannelStatus as statusOfCode,
  type OperationOptions,
  type OutputStore,
  type TaskChannelErrorBody as ChannelErrorBody,
} from '@jobq/ports';
import type { TaskUser } from './task-user';

/** What the channel needs of the output store. */
export type TaskChannelStore = Pick<OutputStore, 'getOutput' | 'downloadFileTo' | 'putFileFromPath'>;

/** Options of {@link startTaskChannel}. */
export interface TaskChannelOptions {
  /**
   * The private directory the attempt runs in (its slot's, made by the worker): the socket goes
   * there (unless its path is too long for a socket), and so do files on their way between the task
   * and the store.
   */
  dir: string;
  workflowId: string;
  taskName: string;
  attemptNo: number;
  /** Parent → output ref of this attempt (null: no output): the only outputs it may read. */
  upstreamRefs: Readonly<Record<string, string | null>>;
  outputs: TaskChannelStore;
  /** The user the task runs as, when not the worker's: the socket is handed to that user. */
  taskUser?: TaskUser | null;
  /** Worker-level log lines (a request that failed inside the worker). */
  log?: (line: string) => void;
}

/** A running task channel. */
export interface TaskChannel {
  /** Variables to add to the task's environment: `JOBQ_TASK_SOCKET` and `JOBQ_TASK_TOKEN`. */
  env: Record<string, string>;
  /**
   * Stops serving (requests in flight are aborted, and waited for, so no transfer file outlives it)
   * and removes the socket. Safe to call twice.
   */
  close(): Promise<void>;
}

/** The longest socket path the kernel takes (`sun_path` is 108 bytes with its terminating NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * The one place that stashes a file for an attempt, so a change of the store's signature (files
 * keyed by attempt) is a change of this call only.
 */
function stashForAttempt(
  outputs: TaskChannelStore,
  attempt: { workflowId: string; taskName: string; attemptNo: number },
  filename: string,
  path: string,
  options: OperationOptions,
): Promise<StashMarker> {
  return outputs.putFileFromPath(attempt.workflowId, attempt.taskName, attempt.attemptNo, filename, path, options);
}

class Refused extends JobqError {
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super('auth', message);
  }
}

function sameMarker(a: StashMarker, b: StashMarker): boolean {
  return a.blobName === b.blobName && a.md5 === b.md5 && a.size === b.size;
}

function shorten(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/** Where the socket goes: in the attempt's directory, else (path too long) in a new short directory. */
function socketLocation(dir: string): { path: string; ownDir: string | null } {
  const inDir = join(dir, 'task.sock');
  if (Buffer.byteLength(inDir) <= MAX_SOCKET_PATH_BYTES) return { path: inDir, ownDir: null };
  for (const base of [tmpdir(), '/tmp']) {
    if (Buffer.byteLength(join(base, 'jq-XXXXXX', 's')) > MAX_SOCKET_PATH_BYTES) continue;
    const ownDir = mkdtempSync(join(base, 'jq-'));
    return { path: join(ownDir, 's'), ownDir };
  }
  throw new JobqError(
    'invalid-config',
    `no short enough directory for the task channel's socket (the attempt directory ${shorten(dir)} and the temporary directory are too long)`,
  );
}

/**
 * Serves one attempt's task helpers over a Unix socket in its private directory, with a random
 * token required on every request. The task holds no storage credential: the worker does the
 * reads and writes the helpers ask for, limited to what the attempt may touch — its direct
 * parents' outputs, files stashed in those outputs (of its own workflow), and files stashed for
 * its own workflow and task. Anything else is refused (403); a missing or wrong token is 401.
 * Setting the output and checking for cancellation stay local files. See
 * `@jobq/ports` (`task-channel.ts`) for the requests.
 */
export function startTaskChannel(options: TaskChannelOptions): Promise<TaskChannel> {
  return new Promise((resolve) => resolve(openTaskChannel(options)));
}

/**
 * {@link startTaskChannel} without waiting: the socket is bound and listening when this returns
 * (binding a Unix socket is synchronous), so a task started right after, or code of the worker's
 * own process, can connect at once. Throws a `JobqError` when the socket cannot be bound.
 */
export function openTaskChannel(options: TaskChannelOptions): TaskChannel {
  const { dir, workflowId, taskName, attemptNo, outputs } = options;
  const taskUser = options.taskUser ?? null;
  const token = randomBytes(32).toString('hex');
  const expected = Buffer.from(`Bearer ${token}`);
  const stop = new AbortController();
  const operation: OperationOptions = { abortSignal: stop.signal };
  const allowedRefs = new Set(Object.values(options.upstreamRefs).filter((ref): ref is string => ref !== null));
  /** The stash markers in each parent output read so far (ref → markers). */
  const markersOf = new Map<string, Promise<StashMarker[]>>();
  let transfers = 0;
  const transferPath = () => join(dir, `.transfer-${++transfers}-${randomBytes(6).toString('hex')}`);

  const authorized = (req: IncomingMessage): boolean => {
    const given = Buffer.from(req.headers.authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  const readOutput = async (ref: string): Promise<unknown> => {
    const parsed = parseOutputRef(ref);
    if (parsed.kind === 'inline') {
      const decoded = decodeInlineOutput(ref);
      if (!decoded.ok) throw new JobqError('corrupt', `an upstream output is not valid JSON: ${decoded.error}`);
      return decoded.value;
    }
    return outputs.getOutput(ref, operation);
  };

  const markersIn = (ref: string): Promise<StashMarker[]> => {
    let found = markersOf.get(ref);
    if (found === undefined) {
      found = readOutput(ref).then((value) => findStashMarkers(value).map((f) => f.marker));
      markersOf.set(ref, found);
      // A failed read is not remembered: the next request tries again.
      void found.catch(() => markersOf.delete(ref));
    }
    return found;
  };

  const outputFor = async (body: unknown): Promise<unknown> => {
    const ref = (body as { ref?: unknown } | null)?.ref;
    if (typeof ref !== 'string') throw new JobqError('invalid-argument', 'the request needs {"ref": "<output ref>"}');
    if (!allowedRefs.has(ref)) {
      throw new Refused(
        403,
        `output ref "${shorten(ref)}" is not the output of a direct parent of task "${taskName}": a task may read only its direct parents' outputs`,
      );
    }
    const value = await readOutput(ref);
    if (!markersOf.has(ref)) markersOf.set(ref, Promise.resolve(findStashMarkers(value).map((f) => f.marker)));
    return value;
  };

  const checkMarker = async (marker: StashMarker): Promise<void> => {
    if (!marker.blobName.startsWith(`${STASH_BLOB_PREFIX}${workflowId}/`)) {
      throw new Refused(403, `stashed file "${shorten(marker.blobName)}" belongs to another workflow than "${workflowId}"`);
    }
    // Outputs already read (or inline) first: no storage call when a task fetches a file of an output it just read.
    const cheap = new Set([...allowedRefs].filter((ref) => markersOf.has(ref) || parseOutputRef(ref).kind !== 'blob'));
    for (const ref of [...cheap, ...[...allowedRefs].filter((r) => !cheap.has(r))]) {
      if ((await markersIn(ref)).some((m) => sameMarker(m, marker))) return;
    }
    throw new Refused(
      403,
      `stashed file "${shorten(marker.blobName)}" is not in the output of a direct parent of task "${taskName}": a task may fetch only files its direct parents' outputs hold`,
    );
  };

  const sendFile = async (body: unknown, res: ServerResponse): Promise<void> => {
    const marker = parseStashMarker((body as { marker?: unknown } | null)?.marker);
    if (marker === null)
      throw new JobqError('invalid-argument', 'the request needs {"marker": {"__jobq_stash__": {…}}} with a well-formed stash marker');
    await checkMarker(marker);
    const path = transferPath();
    try {
      await outputs.downloadFileTo(marker, path, operation);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(marker.size), [MD5_HEADER]: marker.md5 });
      // Done once the answer is closed: a client that hangs up as soon as it has every byte (before
      // the server sees its own write finish) is no failure; one that hangs up early sees a short file.
      await new Promise<void>((resolve, reject) => {
        const source = createReadStream(path);
        source.on('error', (error) => {
          res.destroy(error);
          reject(error);
        });
        res.on('close', () => resolve());
        source.pipe(res);
      });
    } finally {
      await rm(path, { force: true }).catch(() => undefined);
    }
  };

  const stash = async (req: IncomingMessage, url: URL, proceed: () => void): Promise<unknown> => {
    const name = url.searchParams.get('name');
    const claimedWorkflow = url.searchParams.get('workflow');
    const claimedTask = url.searchParams.get('task');
    const claimedAttempt = url.searchParams.get('attempt');
    if (
      (claimedWorkflow !== null && claimedWorkflow !== workflowId) ||
      (claimedTask !== null && claimedTask !== taskName) ||
      (claimedAttempt !== null && claimedAttempt !== String(attemptNo))
    ) {
      throw new Refused(403, `a task may stash files only for itself (workflow "${workflowId}", task "${taskName}", attempt ${attemptNo})`);
    }
    if (!isPlainFileName(name)) {
      throw new JobqError(
        'invalid-argument',
        `the file name must be a plain file name (no "/", "\\" or control characters; not "." or ".."), got ${JSON.stringify(name)}`,
      );
    }
    const declared = req.headers['content-length'];
    proceed();
    const path = transferPath();
    try {
      let received = 0;
      const count = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          received += chunk.length;
          callback(null, chunk);
        },
      });
      await pipeline(req, count, createWriteStream(path, { flags: 'wx', mode: 0o600 }), { signal: stop.signal });
      if (declared !== undefined && Number(declared) !== received) {
        throw new JobqError('invalid-argument', `the upload ended after ${received} of ${declared} bytes`);
      }
      const marker = await stashForAttempt(outputs, options, name, path, operation);
      return { marker: makeStashMarker(marker) };
    } finally {
      await rm(path, { force: true }).catch(() => undefined);
    }
  };

  /** `expectsContinue`: the client waits for "100 Continue" before sending the body (uploads do). */
  const handle = async (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> => {
    if (!authorized(req))
      throw new Refused(401, `the task channel needs this attempt's token ($${TASK_TOKEN_VARIABLE}) as "Authorization: Bearer TOKEN"`);
    // Only a request that passed its checks gets its body sent: a refused upload costs nothing.
    const proceed = () => {
      if (expectsContinue) res.writeContinue();
    };
    const url = new URL(req.url ?? '/', 'http://task');
    const route = `${req.method ?? ''} ${url.pathname}`;
    switch (route) {
      case `POST ${CHANNEL_ROUTES.output}`:
        proceed();
        return sendJson(res, 200, { value: await outputFor(await readJson(req)) });
      case `POST ${CHANNEL_ROUTES.file}`:
        proceed();
        return sendFile(await readJson(req), res);
      case `PUT ${CHANNEL_ROUTES.stash}`:
        return sendJson(res, 200, await stash(req, url, proceed));
      default:
        throw new Refused(
          403,
          `the task channel does not offer "${shorten(route)}" (only POST ${CHANNEL_ROUTES.output}, POST ${CHANNEL_ROUTES.file} and PUT ${CHANNEL_ROUTES.stash})`,
        );
    }
  };

  /** Requests being answered: `close()` waits for them, so no transfer file outlives the attempt. */
  const inFlight = new Set<Promise<void>>();
  const serve = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean) => {
    const served = handle(req, res, expectsContinue)
      .catch((error: unknown) => {
        if (!(error instanceof Refused) && !stop.signal.aborted) {
          options.log?.(
            `task channel of "${taskName}": ${req.method ?? ''} ${shorten(req.url ?? '')} failed: ${oneLine(errorMessage(error))}`,
          );
        }
        sendError(res, error, stop.signal.aborted);
      })
      .finally(() => inFlight.delete(served));
    inFlight.add(served);
  };
  const server = createServer((req, res) => serve(req, res, false));
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serve(req, res, true));
  // Transfers of big files may take long; the channel lives as long as the attempt.
  server.requestTimeout = 0;

  const { path: socketPath, ownDir } = socketLocation(dir);
  // Binding a Unix socket happens within listen(); only its error is reported later (on the next
  // tick), so a server that is not listening now has failed, and that late event is ignored.
  const ignoreLateError = () => undefined;
  server.once('error', ignoreLateError);
  try {
    server.listen(socketPath);
    if (!server.listening)
      throw new Error('the socket could not be bound (its directory is missing or not writable, or the path is taken)');
    server.off('error', ignoreLateError);
    chmodSync(socketPath, 0o600);
    if (taskUser !== null) {
      chownSync(socketPath, taskUser.uid, taskUser.gid);
      if (ownDir !== null) chmodSync(ownDir, 0o711);
    }
  } catch (error) {
    server.close();
    if (ownDir !== null) rmSync(ownDir, { recursive: true, force: true });
    throw new JobqError('internal', `could not start the task channel at ${socketPath}: ${errorMessage(error)}`, { cause: error });
  }

  let closing: Promise<void> | null = null;
  return {
    env: { [TASK_SOCKET_VARIABLE]: socketPath, [TASK_TOKEN_VARIABLE]: token },
    close() {
      closing ??= (async () => {
        stop.abort(new Error('the attempt ended'));
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
        await Promise.allSettled([...inFlight]);
        await rm(socketPath, { force: true }).catch(() => undefined);
        if (ownDir !== null) await rm(ownDir, { recursive: true, force: true }).catch(() => undefined);
      })();
      return closing;
    },
  };
}

/** Reads a JSON request body of at most {@link MAX_JSON_REQUEST_BYTES}. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_REQUEST_BYTES) throw new JobqError('invalid-argument', `the request body is over ${MAX_JSON_REQUEST_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (error) {
    throw new JobqError('invalid-argument', `the request body is not JSON: ${errorMessage(error)}`);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, error: unknown, aborted: boolean): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  let failure: JobqError;
  if (aborted) failure = new JobqError('aborted', 'the attempt ended while the task channel was serving this request');
  else if (isJobqError(error)) failure = error;
  else failure = new JobqError('internal', errorMessage(error));
  const status = error instanceof Refused ? error.status : statusOfCode(failure.code);
  const body: ChannelErrorBody = { error: { code: failure.code, message: oneLine(failure.message), retryable: failure.retryable } };
  // The request may not have been read to its end (a refused upload): close the connection after the answer.
  res.setHeader('connection', 'close');
  sendJson(res, status, body);
}
