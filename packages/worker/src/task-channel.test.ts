import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeStashMarker, type StashMarker } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { isJobqError, type JobqError } from '@jobq/ports';
import { openOutputStore, type AzureOutputStore } from '@jobq/store-azure';
import { TaskChannelClient } from '@jobq/task';
import { StashedFile, configureTaskHelpers, getFile, getUpstreamOutput, getUpstreamOutputs, stashFile } from '@jobq/task';
import { startTaskChannel, type TaskChannel } from './task-channel';

const PREFIX = `Chan${process.pid}`;
const WORKFLOW = 'wf-chan';

let azurite: LocalStorage;
let store: AzureOutputStore;
let work: string;
const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 13) % 256));
const big = { rows: Array.from({ length: 1200 }, (_, i) => ({ i, text: 'r'.repeat(30) })) };
let modelMarker: StashMarker;
let trainRef: string;
let siblingRef: string;
let siblingMarker: StashMarker;
let foreignRef: string;
let foreignMarker: StashMarker;
const channels: TaskChannel[] = [];

beforeAll(async () => {
  azurite = await startAzurite();
  store = await openOutputStore({ connection: { connectionString: azurite.connectionString }, prefix: PREFIX });
  work = await mkdtemp(join(tmpdir(), 'jobq-chan-test-'));
  // Parent "train": a blob output holding a stashed file under key "model".
  modelMarker = await store.putFile(WORKFLOW, 'train', 1, 'model.bin', bytes);
  const train = await store.putOutput(WORKFLOW, 'train', 1, JSON.stringify({ ...big, model: makeStashMarker(modelMarker) }));
  expect(train.placement).toBe('blob');
  trainRef = train.ref!;
  // A task of the same workflow that is not a parent, and another workflow: both out of reach.
  siblingMarker = await store.putFile(WORKFLOW, 'sibling', 1, 'secret.bin', Buffer.from('sibling secret'));
  siblingRef = (await store.putOutput(WORKFLOW, 'sibling', 1, JSON.stringify({ ...big, secret: makeStashMarker(siblingMarker) }))).ref!;
  foreignMarker = await store.putFile('wf-foreign', 'train', 1, 'model.bin', Buffer.from('foreign model'));
  foreignRef = (await store.putOutput('wf-foreign', 'train', 1, JSON.stringify({ ...big, model: makeStashMarker(foreignMarker) }))).ref!;
});

afterEach(async () => {
  configureTaskHelpers();
  await Promise.all(channels.splice(0).map((c) => c.close()));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
  await azurite.stop();
});

let counter = 0;

/** A channel for task "eval" of WORKFLOW with parents train (blob), whole (inline, a stash marker) and skipped. */
async function evalChannel(dirName = `eval-${++counter}`, extraRefs: Record<string, string> = {}) {
  const dir = join(work, dirName);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const upstreamRefs = { train: trainRef, whole: JSON.stringify(makeStashMarker(modelMarker)), skipped: null, ...extraRefs };
  const lines: string[] = [];
  const channel = await startTaskChannel({
    dir,
    workflowId: WORKFLOW,
    taskName: 'eval',
    attemptNo: 1,
    upstreamRefs,
    outputs: store,
    log: (line) => lines.push(line),
  });
  channels.push(channel);
  const refsFile = join(dir, 'upstream-refs.json');
  await writeFile(refsFile, JSON.stringify(upstreamRefs));
  // What the worker gives the task: no storage connection string, no prefix to build a store from.
  const env: NodeJS.ProcessEnv = {
    JOBQ_WORKFLOW_ID: WORKFLOW,
    JOBQ_WORKFLOW_TASK: 'eval',
    JOBQ_WORKFLOW_ATTEMPT: '1',
    JOBQ_WORKFLOW_UPSTREAM_REFS: refsFile,
    JOBQ_OUTPUT_FILE: join(dir, 'output.json'),
    ...channel.env,
  };
  return { dir, channel, env, lines, client: new TaskChannelClient(channel.env.JOBQ_TASK_SOCKET!, channel.env.JOBQ_TASK_TOKEN!) };
}

async function rejection(promise: Promise<unknown>): Promise<JobqError> {
  try {
    await promise;
  } catch (error) {
    if (isJobqError(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

/** A raw request to the channel: status and body text. */
function raw(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body = '',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, method, path, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('task channel: what an attempt may do', () => {
  it('the helpers read a blob output and its stashed file, and stash a file, with no storage credential', async () => {
    const { env, dir } = await evalChannel();
    expect(Object.keys(env).filter((name) => /CONNECTION_STRING|KEY|SAS|^AZURE_/.test(name))).toEqual([]);
    configureTaskHelpers({ env });

    const output = (await getUpstreamOutput('train')) as { rows: unknown[]; model: StashedFile };
    expect(output.rows).toEqual(big.rows);
    expect(output.model).toBeInstanceOf(StashedFile);
    expect(Buffer.from(await output.model.readBytes()).equals(bytes)).toBe(true);

    const file = await getFile('train', 'model');
    const dest = join(dir, 'model-copy.bin');
    await file.downloadTo(dest);
    expect((await readFile(dest)).equals(bytes)).toBe(true);
    // The inline parent whose output is the marker itself.
    expect(Buffer.from(await (await getFile('whole')).readBytes()).equals(bytes)).toBe(true);
    const all = await getUpstreamOutputs();
    expect(Object.keys(all)).toEqual(['train', 'whole', 'skipped']);
    expect(all.skipped).toBeNull();

    const source = join(dir, 'report.txt');
    await writeFile(source, 'the report');
    const marker = await stashFile(source, { key: 'report.txt' });
    expect(marker.__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/eval/1/report.txt`);
    const stashed = await store.getFile({
      blobName: marker.__jobq_stash__.blob_name,
      md5: marker.__jobq_stash__.md5,
      size: marker.__jobq_stash__.size,
    });
    expect(Buffer.from(stashed).toString()).toBe('the report');
  });

  it("refuses (403) a non-parent's output, another workflow's blob, and a marker that is in no parent's output", async () => {
    const { client } = await evalChannel();
    const refusals = [
      await rejection(client.getOutput(siblingRef)),
      await rejection(client.getOutput(foreignRef)),
      await rejection(client.getOutput('blob:chan-workflows/wf-chan.json')),
      await rejection(client.getFile(siblingMarker)),
      await rejection(client.getFile(foreignMarker)),
      await rejection(client.getFile({ ...modelMarker, size: modelMarker.size + 1 })),
    ];
    for (const error of refusals) {
      expect(error).toMatchObject({ code: 'auth', details: { statusCode: 403 } });
      expect(error.message.split('\n')).toHaveLength(1);
    }
    expect(refusals[0]!.message).toMatch(/is not the output of a direct parent of task "eval"/);
    expect(refusals[3]!.message).toMatch(/is not in the output of a direct parent of task "eval"/);
    expect(refusals[4]!.message).toMatch(/belongs to another workflow than "wf-chan"/);
  });

  it('refuses (403) to stash for another workflow, task or attempt, and stores nothing', async () => {
    const { client, dir } = await evalChannel();
    const source = join(dir, 'x.bin');
    await writeFile(source, 'x');
    const [otherWorkflow, otherTask, otherAttempt] = [
      await rejection(client.putFileFromPath('wf-foreign', 'eval', 1, 'planted.bin', source)),
      await rejection(client.putFileFromPath(WORKFLOW, 'train', 1, 'planted.bin', source)),
      await rejection(client.putFileFromPath(WORKFLOW, 'eval', 2, 'planted.bin', source)),
    ];
    expect(otherWorkflow).toMatchObject({ code: 'auth', details: { statusCode: 403 } });
    expect(otherTask.message).toMatch(/only for itself/);
    expect(otherAttempt.message).toMatch(/only for itself/);
    const planted = await rejection(
      store.getFile({ blobName: 'workflow-files/wf-foreign/eval/1/planted.bin', md5: modelMarker.md5, size: 1 }),
    );
    expect(planted.code).toBe('not-found');
  });

  it('a wrong or missing token is 401; a route it does not offer is 403; both one line', async () => {
    const { channel, client } = await evalChannel();
    const socket = channel.env.JOBQ_TASK_SOCKET!;
    const wrong = new TaskChannelClient(socket, 'f'.repeat(64));
    const error = await rejection(wrong.getOutput(trainRef));
    expect(error).toMatchObject({ code: 'auth', details: { statusCode: 401 } });

    const body = JSON.stringify({ ref: trainRef });
    const missing = await raw(socket, 'POST', '/v1/output', { 'content-type': 'application/json' }, body);
    expect(missing.status).toBe(401);
    const other = await raw(socket, 'GET', '/v1/workflows', { authorization: `Bearer ${channel.env.JOBQ_TASK_TOKEN!}` });
    expect(other.status).toBe(403);
    expect((JSON.parse(other.text) as { error: { message: string } }).error.message).toMatch(/does not offer "GET \/v1\/workflows"/);
    // The right token still works.
    expect(await client.getOutput(trainRef)).toMatchObject({ rows: big.rows });
  });

  it('the socket is private (0600); close() removes it and later calls cannot reach the worker', async () => {
    const { channel, client } = await evalChannel();
    const socket = channel.env.JOBQ_TASK_SOCKET!;
    expect((await stat(socket)).mode & 0o777).toBe(0o600);
    await channel.close();
    expect(existsSync(socket)).toBe(false);
    const error = await rejection(client.getOutput(trainRef));
    expect(error.code).toBe('unavailable');
    await channel.close(); // twice is fine
  });

  it('falls back to a short socket path when the attempt directory is too deep for one', async () => {
    const { channel, client, dir } = await evalChannel(`deep-${'d'.repeat(60)}/${'e'.repeat(60)}`);
    const socket = channel.env.JOBQ_TASK_SOCKET!;
    expect(Buffer.byteLength(join(dir, 'task.sock'))).toBeGreaterThan(107);
    expect(Buffer.byteLength(socket)).toBeLessThanOrEqual(107);
    expect(await client.getOutput(trainRef)).toMatchObject({ rows: big.rows });
    await channel.close();
    expect(existsSync(join(socket, '..'))).toBe(false);
  });

  it("the store's errors come back with their code and one line: a parent blob that fails its md5 is corrupt, a missing file not-found", async () => {
    const wrongMd5 = `${trainRef.slice(0, trainRef.lastIndexOf(':'))}:${siblingMarker.md5}`;
    const ghost: StashMarker = { blobName: `workflow-files/${WORKFLOW}/ghost/gone.bin`, md5: siblingMarker.md5, size: 3 };
    const { client, lines } = await evalChannel(undefined, { damaged: wrongMd5, ghost: JSON.stringify(makeStashMarker(ghost)) });
    const corrupt = await rejection(client.getOutput(wrongMd5));
    expect(corrupt).toMatchObject({ code: 'corrupt', details: { statusCode: 422 } });
    const missing = await rejection(client.getFile(ghost));
    expect(missing).toMatchObject({ code: 'not-found', details: { statusCode: 404 } });
    for (const error of [corrupt, missing]) expect(error.message.split('\n')).toHaveLength(1);
    // The worker's log says which request failed, without the token.
    expect(lines.some((line) => line.includes('POST /v1/output failed'))).toBe(true);
  });

  it('streams big files both ways (8 MiB stashed, then fetched by the child that sees it in its parent output)', async () => {
    const { client, dir } = await evalChannel();
    const large = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < large.length; i += 4096) large.writeUInt32LE(i, i);
    const source = join(dir, 'large.bin');
    await writeFile(source, large);
    const marker = await client.putFileFromPath(WORKFLOW, 'eval', 1, 'large.bin', source);
    expect(marker).toMatchObject({ blobName: `workflow-files/${WORKFLOW}/eval/1/large.bin`, size: large.length });

    const child = await evalChannel(undefined, { eval: JSON.stringify({ large: makeStashMarker(marker) }) });
    const dest = join(child.dir, 'large-copy.bin');
    await child.client.downloadFileTo(marker, dest);
    expect((await readFile(dest)).equals(large)).toBe(true);
    // Files in transit through the worker are gone once the request is answered.
    expect((await readdir(dir)).filter((name) => name.startsWith('.transfer-'))).toEqual([]);
    expect((await readdir(child.dir)).filter((name) => name.startsWith('.transfer-') || name.endsWith('.jobq-part'))).toEqual([]);
  });

  it('a refused upload is answered before its bytes are sent (Expect: 100-continue)', async () => {
    const { channel } = await evalChannel();
    const upload = (query: string) =>
      new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
        let continued = false;
        const req = request({
          socketPath: channel.env.JOBQ_TASK_SOCKET!,
          method: 'PUT',
          path: `/v1/stash?${query}`,
          agent: false,
          headers: { authorization: `Bearer ${channel.env.JOBQ_TASK_TOKEN!}`, 'content-length': '5', expect: '100-continue' },
        });
        req.on('continue', () => {
          continued = true;
          req.end('bytes');
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, continued }));
        });
        req.on('error', reject);
      });
    expect(await upload('name=a.bin&workflow=wf-foreign')).toEqual({ status: 403, continued: false });
    expect(await upload('name=..')).toEqual({ status: 400, continued: false });
    expect(await upload('name=a.bin')).toEqual({ status: 200, continued: true });
  });
});
