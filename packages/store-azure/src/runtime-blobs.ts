import { randomBytes } from 'node:crypto';
import type { AppendBlobClient, BlockBlobClient, ContainerClient } from '@azure/storage-blob';
import { type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import {
  RuntimeDecodeError,
  applyDeltaRecord,
  assembleParts,
  decodeDefinition,
  decodeLogRecords,
  decodeRuntimeJson,
  decodeSnapshot,
  encodeDeltaRecord,
  encodeRollRecord,
  encodeSnapshot,
} from '@jobq/dag-core/wire';
import { JobqError, isJobqError, type OperationOptions } from '@jobq/ports';
import { definitionHashOf, encodedDefinition, sha256Hex, type DefinitionCache } from './definition-cache';
import { ClientCache } from './client-cache';
import { storeCall } from './errors';
import { stateFolders } from './workflow-folders';
import {
  decodeHeadContent,
  decodeToken,
  definitionBlobName,
  definitionFolder,
  encodeHead,
  encodeToken,
  generationBlobNames,
  generationOf,
  headBlobName,
  stateFolder,
  type LogPosition,
  type RuntimeHead,
} from './runtime-layout';

/**
 * The runtime blobs of workflows (format 2, docs/runtime-format.md): a definition written once, and
 * per generation a snapshot and an append-blob log, tied together by the head `{wf}.json`.
 *
 * - A save is one conditional Append Block (`appendPosition` + If-Match on the log's ETag) of the
 *   changed task records and workflow fields: a stale writer gets 412, which is `conflict`.
 * - A roll writes the new state as a snapshot (1), closes the old log with a record naming it,
 *   conditional as any append (2: the commit point; of two rollers only one gets here), creates the
 *   new log (3) and moves the head (4). A crash between any two steps loses nothing: a reader that
 *   finds a closed log reads the snapshot it names, and the next save completes steps 3–4.
 * - Format-1 blobs (the whole runtime in `{wf}.json`) are read, and replaced by a head on their next
 *   save (If-Match on the old blob's ETag).
 */

/** Settings of {@link RuntimeBlobs}. */
export interface RuntimeBlobSettings {
  operationTimeoutInMs: number;
  /** A save rolls instead of appending once the log would reach max(this, the snapshot's size) bytes. */
  logRollMinBytes: number;
  /** A save rolls instead of appending once the log holds this many records (the service allows 50 000 blocks). */
  logRollMaxAppends: number;
  /** A save whose record is larger rolls instead (the service takes Append Blocks of up to 4 MiB). */
  logMaxAppendBytes: number;
}

/** Append Block's size limit in every service version: 4 MiB. */
export const MAX_APPEND_BLOCK_BYTES = 4 * 1024 * 1024;

/** A loaded runtime and its save token. */
export interface LoadedBlobs {
  runtime: WorkflowRuntime;
  token: string;
}

/** What {@link RuntimeBlobs.writeInitial} wrote for a new workflow: everything but its head. */
export interface InitialBlobs {
  head: RuntimeHead;
  logEtag: string;
}

const JSON_HEADERS = { blobContentType: 'application/json' };
const LOG_HEADERS = { blobContentType: 'application/x-ndjson' };

/** Attempts of a load that finds a blob gone because the head moved meanwhile (a roll deletes the old generation). */
const LOAD_ROUNDS = 4;

/** A blob the head (or a log) names is not there. */
class MissingBlob extends Error {
  constructor(readonly blobName: string) {
    super(`blob "${blobName}" is missing`);
  }
}

function nonce(): string {
  return randomBytes(6).toString('hex');
}

async function readStream(stream: NodeJS.ReadableStream | undefined): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks);
}

function corrupt(workflowId: string, why: string): JobqError {
  return new JobqError('corrupt', `the runtime of workflow "${workflowId}" cannot be read: ${why}`, { details: { workflowId } });
}

function conflict(workflowId: string): JobqError {
  return new JobqError(
    'conflict',
    `workflow "${workflowId}" changed since it was loaded (ETag mismatch), or no longer exists: nothing was written; load it and apply the events again`,
    {
      details: { workflowId },
    },
  );
}

/** A lost condition (412, 409 exists) or a blob that is not there (404): the write did not happen. */
function lostOrMissing(error: unknown): boolean {
  return isJobqError(error, 'conflict') || isJobqError(error, 'not-found');
}

/** The outcome of the write is unknown: it may have landed (an answer lost, a time limit hit). */
function unknownOutcome(error: unknown): boolean {
  return isJobqError(error) && (error.code === 'unavailable' || error.code === 'timeout' || error.code === 'aborted');
}

function headOf(at: LogPosition): RuntimeHead {
  return {
    workflowId: at.workflowId,
    definitionHash: at.definitionHash,
    generation: at.generation,
    snapshot: at.snapshot,
    snapshotBytes: at.snapshotBytes,
    log: at.log,
  };
}

export class RuntimeBlobs {
  private readonly blockClients: ClientCache<BlockBlobClient>;
  private readonly appendClients: ClientCache<AppendBlobClient>;

  constructor(
    private readonly container: ContainerClient,
    private readonly settings: RuntimeBlobSettings,
    private readonly definitions: DefinitionCache,
  ) {
    this.blockClients = new ClientCache((name) => container.getBlockBlobClient(name));
    this.appendClients = new ClientCache((name) => container.getAppendBlobClient(name));
  }

  private get timeout(): number {
    return this.settings.operationTimeoutInMs;
  }

  private block(name: string): BlockBlobClient {
    return this.blockClients.get(name);
  }

  private appendBlob(name: string): AppendBlobClient {
    return this.appendClients.get(name);
  }

  // ---- plain blob calls ------------------------------------------------------------------------

  /** A blob's bytes (or a range of them), ETag and record count; null when it does not exist. */
  private async download(
    name: string,
    operation: string,
    options: OperationOptions | undefined,
    range?: { offset: number; count: number },
  ): Promise<{ bytes: Buffer; etag: string; blocks: number | undefined } | null> {
    try {
      return await storeCall({ operation }, this.timeout, options, async (abortSignal) => {
        const response = await this.block(name).download(range?.offset ?? 0, range?.count, { abortSignal });
        const bytes = await readStream(response.readableStreamBody);
        if (!response.etag) throw new JobqError('internal', `${operation}: the service returned no ETag`);
        return { bytes, etag: response.etag, blocks: response.blobCommittedBlockCount };
      });
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
  }

  /** Uploads a block blob under a condition; null when the condition failed. */
  private async upload(
    name: string,
    body: Buffer,
    conditions: { ifNoneMatch: '*' } | { ifMatch: string },
    operation: string,
    options: OperationOptions | undefined,
  ): Promise<string | null> {
    try {
      const response = await storeCall({ operation }, this.timeout, options, (abortSignal) =>
        this.block(name).upload(body, body.length, { conditions, blobHTTPHeaders: JSON_HEADERS, abortSignal }),
      );
      if (!response.etag) throw new JobqError('internal', `${operation}: the service returned no ETag`);
      return response.etag;
    } catch (error) {
      // Azure answers a conditional write of a missing blob with 412 or 404 BlobNotFound: both lose.
      if (lostOrMissing(error)) return null;
      throw error;
    }
  }

  /** Creates an empty log; null when it exists already. */
  private async createLog(name: string, workflowId: string, options: OperationOptions | undefined): Promise<string | null> {
    try {
      const response = await storeCall(
        { operation: `create the runtime log of workflow "${workflowId}"` },
        this.timeout,
        options,
        (abortSignal) => this.appendBlob(name).create({ conditions: { ifNoneMatch: '*' }, blobHTTPHeaders: LOG_HEADERS, abortSignal }),
      );
      if (!response.etag)
        throw new JobqError('internal', `create the runtime log of workflow "${workflowId}": the service returned no ETag`);
      return response.etag;
    } catch (error) {
      if (isJobqError(error, 'conflict')) return null;
      throw error;
    }
  }

  private async deleteQuietly(name: string, options: OperationOptions | undefined): Promise<boolean> {
    try {
      await storeCall({ operation: 'delete a runtime blob' }, this.timeout, options, (abortSignal) =>
        this.block(name).delete({ abortSignal }),
      );
      return true;
    } catch {
      return false;
    }
  }

  /** Names of the blobs under `prefix`. */
  private async list(prefix: string, options: OperationOptions | undefined): Promise<string[]> {
    return storeCall({ operation: `list blobs under "${prefix}"` }, this.timeout, options, async (abortSignal) => {
      const names: string[] = [];
      for await (const item of this.container.listBlobsFlat({ prefix, abortSignal })) names.push(item.name);
      return names;
    });
  }

  /** The head's current ETag; null when there is none. */
  async headEtag(workflowId: string, options: OperationOptions | undefined): Promise<string | null> {
    try {
      const properties = await storeCall({ operation: `read workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.block(headBlobName(workflowId)).getProperties({ abortSignal }),
      );
      return properties.etag ?? null;
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
  }

  /**
   * True when the runtime is still the one of `tokenText`: the head has the token's ETag and, for a
   * format-2 runtime, the log its ETag and length (property reads only, no bytes). False when it
   * cannot tell (a pending roll, an unknown log ETag, a token of another form).
   */
  async unchangedSince(workflowId: string, tokenText: string, options: OperationOptions | undefined): Promise<boolean> {
    const token = decodeToken(workflowId, tokenText);
    if (token === null) return false;
    if (token.version === 1) return (await this.headEtag(workflowId, options)) === token.etag;
    if (token.pending || token.logEtag === null) return false;
    const logProperties = async (): Promise<{ etag: string | undefined; length: number | undefined } | null> => {
      try {
        const properties = await storeCall({ operation: `read workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
          this.appendBlob(token.log).getProperties({ abortSignal }),
        );
        return { etag: properties.etag, length: properties.contentLength };
      } catch (error) {
        if (isJobqError(error, 'not-found')) return null;
        throw error;
      }
    };
    const [headEtag, log] = await Promise.all([this.headEtag(workflowId, options), logProperties()]);
    return headEtag === token.headEtag && log !== null && log.etag === token.logEtag && log.length === token.position;
  }

  // ---- load ------------------------------------------------------------------------------------

  /**
   * The runtime and its token; null when the workflow has no head. `corrupt` when a blob it needs is
   * missing or does not decode; `unsupported` when a newer jobq wrote it.
   */
  async load(workflowId: string, options: OperationOptions | undefined): Promise<LoadedBlobs | null> {
    for (let round = 1; ; round++) {
      const read = await this.download(headBlobName(workflowId), `load workflow "${workflowId}"`, options);
      if (read === null) return null;
      const content = decodeHeadContent(workflowId, read.bytes.toString('utf8'));
      if (content.version === 1) {
        const decoded = decodeRuntimeJson(content.json);
        if (!decoded.ok) throw corrupt(workflowId, decoded.error.slice(0, 300));
        const runtime = decoded.value;
        if (runtime.workflowId !== workflowId)
          throw this.decodeFailure(workflowId, new RuntimeDecodeError(`it holds workflow "${runtime.workflowId}"`));
        return { runtime, token: encodeToken({ version: 1, etag: read.etag }) };
      }
      try {
        return await this.loadGeneration(content.head, read.etag, options);
      } catch (error) {
        const failure = error instanceof MissingBlob ? corrupt(workflowId, error.message) : this.decodeFailure(workflowId, error);
        if (!isJobqError(failure, 'corrupt')) throw failure;
        // Only a head that stayed put makes it corrupt: a roll deletes the previous generation once
        // the head has moved (and a newer jobq closes the log before replacing the head).
        if (round < LOAD_ROUNDS && (await this.headEtag(workflowId, options)) !== read.etag) continue;
        throw failure;
      }
    }
  }

  private decodeFailure(workflowId: string, error: unknown): unknown {
    if (!(error instanceof RuntimeDecodeError)) return error;
    return corrupt(workflowId, error.message.slice(0, 300));
  }

  /** The definition of a hash: from the cache, or downloaded, checked against the hash and decoded. */
  private async definition(workflowId: string, hash: string, options: OperationOptions | undefined): Promise<WorkflowDefinition> {
    const cached = this.definitions.get(hash);
    if (cached !== undefined) return cached;
    const name = definitionBlobName(workflowId, hash);
    const read = await this.download(name, `read the definition of workflow "${workflowId}"`, options);
    if (read === null) throw new MissingBlob(name);
    if (sha256Hex(read.bytes) !== hash) throw corrupt(workflowId, `its definition blob "${name}" does not match its hash`);
    const definition = decodeDefinition(read.bytes.toString('utf8'));
    this.definitions.set(hash, definition);
    return definition;
  }

  private async loadGeneration(head: RuntimeHead, headEtag: string, options: OperationOptions | undefined): Promise<LoadedBlobs> {
    const id = head.workflowId;
    const [definition, snapshot, log] = await Promise.all([
      this.definition(id, head.definitionHash, options),
      this.download(head.snapshot, `read the runtime snapshot of workflow "${id}"`, options),
      this.download(head.log, `read the runtime log of workflow "${id}"`, options),
    ]);
    if (snapshot === null) throw new MissingBlob(head.snapshot);
    if (log === null) throw new MissingBlob(head.log);
    if (snapshot.bytes.length !== head.snapshotBytes)
      throw corrupt(id, `its snapshot "${head.snapshot}" has ${snapshot.bytes.length} bytes where its head says ${head.snapshotBytes}`);
    const records = decodeLogRecords(log.bytes.toString('utf8'), definition);
    if (log.blocks !== undefined && log.blocks !== records.length)
      throw corrupt(id, `its log "${head.log}" has ${log.blocks} blocks but ${records.length} records`);
    const last = records.at(-1);
    if (last?.kind === 'rolled') {
      // Closed by a roll whose head update has not happened (yet): the state is the snapshot it names.
      const to = { generation: last.generation, snapshot: last.snapshot, log: last.log };
      if (
        to.generation !== head.generation + 1 ||
        generationOf(id, to.snapshot) !== to.generation ||
        generationOf(id, to.log) !== to.generation
      ) {
        throw corrupt(id, `its log "${head.log}" was closed by a roll to a generation it cannot have`);
      }
      const next = await this.download(to.snapshot, `read the runtime snapshot of workflow "${id}"`, options);
      if (next === null) throw new MissingBlob(to.snapshot);
      if (next.bytes.length !== last.snapshotBytes)
        throw corrupt(id, `its snapshot "${to.snapshot}" has ${next.bytes.length} bytes where its log says ${last.snapshotBytes}`);
      const parts = decodeSnapshot(next.bytes.toString('utf8'), definition, {
        workflowId: id,
        definitionHash: head.definitionHash,
        generation: to.generation,
      });
      const at: LogPosition = {
        ...head,
        ...to,
        snapshotBytes: last.snapshotBytes,
        headEtag,
        logEtag: null,
        position: 0,
        appends: 0,
        pending: true,
      };
      return { runtime: assembleParts(parts), token: encodeToken({ version: 2, ...at }) };
    }
    const parts = decodeSnapshot(snapshot.bytes.toString('utf8'), definition, {
      workflowId: id,
      definitionHash: head.definitionHash,
      generation: head.generation,
    });
    for (const record of records) if (record.kind === 'delta') applyDeltaRecord(parts, record);
    const at: LogPosition = { ...head, headEtag, logEtag: log.etag, position: log.bytes.length, appends: records.length, pending: false };
    return { runtime: assembleParts(parts), token: encodeToken({ version: 2, ...at }) };
  }

  // ---- create ----------------------------------------------------------------------------------

  /**
   * Writes everything of a new workflow but its head: the definition blob (kept when there), the
   * first snapshot and an empty log, under names no other attempt uses. Until a head names them
   * they are unreferenced.
   */
  async writeInitial(runtime: WorkflowRuntime, options: OperationOptions | undefined): Promise<InitialBlobs> {
    const id = runtime.workflowId;
    const { bytes: definitionBytes, hash } = encodedDefinition(runtime.definition);
    const names = generationBlobNames(id, 1, nonce());
    const snapshot = Buffer.from(encodeSnapshot(runtime, { definitionHash: hash, generation: 1 }), 'utf8');
    const [, , logEtag] = await Promise.all([
      this.upload(definitionBlobName(id, hash), definitionBytes, { ifNoneMatch: '*' }, `write the definition of workflow "${id}"`, options),
      this.upload(names.snapshot, snapshot, { ifNoneMatch: '*' }, `write the runtime snapshot of workflow "${id}"`, options),
      this.createLog(names.log, id, options),
    ]);
    if (logEtag === null) throw new JobqError('internal', `create workflow "${id}": a new runtime log already existed`);
    this.definitions.set(hash, runtime.definition);
    return {
      head: {
        workflowId: id,
        definitionHash: hash,
        generation: 1,
        snapshot: names.snapshot,
        snapshotBytes: snapshot.length,
        log: names.log,
      },
      logEtag,
    };
  }

  /** Writes a head under a condition; its ETag, or null when the condition failed. */
  putHead(
    head: RuntimeHead,
    conditions: { ifNoneMatch: '*' } | { ifMatch: string },
    options: OperationOptions | undefined,
  ): Promise<string | null> {
    const body = Buffer.from(encodeHead(head), 'utf8');
    return this.upload(headBlobName(head.workflowId), body, conditions, `write the head of workflow "${head.workflowId}"`, options);
  }

  /** The token of a workflow just created (or migrated): the head at `headEtag`, an empty log. */
  initialToken(initial: InitialBlobs, headEtag: string): string {
    return encodeToken({ version: 2, ...initial.head, headEtag, logEtag: initial.logEtag, position: 0, appends: 0, pending: false });
  }

  /** Deletes the blobs of an attempt that no head names (best effort). */
  async discard(initial: InitialBlobs, withDefinition: boolean, options: OperationOptions | undefined): Promise<void> {
    const names = [initial.head.snapshot, initial.head.log];
    if (withDefinition) names.push(definitionBlobName(initial.head.workflowId, initial.head.definitionHash));
    await Promise.all(names.map((name) => this.deleteQuietly(name, options)));
  }

  /**
   * After a head replaced an orphan (a submit that crashed before its index row): deletes every
   * snapshot, log and definition of the workflow that `keep` does not name (best effort).
   */
  async removeAllBut(keep: RuntimeHead, options: OperationOptions | undefined): Promise<void> {
    const id = keep.workflowId;
    const wanted = new Set([keep.snapshot, keep.log, definitionBlobName(id, keep.definitionHash)]);
    try {
      const names = [...(await this.list(stateFolder(id), options)), ...(await this.list(definitionFolder(id), options))];
      await Promise.all(names.filter((name) => !wanted.has(name)).map((name) => this.deleteQuietly(name, options)));
    } catch {
      // Left for the workflow's purge.
    }
  }

  /**
   * Deletes the head of a create that cannot finish if it is still at `headEtag`, then the blobs
   * of that create; nothing when the head changed (another submit's now).
   */
  async deleteCreated(initial: InitialBlobs, headEtag: string, options: OperationOptions | undefined): Promise<void> {
    const id = initial.head.workflowId;
    try {
      await storeCall({ operation: `delete the runtime of workflow "${id}"` }, this.timeout, options, (abortSignal) =>
        this.block(headBlobName(id)).delete({ conditions: { ifMatch: headEtag }, abortSignal }),
      );
    } catch (error) {
      // Replaced by another submit of the id since: not ours to delete.
      if (isJobqError(error, 'conflict')) return;
      if (!isJobqError(error, 'not-found')) throw error;
    }
    await this.discard(initial, true, options);
  }

  // ---- save ------------------------------------------------------------------------------------

  /**
   * Saves `runtime` at `tokenText`; the new token. `changed` are the names of the tasks that differ
   * from `previous` (the runtime saved at the token); without `previous` the save rolls (writes a
   * snapshot). `conflict` when the workflow moved on since the token, nothing written.
   */
  async save(
    runtime: WorkflowRuntime,
    tokenText: string,
    previous: WorkflowRuntime | undefined,
    changed: readonly string[],
    options: OperationOptions | undefined,
  ): Promise<string> {
    const id = runtime.workflowId;
    const token = decodeToken(id, tokenText);
    if (token === null) throw conflict(id);
    if (token.version === 1) return this.migrate(runtime, token.etag, options);
    let at: LogPosition = token;
    if (at.definitionHash !== definitionHashOf(runtime.definition)) {
      throw new JobqError('invalid-argument', `save workflow "${id}": the runtime has another definition than the stored one`, {
        details: { workflowId: id },
      });
    }
    if (at.pending) at = await this.completeRoll(at, options);
    if (previous !== undefined) {
      const record = Buffer.from(encodeDeltaRecord(at.appends + 1, previous, runtime, changed), 'utf8');
      if (!this.mustRoll(at, record.length)) return encodeToken({ version: 2, ...(await this.append(at, record, options)) });
    }
    return encodeToken({ version: 2, ...(await this.roll(runtime, at, options)) });
  }

  /** True when a record of `bytes` should not go into the log at `at`: a roll instead. */
  private mustRoll(at: LogPosition, bytes: number): boolean {
    const s = this.settings;
    if (bytes > s.logMaxAppendBytes) return true;
    if (at.appends + 1 > s.logRollMaxAppends) return true;
    return at.position + bytes > Math.max(at.snapshotBytes, s.logRollMinBytes);
  }

  /**
   * One conditional Append Block at `at`. When the answer says the condition failed, or never came,
   * the log is read back at `at.position`: if this very record is there (the service took it and its
   * answer was lost, then the SDK's retry found the log moved on), the append succeeded.
   */
  private async append(at: LogPosition, record: Buffer, options: OperationOptions | undefined): Promise<LogPosition> {
    const id = at.workflowId;
    try {
      const response = await storeCall({ operation: `save workflow "${id}"` }, this.timeout, options, (abortSignal) =>
        this.appendBlob(at.log).appendBlock(record, record.length, {
          conditions: { appendPosition: at.position, ...(at.logEtag === null ? {} : { ifMatch: at.logEtag }) },
          abortSignal,
        }),
      );
      if (!response.etag) throw new JobqError('internal', `save workflow "${id}": the service returned no ETag`);
      return {
        ...at,
        logEtag: response.etag,
        position: at.position + record.length,
        appends: response.blobCommittedBlockCount ?? at.appends + 1,
      };
    } catch (error) {
      if (!lostOrMissing(error) && !unknownOutcome(error)) throw error;
      const landed = await this.landed(at, record).catch(() => null);
      if (landed !== null) return landed;
      throw lostOrMissing(error) ? conflict(id) : error;
    }
  }

  /** The position after `record` if the log holds exactly it at `at.position`; null otherwise. */
  private async landed(at: LogPosition, record: Buffer): Promise<LogPosition | null> {
    // Not under the caller's signal: this read decides whether the write happened.
    const read = await this.download(at.log, `read back the runtime log of workflow "${at.workflowId}"`, undefined, {
      offset: at.position,
      count: record.length,
    });
    if (read === null || !read.bytes.equals(record)) return null;
    return { ...at, logEtag: read.etag, position: at.position + record.length, appends: at.appends + 1 };
  }

  /**
   * Rolls to generation `at.generation + 1` holding `runtime`. Committed once step 2 (the record
   * that closes the old log) succeeds; a failure in steps 3–4 then leaves a pending token, whose
   * next save completes the roll.
   */
  private async roll(runtime: WorkflowRuntime, at: LogPosition, options: OperationOptions | undefined): Promise<LogPosition> {
    const id = runtime.workflowId;
    const generation = at.generation + 1;
    const names = generationBlobNames(id, generation, nonce());
    const snapshot = Buffer.from(encodeSnapshot(runtime, { definitionHash: at.definitionHash, generation }), 'utf8');
    // (1) The new snapshot, under a name of its own: nothing refers to it yet.
    await this.upload(names.snapshot, snapshot, { ifNoneMatch: '*' }, `write the runtime snapshot of workflow "${id}"`, options);
    // (2) Close the old log, conditional on its position and ETag: of two rollers (or a roller and
    //     a stale writer) exactly one gets here.
    const target = { generation, snapshot: names.snapshot, snapshotBytes: snapshot.length, log: names.log };
    const close = Buffer.from(encodeRollRecord(at.appends + 1, target), 'utf8');
    try {
      await this.append(at, close, options);
    } catch (error) {
      // Lost for sure: the snapshot will never be named. (An unknown outcome keeps it: it may be.)
      if (isJobqError(error, 'conflict')) await this.deleteQuietly(names.snapshot, undefined);
      throw error;
    }
    const rolled: LogPosition = { ...at, ...target, logEtag: null, position: 0, appends: 0, pending: true };
    try {
      return await this.completeRoll(rolled, options);
    } catch {
      return rolled;
    }
  }

  /**
   * Steps 3–4 of a roll whose old log is closed: creates the new log (kept if it exists: an earlier
   * try, or another process completing the same roll) and moves the head from `at.headEtag`.
   * `conflict` when the head moved meanwhile. Then deletes the previous generations.
   */
  private async completeRoll(at: LogPosition, options: OperationOptions | undefined): Promise<LogPosition> {
    const id = at.workflowId;
    // (3) The new log. Nothing appends to it before the head names it, so an existing one is empty.
    const logEtag = await this.createLog(at.log, id, options);
    // (4) The head, conditional on the one the roll started from.
    const headEtag = await this.putHead(headOf(at), { ifMatch: at.headEtag }, options);
    if (headEtag === null) throw conflict(id);
    await this.removeOldGenerations(at, options);
    return { ...at, headEtag, logEtag, pending: false };
  }

  /** Deletes every snapshot and log of the workflow older than `keep`'s, and same-generation leftovers of lost rolls (best effort). */
  private async removeOldGenerations(keep: LogPosition, options: OperationOptions | undefined): Promise<void> {
    try {
      const names = await this.list(stateFolder(keep.workflowId), options);
      const old = names.filter((name) => {
        const generation = generationOf(keep.workflowId, name);
        return (
          generation !== null &&
          (generation < keep.generation || (generation === keep.generation && name !== keep.snapshot && name !== keep.log))
        );
      });
      await Promise.all(old.map((name) => this.deleteQuietly(name, options)));
    } catch {
      // Left for the next roll, or the workflow's purge.
    }
  }

  /**
   * Replaces a format-1 blob (at `etag`) by a head of generation 1 holding `runtime`: the
   * definition, snapshot and log first, then the head with If-Match. `conflict` when the old blob
   * changed (nothing of the new layout is left then).
   */
  private async migrate(runtime: WorkflowRuntime, etag: string, options: OperationOptions | undefined): Promise<string> {
    const initial = await this.writeInitial(runtime, options);
    const headEtag = await this.putHead(initial.head, { ifMatch: etag }, options);
    if (headEtag === null) {
      await this.discard(initial, false, undefined);
      throw conflict(runtime.workflowId);
    }
    return this.initialToken(initial, headEtag);
  }

  // ---- deleting a workflow ---------------------------------------------------------------------

  /**
   * Every blob of one workflow in the workflows container: the head, then everything under
   * `state/{wf}/`, `definitions/{wf}/` and `upstream/{wf}/` (never a bare `{wf}` prefix, which
   * would reach workflows whose ids start the same).
   */
  async workflowBlobNames(workflowId: string, options: OperationOptions | undefined): Promise<string[]> {
    const names = (await this.headEtag(workflowId, options)) === null ? [] : [headBlobName(workflowId)];
    for (const folder of stateFolders(workflowId)) names.push(...(await this.list(folder, options)));
    return names;
  }

  /**
   * Deletes the head if it is still where `tokenText` (a save token of this workflow) says, or at
   * whatever ETag it has now when null: `changed` when a save moved it on, `gone` when there is
   * none. Without its head a workflow does not exist: no load finds it, no save succeeds.
   */
  async deleteHead(
    workflowId: string,
    tokenText: string | null,
    options: OperationOptions | undefined,
  ): Promise<'deleted' | 'changed' | 'gone'> {
    const token = tokenText === null ? null : decodeToken(workflowId, tokenText);
    const ifMatch = token === null ? await this.headEtag(workflowId, options) : token.version === 1 ? token.etag : token.headEtag;
    if (ifMatch === null) return 'gone';
    try {
      await storeCall({ operation: `delete the head of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
        this.block(headBlobName(workflowId)).delete({ conditions: { ifMatch }, abortSignal }),
      );
      return 'deleted';
    } catch (error) {
      if (isJobqError(error, 'not-found')) return 'gone';
      if (isJobqError(error, 'conflict')) return 'changed';
      throw error;
    }
  }

  /** Deletes what {@link workflowBlobNames} lists, the head first; the names deleted. */
  async deleteWorkflowBlobs(workflowId: string, options: OperationOptions | undefined): Promise<string[]> {
    const deleted: string[] = [];
    const remove = async (name: string): Promise<void> => {
      try {
        await storeCall({ operation: `delete blob "${name}" of workflow "${workflowId}"` }, this.timeout, options, (abortSignal) =>
          this.block(name).delete({ abortSignal }),
        );
        deleted.push(name);
      } catch (error) {
        if (!isJobqError(error, 'not-found')) throw error;
      }
    };
    await remove(headBlobName(workflowId));
    for (const folder of stateFolders(workflowId)) {
      for (const name of await this.list(folder, options)) await remove(name);
    }
    return deleted;
  }
}
