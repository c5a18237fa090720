import { JobqError } from '@jobq/ports';
import { runtimeBlobName } from './names';

/**
 * Where a workflow's runtime lives in the workflows container, and the two small documents that
 * tie it together: the head (`{wf}.json`) and the store's opaque save token. See
 * docs/runtime-format.md.
 *
 * Workflow ids may contain dots, so every blob of a workflow other than its head sits under a
 * fixed engine folder and a `{wf}/` segment (ids have no `/`): `state/{wf}/…` (snapshots and
 * logs), `definitions/{wf}/…`, `upstream/{wf}/…`. No workflow's name can reach another's blobs.
 */

/** Format version of the head written by this store. Version 1 is the whole-runtime blob. */
export const HEAD_FORMAT_VERSION = 2;

/** The oldest format this store still reads (and migrates on the next save). */
export const OLDEST_READ_VERSION = 1;

/** `state/{wf}/`: the snapshots and logs of a workflow. */
export function stateFolder(workflowId: string): string {
  return `state/${workflowId}/`;
}

/** `definitions/{wf}/`: the definition blob of a workflow. */
export function definitionFolder(workflowId: string): string {
  return `definitions/${workflowId}/`;
}

/** `upstream/{wf}/`: the upstream overflow blobs of a workflow's task messages. */
export function upstreamFolder(workflowId: string): string {
  return `upstream/${workflowId}/`;
}

/** The definition blob: named by the sha256 (hex) of its bytes. */
export function definitionBlobName(workflowId: string, definitionHash: string): string {
  return `${definitionFolder(workflowId)}${definitionHash}.json`;
}

/** The snapshot and log of one generation; `nonce` keeps two writers' attempts at a generation apart. */
export function generationBlobNames(workflowId: string, generation: number, nonce: string): { snapshot: string; log: string } {
  const base = `${stateFolder(workflowId)}${generation}-${nonce}`;
  return { snapshot: `${base}.snapshot.json`, log: `${base}.log` };
}

const GENERATION_NAME = /^(\d{1,15})-[0-9a-f]{1,64}\.(snapshot\.json|log)$/;

/** The generation of a snapshot or log of `workflowId` by its name, or null for another name. */
export function generationOf(workflowId: string, name: string): number | null {
  const folder = stateFolder(workflowId);
  if (!name.startsWith(folder)) return null;
  const match = GENERATION_NAME.exec(name.slice(folder.length));
  return match ? Number(match[1]) : null;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** What the head of a format-2 runtime says: where its current generation is. */
export interface RuntimeHead {
  workflowId: string;
  /** sha256 (hex) of the definition blob's bytes. */
  definitionHash: string;
  generation: number;
  snapshot: string;
  snapshotBytes: number;
  log: string;
}

/** The head as JSON text. */
export function encodeHead(head: RuntimeHead): string {
  return JSON.stringify({
    version: HEAD_FORMAT_VERSION,
    workflow_id: head.workflowId,
    definition_hash: head.definitionHash,
    generation: head.generation,
    snapshot: head.snapshot,
    snapshot_bytes: head.snapshotBytes,
    log: head.log,
  });
}

/** A blob at `{wf}.json`: a format-1 runtime (parsed JSON, decoded by the caller) or a format-2 head. */
export type HeadContent = { version: 1; json: Record<string, unknown> } | { version: 2; head: RuntimeHead };

function corrupt(workflowId: string, why: string): JobqError {
  return new JobqError('corrupt', `the runtime of workflow "${workflowId}" cannot be read: ${why}`, { details: { workflowId } });
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Reads the blob at `{wf}.json`. `corrupt` when it is not a runtime of this workflow (never
 * quoting it); `unsupported` when a newer jobq wrote it (a version above {@link HEAD_FORMAT_VERSION}).
 */
export function decodeHeadContent(workflowId: string, text: string): HeadContent {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw corrupt(workflowId, 'it is not JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw corrupt(workflowId, 'it is not a JSON object');
  const record = json as Record<string, unknown>;
  const version = record.version;
  if (typeof version === 'number' && Number.isSafeInteger(version) && version > HEAD_FORMAT_VERSION) {
    throw new JobqError(
      'unsupported',
      `workflow "${workflowId}" was written by a newer jobq (runtime format version ${version}; this jobq reads versions ${OLDEST_READ_VERSION}–${HEAD_FORMAT_VERSION}): it is left as it is; upgrade jobq to process it`,
      { details: { workflowId, formatVersion: version } },
    );
  }
  if (version === 1) return { version: 1, json: record };
  if (version !== HEAD_FORMAT_VERSION)
    throw corrupt(workflowId, `unknown format version ${JSON.stringify(version)?.slice(0, 20) ?? 'none'}`);
  const folder = stateFolder(workflowId);
  const head: RuntimeHead = {
    workflowId: typeof record.workflow_id === 'string' ? record.workflow_id : '',
    definitionHash: typeof record.definition_hash === 'string' ? record.definition_hash : '',
    generation: isCount(record.generation) ? record.generation : -1,
    snapshot: typeof record.snapshot === 'string' ? record.snapshot : '',
    snapshotBytes: isCount(record.snapshot_bytes) ? record.snapshot_bytes : -1,
    log: typeof record.log === 'string' ? record.log : '',
  };
  if (head.workflowId !== workflowId) throw corrupt(workflowId, 'its head names another workflow');
  if (!SHA256_HEX.test(head.definitionHash)) throw corrupt(workflowId, 'its head has no valid definition hash');
  if (head.generation < 1 || head.snapshotBytes < 0) throw corrupt(workflowId, 'its head has no valid generation');
  if (
    generationOf(workflowId, head.snapshot) !== head.generation ||
    generationOf(workflowId, head.log) !== head.generation ||
    !head.log.endsWith('.log') ||
    !head.snapshot.endsWith('.snapshot.json')
  ) {
    throw corrupt(workflowId, `its head names a snapshot or log outside "${folder}" or of another generation`);
  }
  return { version: 2, head };
}

/** The head blob of a workflow (`{wf}.json`, the name the runtime blob always had). */
export function headBlobName(workflowId: string): string {
  return runtimeBlobName(workflowId);
}

/**
 * Where a format-2 runtime's next append goes, as a save token carries it. After a roll whose
 * head update did not happen (`pending`), the head (at `headEtag`) still names the previous
 * generation: the next save completes the roll (creates `log` if missing, moves the head) first.
 */
export interface LogPosition extends RuntimeHead {
  headEtag: string;
  /** The log's ETag after the last append; null when not known (a log another process created). */
  logEtag: string | null;
  /** The log's length in bytes: the next append's position. */
  position: number;
  /** Records in the log (Append Blocks). */
  appends: number;
  pending: boolean;
}

/** A save token: the ETag of a format-1 blob, or a format-2 log position. */
export type RuntimeToken = { version: 1; etag: string } | ({ version: 2 } & LogPosition);

/** The opaque string callers see as `etag`. */
export function encodeToken(token: RuntimeToken): string {
  if (token.version === 1) return `1.${token.etag}`;
  const fields = [
    token.workflowId,
    token.definitionHash,
    token.generation,
    token.snapshot,
    token.snapshotBytes,
    token.log,
    token.headEtag,
    token.logEtag,
    token.position,
    token.appends,
    token.pending ? 1 : 0,
  ];
  return `2.${Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url')}`;
}

/** The token of `workflowId` in `text`; null for anything else (a stale or foreign token: the save loses). */
export function decodeToken(workflowId: string, text: string): RuntimeToken | null {
  if (typeof text !== 'string') return null;
  if (text.startsWith('1.') && text.length > 2) return { version: 1, etag: text.slice(2) };
  if (!text.startsWith('2.')) return null;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(text.slice(2), 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || fields.length !== 11) return null;
  const [w, d, g, s, z, l, h, e, p, n, pending] = fields as unknown[];
  if (
    w !== workflowId ||
    typeof d !== 'string' ||
    !isCount(g) ||
    typeof s !== 'string' ||
    !isCount(z) ||
    typeof l !== 'string' ||
    typeof h !== 'string'
  )
    return null;
  if (!(e === null || typeof e === 'string') || !isCount(p) || !isCount(n) || (pending !== 0 && pending !== 1)) return null;
  if (generationOf(workflowId, s) !== g || generationOf(workflowId, l) !== g) return null;
  return {
    version: 2,
    workflowId,
    definitionHash: d,
    generation: g,
    snapshot: s,
    snapshotBytes: z,
    log: l,
    headEtag: h,
    logEtag: e,
    position: p,
    appends: n,
    pending: pending === 1,
  };
}
