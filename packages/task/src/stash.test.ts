import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { canonicalOutputBlobPath, blobOutputRef, makeStashMarker, parseOutputRef } from '@jobq/dag-core/wire';
import { isJobqError } from '@jobq/ports';
import { openOutputStore, type AzureOutputStore } from '@jobq/store-azure';
import {
  StashedFile,
  configureTaskHelpers,
  getFile,
  getRealUpstreamTasks,
  getUpstreamOutput,
  getUpstreamOutputs,
  setOutput,
  stashFile,
} from './index';

const WORKFLOW = 'wf-stash';
const PREFIX = `Stash${process.pid}`;

let azurite: LocalStorage;
let store: AzureOutputStore;
let dir: string;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  store = await openOutputStore({ connection: { connectionString: azurite.connectionString }, prefix: PREFIX });
  dir = await mkdtemp(join(tmpdir(), 'jobq-task-stash-'));
});

afterAll(async () => {
  configureTaskHelpers();
  await rm(dir, { recursive: true, force: true });
  await azurite.stop();
});

afterEach(() => {
  configureTaskHelpers();
});

function md5(bytes: Uint8Array | string): string {
  return createHash('md5').update(bytes).digest('base64');
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** The environment the workflow processor gives task `task`; the store is injected unless `inject` is false. */
async function taskEnv(
  task: string,
  refs: Record<string, string | null> = {},
  options: { inject?: boolean; realUpstream?: string[] } = {},
) {
  counter++;
  const taskDir = join(dir, `${task}-${counter}`);
  await mkdir(taskDir, { recursive: true });
  const outputFile = join(taskDir, 'output.json');
  await writeFile(outputFile, '');
  const refsFile = join(taskDir, 'refs.json');
  await writeFile(refsFile, JSON.stringify(refs));
  const env: NodeJS.ProcessEnv = {
    JOBQ_WORKFLOW_ID: WORKFLOW,
    JOBQ_WORKFLOW_TASK: task,
    JOBQ_WORKFLOW_ATTEMPT: '1',
    JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}`,
    JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString,
    JOBQ_OUTPUT_FILE: outputFile,
    JOBQ_WORKFLOW_UPSTREAM_REFS: refsFile,
  };
  if (options.realUpstream) {
    const realFile = join(taskDir, 'real.json');
    await writeFile(realFile, JSON.stringify(options.realUpstream));
    env.JOBQ_WORKFLOW_REAL_UPSTREAM = realFile;
  }
  configureTaskHelpers(options.inject === false ? { env } : { env, outputs: store });
  return { env, outputFile, taskDir };
}

async function localFile(name: string, content: Uint8Array | string): Promise<string> {
  const path = join(dir, `${counter}-${name}`);
  await mkdir(dir, { recursive: true });
  await writeFile(path, content);
  return path;
}

describe('blob outputs', () => {
  const big = { rows: Array.from({ length: 1024 }, (_, i) => ({ i, text: 'y'.repeat(30) })) };
  let ref: string;

  beforeAll(async () => {
    const text = JSON.stringify(big);
    expect(Buffer.byteLength(text)).toBeGreaterThan(40 * 1024);
    const put = await store.putOutput(WORKFLOW, 'big', 1, text);
    expect(put.placement).toBe('blob');
    ref = put.ref!;
  });

  it('getUpstreamOutput downloads and verifies a blob output (ref with md5)', async () => {
    await taskEnv('child', { big: ref });
    expect(await getUpstreamOutput('big')).toEqual(big);
  });

  it('reads the canonical ref without md5 (as expanded from compact refs)', async () => {
    await taskEnv('child', { big: blobOutputRef(store.outputsContainer, canonicalOutputBlobPath(WORKFLOW, 'big', 1)) });
    expect(await getUpstreamOutput('big')).toEqual(big);
  });

  it('builds its store from the environment when none is injected (JOBQ_WORKFLOW_PREFIX + connection string)', async () => {
    await taskEnv('child', { big: ref, small: '{"a":1}' }, { inject: false });
    expect(await getUpstreamOutputs()).toEqual({ big, small: { a: 1 } });
  });

  it("a second delivery of the same attempt gets the first one's ref: the child reads the first output, with or without md5", async () => {
    const first = await store.putOutput(WORKFLOW, 'redelivered', 1, JSON.stringify({ ...big, v: 1 }));
    const second = await store.putOutput(WORKFLOW, 'redelivered', 1, JSON.stringify({ ...big, v: 2 }));
    expect(second.ref).toBe(first.ref);
    await taskEnv('child', { redelivered: second.ref });
    expect(await getUpstreamOutput('redelivered')).toEqual({ ...big, v: 1 });
    await taskEnv('child', { redelivered: blobOutputRef(store.outputsContainer, canonicalOutputBlobPath(WORKFLOW, 'redelivered', 1)) });
    expect(await getUpstreamOutput('redelivered')).toEqual({ ...big, v: 1 });
  });

  it('a blob ref whose md5 is not the one stored with the blob is corrupt', async () => {
    await store.putOutput(WORKFLOW, 'other-md5', 1, JSON.stringify({ ...big, v: 1 }));
    const path = canonicalOutputBlobPath(WORKFLOW, 'other-md5', 1);
    await taskEnv('child', { 'other-md5': blobOutputRef(store.outputsContainer, path, md5(JSON.stringify({ ...big, v: 2 }))) });
    expect(isJobqError(await rejection(getUpstreamOutput('other-md5')), 'corrupt')).toBe(true);
  });
});

describe('stashFile and StashedFile', () => {
  it('stashFile uploads under workflow-files/{id}/{task}/{attempt}/{basename} and returns the marker; it does not set the output', async () => {
    const { outputFile, env } = await taskEnv('train');
    const path = await localFile('model.bin', 'weights-v1');
    const marker = await stashFile(path);
    expect(marker).toEqual(
      makeStashMarker({ blobName: `workflow-files/${WORKFLOW}/train/1/${counter}-model.bin`, md5: md5('weights-v1'), size: 10 }),
    );
    expect(await readFile(outputFile, 'utf8')).toBe('');
    const renamed = await stashFile(path, { key: 'weights.bin' });
    expect(renamed.__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/train/1/weights.bin`);
    expect(isJobqError(await rejection(stashFile(path, { key: '../x' })), 'invalid-argument')).toBe(true);
    // A later attempt stashes beside, not over, the first one's files.
    configureTaskHelpers({ env: { ...env, JOBQ_WORKFLOW_ATTEMPT: '3' }, outputs: store });
    const third = await stashFile(path, { key: 'weights.bin' });
    expect(third.__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/train/3/weights.bin`);
    for (const bad of [undefined, '0', 'x', '1.5']) {
      configureTaskHelpers({ env: { ...env, JOBQ_WORKFLOW_ATTEMPT: bad }, outputs: store });
      const error = await rejection(stashFile(path));
      expect([bad, isJobqError(error, 'invalid-config')]).toEqual([bad, true]);
      expect((error as Error).message).toMatch(/JOBQ_WORKFLOW_ATTEMPT/);
    }
  });

  it('markers under top-level keys come back as handles; getFile finds them; downloadTo/readBytes verify', async () => {
    await taskEnv('train');
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const path = await localFile('data.bin', bytes);
    const producerOutput = { data: await stashFile(path), note: 'ok', nested: { deep: await stashFile(path, { key: 'deep.bin' }) } };
    const { taskDir } = await taskEnv('eval', { train: JSON.stringify(producerOutput) });

    const output = (await getUpstreamOutput('train')) as Record<string, unknown>;
    expect(output.note).toBe('ok');
    expect(output.data).toBeInstanceOf(StashedFile);
    // Only the values of top-level keys become handles (docs/design.md#outputs; findStashMarkers).
    expect(output.nested).toEqual(JSON.parse(JSON.stringify(producerOutput.nested)));

    const file = await getFile('train', 'data');
    expect(file).toBeInstanceOf(StashedFile);
    expect([file.blobName, file.md5, file.size, file.fileName]).toEqual([
      `workflow-files/${WORKFLOW}/train/1/${counter - 1}-data.bin`,
      md5(bytes),
      70_000,
      `${counter - 1}-data.bin`,
    ]);
    expect(Buffer.from(await file.readBytes()).equals(bytes)).toBe(true);
    const dest = join(taskDir, 'copy.bin');
    await file.downloadTo(dest);
    expect((await readFile(dest)).equals(bytes)).toBe(true);

    const missing = await rejection(getFile('train'));
    expect(isJobqError(missing, 'not-found')).toBe(true);
    expect((missing as Error).message).toMatch(/keys holding a stashed file: "data"/);
  });

  it('a top-level marker is the handle itself; getFile without a key returns it; getUpstreamOutputs maps markers too', async () => {
    await taskEnv('train');
    const path = await localFile('model.pt', 'the model');
    const marker = await stashFile(path);
    await taskEnv('eval', { train: JSON.stringify(marker), other: '{"m":' + JSON.stringify(marker) + '}' });
    const output = await getUpstreamOutput('train');
    expect(output).toBeInstanceOf(StashedFile);
    expect(Buffer.from(await (output as StashedFile).readBytes()).toString()).toBe('the model');
    expect((await getFile('train')).blobName).toBe((output as StashedFile).blobName);
    expect(((await rejection(getFile('train', 'x'))) as Error).message).toMatch(/its output itself is a stashed file/);
    const all = await getUpstreamOutputs();
    expect(all.train).toBeInstanceOf(StashedFile);
    expect((all.other as { m: unknown }).m).toBeInstanceOf(StashedFile);
  });

  it('a stashed file replaced behind its marker is corrupt, and downloadTo leaves no file', async () => {
    await taskEnv('train');
    const path = await localFile('ckpt.bin', 'AAAAAAAAAA');
    const marker = await stashFile(path);
    const { taskDir } = await taskEnv('eval', { train: JSON.stringify({ ckpt: marker }) });
    const file = await getFile('train', 'ckpt');

    // Same size, other bytes: the md5 check catches it.
    await store.putFile(WORKFLOW, 'train', 1, `${counter - 1}-ckpt.bin`, Buffer.from('BBBBBBBBBB'));
    expect(isJobqError(await rejection(file.readBytes()), 'corrupt')).toBe(true);
    const dest = join(taskDir, 'ckpt.bin');
    expect(isJobqError(await rejection(file.downloadTo(dest)), 'corrupt')).toBe(true);
    expect(await readdir(taskDir)).not.toContain('ckpt.bin');

    // Other size: the size check catches it.
    await store.putFile(WORKFLOW, 'train', 1, `${counter - 1}-ckpt.bin`, Buffer.from('short'));
    expect(isJobqError(await rejection(file.readBytes()), 'corrupt')).toBe(true);
  });
});

describe('end to end (in process): producer → worker stores the output → consumer', () => {
  it('passes a blob output holding a stashed file through the real store', async () => {
    // Producer "train": stashes a file and sets a > 32 KiB output holding its marker.
    const { outputFile } = await taskEnv('train');
    const weights = Buffer.from('w'.repeat(5000));
    const path = await localFile('model.pt', weights);
    await setOutput({ model: await stashFile(path), history: 'h'.repeat(40 * 1024) });

    // The worker side: store what the script wrote, as the workflow processor does (docs/design.md#outputs).
    const stored = await store.putOutput(WORKFLOW, 'train', 1, await readFile(outputFile, 'utf8'));
    expect(stored.placement).toBe('blob');
    expect(parseOutputRef(stored.ref!).kind).toBe('blob');

    // Consumer "report" with parents train (blob), prep (inline), skipped (null) and failed (absent).
    const { taskDir, outputFile: reportOutput } = await taskEnv(
      'report',
      { prep: '{"rows":3}', train: stored.ref, skipped: null },
      { realUpstream: ['prep', 'train', 'skipped', 'failed'] },
    );
    expect(await getRealUpstreamTasks()).toEqual(['prep', 'train', 'skipped', 'failed']);
    const all = await getUpstreamOutputs();
    expect(Object.keys(all)).toEqual(['prep', 'train', 'skipped']);
    expect(all.prep).toEqual({ rows: 3 });
    expect(all.skipped).toBeNull();
    const train = all.train as { model: StashedFile; history: string };
    expect(train.model).toBeInstanceOf(StashedFile);
    expect(train.history).toHaveLength(40 * 1024);
    expect(isJobqError(await rejection(getUpstreamOutput('failed')), 'not-found')).toBe(true);

    const dest = join(taskDir, 'model.pt');
    await (await getFile('train', 'model')).downloadTo(dest);
    expect((await readFile(dest)).equals(weights)).toBe(true);

    // Passing the handle on keeps a valid marker in the consumer's output.
    await setOutput({ model: train.model, rows: 3 });
    expect(JSON.parse(await readFile(reportOutput, 'utf8'))).toEqual({
      model: makeStashMarker({ blobName: train.model.blobName, md5: md5(weights), size: 5000 }),
      rows: 3,
    });
  });
});
