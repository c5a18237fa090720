import {
  decodeUpstreamOverflow,
  encodeUpstreamOverflow,
  parseBlobLocation,
  upstreamOverflowBlobPath,
  type CompactUpstreamRefs,
} from '@jobq/dag-core/wire';
import { errorMessage, JobqError } from '@jobq/ports';
import type { CallOptions } from './errors';
import { checkBlobPath, decodeUtf8, describeBlob, md5Base64, verifyContent, type BlobIo, type BlobTarget } from './output-blob';

/**
 * Upstream overflow blobs (docs/design.md#task-message): when a task message would exceed its queue's limit, the
 * coordinator writes the compact upstream refs to `upstream/{workflow_id}/{task}/{attempt}.json`
 * in the state (workflows) container and sends `__upstream_outputs_blob: "<container>/<path>"`.
 */

/** Writes an attempt's compact refs; returns the location for `__upstream_outputs_blob`. */
export async function putOverflow(
  io: BlobIo,
  workflows: BlobTarget,
  workflowId: string,
  taskName: string,
  attemptNo: number,
  compact: CompactUpstreamRefs,
  options: CallOptions | undefined,
): Promise<string> {
  let path: string;
  try {
    path = upstreamOverflowBlobPath(workflowId, taskName, attemptNo);
  } catch (error) {
    throw new JobqError('invalid-argument', errorMessage(error));
  }
  checkBlobPath(path, `upstream overflow of task "${taskName}"`);
  const bytes = Buffer.from(encodeUpstreamOverflow(compact), 'utf8');
  const headers = { blobContentMD5: Buffer.from(md5Base64(bytes), 'base64'), blobContentType: 'application/json' };
  await io.uploadBytes(workflows, path, bytes, headers, `write upstream overflow ${describeBlob(workflows.container, path)}`, options);
  return `${workflows.container}/${path}`;
}

/**
 * Reads an overflow blob by its location. Only the workflows container is followed (a location
 * comes from a message); an undecodable or damaged blob is `corrupt`.
 */
export async function getOverflow(
  io: BlobIo,
  workflows: BlobTarget,
  location: string,
  options: CallOptions | undefined,
): Promise<CompactUpstreamRefs> {
  const parsed = typeof location === 'string' ? parseBlobLocation(location) : null;
  if (parsed === null) {
    throw new JobqError(
      'invalid-argument',
      `upstream overflow: "${String(location).slice(0, 200)}" is not a "<container>/<path>" location`,
    );
  }
  if (parsed.container !== workflows.container) {
    throw new JobqError(
      'invalid-argument',
      `upstream overflow: location "${location.slice(0, 200)}" is not in the state container "${workflows.container}"; refusing to follow it`,
    );
  }
  checkBlobPath(parsed.path, 'upstream overflow');
  const where = `upstream overflow ${describeBlob(parsed.container, parsed.path)}`;
  const { bytes, storedMd5 } = await io.download(workflows, parsed.path, `read ${where}`, undefined, options);
  verifyContent(where, md5Base64(bytes), bytes.byteLength, storedMd5, {});
  const decoded = decodeUpstreamOverflow(decodeUtf8(bytes, where));
  if (!decoded.ok) throw new JobqError('corrupt', `${where}: ${decoded.error}`);
  return decoded.value;
}
