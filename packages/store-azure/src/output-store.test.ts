import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { BlobServiceClient } from '@azure/storage-blob';
import { AZURITE_ACCOUNT_KEY, startAzurite, type LocalStorage } from '@jobq/local';
import { expandUpstreamRefs } from '@jobq/dag-core/wire';
import { isJobqError } from '@jobq/ports';
import { describeOutputStoreContract } from '@jobq/ports/testing';
import { verifyContent } from './output-blob';
import { openOutputStore, parseWorkflowBlobs, type AzureOutputStore, type OutputStoreOptions } from './output-store';
import { corruptBlob as corruptBlobOf, deleteOutputContainers, faultInjector, outputStoreFixture } from './test-helpers/contract-fixtures';

let azurite: LocalStorage;
let service: BlobServiceClient;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  service = BlobServiceClient.fromConnectionString(azurite.connectionString);
});

afterAll(async () => {
  await azurite.stop();
});

/** A fresh prefix per store, so containers never collide between tests. */
function uniquePrefix(): string {
  counter++;
  return `out${process.pid}x${counter}`;
}

function md5(bytes: Uint8Array | string): string {
  return createHash('md5').update(bytes).digest('base64');
}

/** Damages a blob behind the store's back, keeping its stored Content-MD5. */
function corruptBlob(container: string, path: string): Promise<void> {
  return corruptBlobOf(service, container, path);
}

async function open(extra: Partial<OutputStoreOptions> = {}): Promise<AzureOutputStore> {
  return openOutputStore({
    connection: { connectionString: azurite.connectionString },
    prefix: uniquePrefix(),
    operationTimeoutInMs: 5_000,
    uploadRetryDelayInMs: 50,
    ...extra,
  });
}

function deleteContainers(store: AzureOutputStore): Promise<void> {
  return deleteOutputContainers(service, store);
}

describeOutputStoreContract('Azure Blob Storage (Azurite)', () => outputStoreFixture(azurite.connectionString));

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

function jsonOfBytes(bytes: number): string {
  return `"${'a'.repeat(bytes - 2)}"`;
}

describe('content verification', () => {
  // Azurite answers a whole-blob download with a Content-MD5 even when none is stored, so the
  // "nothing to verify against" case is checked here rather than through the service.
  const good = md5('abc');
  const bad = md5('abd');
  it.each([
    ['matching ref, stored and content md5', good, 3, good, { md5: good }, null],
    ['compact ref: stored md5 only', good, 3, good, {}, null],
    ['ref md5 only (nothing stored)', good, 3, undefined, { md5: good }, null],
    ['stored md5 differs from the ref', good, 3, bad, { md5: good }, /has Content-MD5 .* but .* was expected/],
    ['content differs from the stored md5', bad, 3, good, {}, /not to its stored Content-MD5/],
    ['content differs from the ref, nothing stored', bad, 3, undefined, { md5: good }, /not to the expected/],
    ['nothing to verify against', good, 3, undefined, {}, /no Content-MD5/],
    ['size differs from the marker', good, 3, good, { md5: good, size: 4 }, /has 3 bytes; 4 were expected/],
  ] as const)('%s', (_name, actualMd5, size, stored, expected, error) => {
    const check = () => verifyContent('blob "c/p"', actualMd5, size, stored, expected);
    if (error === null) expect(check).not.toThrow();
    else expect(check).toThrow(expect.objectContaining({ code: 'corrupt', message: expect.stringMatching(error) }));
  });
});

describe('Azure output store specifics', () => {
  it('writes the canonical blob with its Content-MD5 and content type, creating the container on first use', async () => {
    const store = await open();
    expect(store.outputsContainer).toBe(store.names.outputsContainer);
    expect(await service.getContainerClient(store.outputsContainer).exists()).toBe(false);
    const text = jsonOfBytes(40_000);
    const result = await store.putOutput('wf1', 'big', 1, text);
    const properties = await service.getContainerClient(store.outputsContainer).getBlobClient('outputs/wf1/big/1.json').getProperties();
    expect(Buffer.from(properties.contentMD5 ?? []).toString('base64')).toBe(md5(text));
    expect(properties.contentType).toBe('application/json');
    expect(result.ref).toBe(`blob:${store.outputsContainer}/outputs/wf1/big/1.json:${md5(text)}`);
    await deleteContainers(store);
  });

  it('reports corrupt, naming the blob, when the stored Content-MD5 is not the one in the ref', async () => {
    const store = await open();
    const text = jsonOfBytes(40_000);
    const result = await store.putOutput('wf1', 'retagged', 1, text);
    // Content intact, Content-MD5 header changed behind the store's back.
    const blob = service.getContainerClient(store.outputsContainer).getBlobClient('outputs/wf1/retagged/1.json');
    await blob.setHTTPHeaders({ blobContentMD5: Buffer.from(md5('something else'), 'base64'), blobContentType: 'application/json' });
    const error = await caught(store.getOutput(result.ref));
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect((error as Error).message).toContain(`${store.outputsContainer}/outputs/wf1/retagged/1.json`);
    // The compact form trusts the stored md5, which the content does not match either.
    expect(isJobqError(await caught(store.getOutput(`blob:${store.outputsContainer}/outputs/wf1/retagged/1.json`)), 'corrupt')).toBe(true);
    await deleteContainers(store);
  });

  it('creates each output blob once, for uploads in one request and in blocks alike: later deliveries of the attempt adopt it', async () => {
    const store = await open();
    const blobs = service.getContainerClient(store.outputsContainer);
    const small = jsonOfBytes(40_000);
    const big = jsonOfBytes(9 * 1024 * 1024 + 3); // over the 4 MiB single-request limit: staged blocks and a commit
    const bigger = `"${'b'.repeat(5 * 1024 * 1024)}"`;
    // A small output first: a big one of the same attempt (blocks) must not replace it.
    const first = await store.putOutput('wf12', 'single-first', 1, small);
    expect(first).toEqual({
      ref: `blob:${store.outputsContainer}/outputs/wf12/single-first/1.json:${md5(small)}`,
      placement: 'blob',
      bytes: 40_000,
    });
    expect(await store.putOutput('wf12', 'single-first', 1, big)).toEqual({ ...first, adopted: true });
    // A big output first (blocks): neither a small nor another big one replaces it.
    const blockFirst = await store.putOutput('wf12', 'blocks-first', 1, big);
    expect(blockFirst.ref).toBe(`blob:${store.outputsContainer}/outputs/wf12/blocks-first/1.json:${md5(big)}`);
    for (const text of [small, bigger]) {
      expect(await store.putOutput('wf12', 'blocks-first', 1, text)).toEqual({
        ref: blockFirst.ref,
        placement: 'blob',
        bytes: Buffer.byteLength(big),
        adopted: true,
      });
    }
    for (const [path, text] of [
      ['outputs/wf12/single-first/1.json', small],
      ['outputs/wf12/blocks-first/1.json', big],
    ] as const) {
      const bytes = await blobs.getBlobClient(path).downloadToBuffer();
      expect(bytes.equals(Buffer.from(text))).toBe(true);
    }
    expect(await store.getOutput(blockFirst.ref)).toBe(JSON.parse(big));
    await deleteContainers(store);
  });

  it('gives two concurrent deliveries uploading in blocks the same ref', async () => {
    const store = await open();
    const texts = [`"${'a'.repeat(5 * 1024 * 1024)}"`, `"${'b'.repeat(6 * 1024 * 1024)}"`];
    const results = await Promise.all(texts.map((text) => store.putOutput('wf13', 'race', 1, text)));
    expect(results[0]?.ref).toBe(results[1]?.ref);
    expect(results.filter((r) => r.adopted === true)).toHaveLength(1);
    const stored = await service.getContainerClient(store.outputsContainer).getBlobClient('outputs/wf13/race/1.json').downloadToBuffer();
    expect(texts.map((t) => md5(t))).toContain(md5(stored));
    expect(results[0]?.ref).toBe(`blob:${store.outputsContainer}/outputs/wf13/race/1.json:${md5(stored)}`);
    await deleteContainers(store);
  });

  it('adopts its own blob when the answer to the upload was lost and the retry finds it there', async () => {
    const faults = faultInjector();
    const store = await open({ blobPolicies: [faults.policy] });
    await store.putOutput('wf14', 'warm-up', 1, jsonOfBytes(40_000));
    faults.state.loseAnswers = 1;
    const text = jsonOfBytes(40_000);
    const result = await store.putOutput('wf14', 'lost', 1, text);
    expect(result).toEqual({
      ref: `blob:${store.outputsContainer}/outputs/wf14/lost/1.json:${md5(text)}`,
      placement: 'blob',
      bytes: 40_000,
      adopted: true,
    });
    expect(await store.getOutput(result.ref)).toBe(JSON.parse(text));
    await deleteContainers(store);
  });

  it('still reads outputs at the legacy path {wf}/{task}.json, by a ref with md5 or by a legacy compact s list', async () => {
    const store = await open();
    const container = service.getContainerClient(store.outputsContainer);
    await container.create();
    const body = Buffer.from(jsonOfBytes(40_000));
    await container
      .getBlockBlobClient('wf15/old/task.json')
      .uploadData(body, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(body), 'base64') } });
    expect(await store.getOutput(`blob:${store.outputsContainer}/wf15/old/task.json:${md5(body)}`)).toBe(JSON.parse(body.toString()));
    const refs = expandUpstreamRefs('wf15', { s: ['old/task'] }, store.outputsContainer);
    expect(refs).toEqual({ 'old/task': `blob:${store.outputsContainer}/wf15/old/task.json` });
    expect(await store.getOutput(refs['old/task'] ?? null)).toBe(JSON.parse(body.toString()));
    // A stash marker written before files were keyed by attempt.
    await container
      .getBlockBlobClient('workflow-files/wf15/t/f.bin')
      .uploadData(Buffer.from('old file'), { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5('old file'), 'base64') } });
    expect(Buffer.from(await store.getFile({ blobName: 'workflow-files/wf15/t/f.bin', md5: md5('old file'), size: 8 })).toString()).toBe(
      'old file',
    );
    await deleteContainers(store);
  });

  it('reports corrupt for a blob that is not JSON or not UTF-8', async () => {
    const store = await open();
    const container = service.getContainerClient(store.outputsContainer);
    await container.create();
    const notJson = Buffer.from('{"truncated":');
    await container
      .getBlockBlobClient('wf/notjson.json')
      .uploadData(notJson, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(notJson), 'base64') } });
    expect(isJobqError(await caught(store.getOutput(`blob:${store.outputsContainer}/wf/notjson.json`)), 'corrupt')).toBe(true);
    const notUtf8 = Buffer.from([0x22, 0xff, 0xfe, 0x22]);
    await container
      .getBlockBlobClient('wf/binary.json')
      .uploadData(notUtf8, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(notUtf8), 'base64') } });
    expect(isJobqError(await caught(store.getOutput(`blob:${store.outputsContainer}/wf/binary.json`)), 'corrupt')).toBe(true);
    await deleteContainers(store);
  });

  it('reads refs into the deployment containers it knows and refuses every other container', async () => {
    const store = await open({ outputs: { container: `elsewhere-${randomUUID().slice(0, 8)}` } });
    const { names } = store;
    // An output kept in {p}-outputs before JOBQ_WORKFLOW_BLOBS was set, and a blob in {p}-workflows.
    for (const name of [names.outputsContainer, names.workflowsContainer]) {
      const container = service.getContainerClient(name);
      await container.createIfNotExists();
      const body = Buffer.from('{"from":"' + name + '"}');
      await container
        .getBlockBlobClient('wf/t.json')
        .uploadData(body, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(body), 'base64') } });
      expect(await store.getOutput(`blob:${name}/wf/t.json:${md5(body)}`)).toEqual({ from: name });
    }
    // A container on the same account that is not the deployment's.
    const foreign = service.getContainerClient(`foreign-${randomUUID().slice(0, 8)}`);
    await foreign.create();
    const body = Buffer.from('{"secret":true}');
    await foreign
      .getBlockBlobClient('wf/t.json')
      .uploadData(body, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(body), 'base64') } });
    const error = await caught(store.getOutput(`blob:${foreign.containerName}/wf/t.json:${md5(body)}`));
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toMatch(/refusing to follow it/);
    // Overflow locations are followed only into {p}-workflows.
    expect(isJobqError(await caught(store.getUpstreamOverflow(`${names.outputsContainer}/wf/t.json`)), 'invalid-argument')).toBe(true);
    await foreign.delete();
    await deleteContainers(store);
  });

  it('uses a separate outputs container on its own account (JOBQ_WORKFLOW_BLOBS); overflow blobs stay in {p}-workflows on the state account', async () => {
    const second = await startAzurite();
    try {
      const spec = parseWorkflowBlobs('devstoreaccount1/shared-outputs');
      const store = await open({ outputs: { connection: { connectionString: second.connectionString }, container: spec.container } });
      expect(store.outputsContainer).toBe('shared-outputs');
      const text = jsonOfBytes(50_000);
      const result = await store.putOutput('wf2', 'big', 1, text);
      expect(result.ref).toBe(`blob:shared-outputs/outputs/wf2/big/1.json:${md5(text)}`);
      expect(await store.getOutput(result.ref)).toBe(JSON.parse(text));
      const marker = await store.putFile('wf2', 'big', 1, 'f.txt', Buffer.from('hello'));
      expect(Buffer.from(await store.getFile(marker)).toString()).toBe('hello');
      const secondService = BlobServiceClient.fromConnectionString(second.connectionString);
      expect(await secondService.getContainerClient('shared-outputs').getBlobClient('outputs/wf2/big/1.json').exists()).toBe(true);
      expect(await secondService.getContainerClient('shared-outputs').getBlobClient(marker.blobName).exists()).toBe(true);
      expect(await service.getContainerClient('shared-outputs').exists()).toBe(false);
      const location = await store.putUpstreamOverflow('wf2', 'next', 1, { s: { '1': ['big'] } });
      expect(location).toBe(`${store.names.workflowsContainer}/upstream/wf2/next/1.json`);
      expect(await service.getContainerClient(store.names.workflowsContainer).getBlobClient('upstream/wf2/next/1.json').exists()).toBe(
        true,
      );
      expect(await store.getUpstreamOverflow(location)).toEqual({ s: { '1': ['big'] } });
      await deleteContainers(store);
    } finally {
      await second.stop();
    }
  });

  it("purges a workflow's outputs, files and task logs on a separate outputs account and in {p}-outputs, by whole {wf}/ folders only", async () => {
    const second = await startAzurite();
    try {
      const store = await open({ outputs: { connection: { connectionString: second.connectionString }, container: 'shared-outputs' } });
      const shared = BlobServiceClient.fromConnectionString(second.connectionString).getContainerClient('shared-outputs');
      const local = service.getContainerClient(store.names.outputsContainer);
      await shared.createIfNotExists();
      await local.createIfNotExists();
      const put = (container: typeof shared, name: string) => container.getBlockBlobClient(name).upload('x', 1);
      // Workflow "outputs" (named like an engine folder), its neighbours "outputs.b" and "outputsb", and "wf".
      const doomed = [
        'outputs/outputs/t/1.json',
        'workflow-files/outputs/t/1/f.bin',
        'workflow-logs/outputs/t/1.log',
        'workflow-logs/outputs/t/2.log',
      ];
      const spared = [
        'outputs/outputs.b/t/1.json',
        'outputs/outputsb/t/1.json',
        'workflow-files/outputs.b/t/1/f.bin',
        'workflow-logs/outputs.b/t/1.log',
        'workflow-logs/wf/t/1.log',
        'outputs/wf/outputs/1.json',
        'outputs/t.json', // the legacy layout of a workflow named "outputs" is not a folder of it: left alone
      ];
      for (const name of [...doomed, ...spared]) await put(shared, name);
      // Written to {p}-outputs on the state account before JOBQ_WORKFLOW_BLOBS was set.
      await put(local, 'outputs/outputs/old/1.json');
      await put(local, 'outputs/outputs.b/old/1.json');
      expect(await store.deleteWorkflowOutputs('outputs')).toBe(doomed.length + 1);
      for (const name of doomed) expect(await shared.getBlobClient(name).exists()).toBe(false);
      for (const name of spared) expect(await shared.getBlobClient(name).exists()).toBe(true);
      expect(await local.getBlobClient('outputs/outputs/old/1.json').exists()).toBe(false);
      expect(await local.getBlobClient('outputs/outputs.b/old/1.json').exists()).toBe(true);
      expect(await store.deleteWorkflowOutputs('outputs')).toBe(0);
      await deleteContainers(store);
      // Containers that do not exist hold nothing to delete.
      expect(await store.deleteWorkflowOutputs('outputs')).toBe(0);
    } finally {
      await second.stop();
    }
  });

  it('refuses malformed JOBQ_WORKFLOW_BLOBS values and outputs containers with invalid-config', async () => {
    for (const spec of ['account', 'ACCOUNT/outputs', 'acct/Outputs', 'acct/a/b', 'ab/outputs', 'acct/']) {
      expect(() => parseWorkflowBlobs(spec)).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    }
    expect(parseWorkflowBlobs('myacct/my-outputs')).toEqual({ account: 'myacct', container: 'my-outputs' });
    await expect(open({ outputs: { container: 'Bad_Name' } })).rejects.toMatchObject({ code: 'invalid-config' });
    await expect(open({ prefix: 'bad-prefix' })).rejects.toMatchObject({ code: 'invalid-config' });
    await expect(open({ uploadAttempts: 0 })).rejects.toMatchObject({ code: 'invalid-config' });
  });

  describe('with the outputs target down', () => {
    it('sends a 100 KiB output inline with a warning (stopped Azurite)', async () => {
      const second = await startAzurite();
      const store = await open({ outputs: { connection: { connectionString: second.connectionString }, container: 'outputs' } });
      await second.stop();
      const text = jsonOfBytes(100 * 1024);
      const result = await store.putOutput('wf3', 'fallback', 2, text);
      expect(result.placement).toBe('inline-fallback');
      expect(result.ref).toBe(text);
      expect(result.warning).toMatch(
        /^the output of task "fallback" \(attempt 2\) in workflow "wf3" \(102400 bytes\) could not be uploaded to blob "outputs\/outputs\/wf3\/fallback\/2.json" after 3 attempts/,
      );
      expect(result.warning).toMatch(/sent inline instead/);
      await deleteContainers(store);
    });

    it('fails a 600 KiB output clearly and quickly (closed port), never dropping it silently', async () => {
      const port = await closedPort();
      const connectionString = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_ACCOUNT_KEY};BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
      const store = await open({ outputs: { connection: { connectionString }, container: 'outputs' } });
      const error = await caught(store.putOutput('wf4', 'huge', 1, jsonOfBytes(600 * 1024)));
      expect(isJobqError(error)).toBe(true);
      if (!isJobqError(error)) return;
      expect(error.code).toBe('unavailable');
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(
        /^the output of task "huge" \(attempt 1\) in workflow "wf4" is 614400 bytes: it could not be uploaded to blob "outputs\/outputs\/wf4\/huge\/1.json" after 3 attempts/,
      );
      expect(error.message).toMatch(/too large to send inline \(limit 500 KiB, 512000 bytes\)$/);
      expect(error.details).toMatchObject({ bytes: 614_400, inlineLimit: 512_000 });
      // Small outputs never touch the target.
      expect((await store.putOutput('wf4', 'small', 1, '{"ok":true}')).placement).toBe('inline');
    });

    it('does not try again after a non-retryable failure, and never puts the account key in the error', async () => {
      const secret = Buffer.from('not-the-key-'.repeat(6)).toString('base64');
      const connectionString = azurite.connectionString.replace(AZURITE_ACCOUNT_KEY, secret);
      const store = await open({ outputs: { connection: { connectionString }, container: 'outputs' } });
      const result = await store.putOutput('wf5', 'denied', 1, jsonOfBytes(40_000));
      expect(result.placement).toBe('inline-fallback');
      expect(result.warning).toMatch(/after 1 attempt \(.*access denied/);
      const error = await caught(store.putOutput('wf5', 'denied-big', 1, jsonOfBytes(600 * 1024)));
      expect(isJobqError(error, 'auth')).toBe(true);
      for (const text of [String(result.warning), (error as Error).message, inspect(error, { depth: 10 }), JSON.stringify(error)]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(AZURITE_ACCOUNT_KEY);
      }
    });

    it('lets stash uploads fail with a typed, retryable error', async () => {
      const port = await closedPort();
      const connectionString = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_ACCOUNT_KEY};BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
      const store = await open({ outputs: { connection: { connectionString }, container: 'outputs' }, uploadAttempts: 1 });
      const error = await caught(store.putFile('wf6', 't', 1, 'f.bin', new Uint8Array([1])));
      expect(isJobqError(error, 'unavailable')).toBe(true);
      expect((error as Error).message).toMatch(/^stash file blob "outputs\/workflow-files\/wf6\/t\/1\/f.bin" failed/);
    });
  });

  it('leaves no partial file when a download to a path fails verification or the blob is gone', async () => {
    const store = await open();
    const dir = await mkdtemp(join(tmpdir(), 'jobq-stash-'));
    try {
      const marker = await store.putFile('wf7', 't', 1, 'big.bin', new Uint8Array(3 * 1024 * 1024).fill(1));
      await corruptBlob(store.outputsContainer, marker.blobName);
      const error = await caught(store.downloadFileTo(marker, join(dir, 'big.bin')));
      expect(isJobqError(error, 'corrupt')).toBe(true);
      expect((error as Error).message).toContain(marker.blobName);
      expect(await readdir(dir)).toEqual([]);
      await service.getContainerClient(store.outputsContainer).getBlobClient(marker.blobName).delete();
      expect(isJobqError(await caught(store.downloadFileTo(marker, join(dir, 'big.bin'))), 'not-found')).toBe(true);
      expect(await readdir(dir)).toEqual([]);
      // Aborted by the caller: nothing left either.
      const controller = new AbortController();
      controller.abort();
      expect(
        isJobqError(await caught(store.downloadFileTo(marker, join(dir, 'big.bin'), { abortSignal: controller.signal })), 'aborted'),
      ).toBe(true);
      expect(await readdir(dir)).toEqual([]);
      // A destination that is a directory, or in a directory that does not exist, is a clear local error.
      const good = await store.putFile('wf7', 't', 1, 'small.bin', new Uint8Array([1, 2]));
      expect(isJobqError(await caught(store.downloadFileTo(good, dir)), 'invalid-argument')).toBe(true);
      expect(await readdir(dir)).toEqual([]);
      expect(isJobqError(await caught(store.downloadFileTo(marker, join(dir, 'missing', 'x.bin'))), 'invalid-argument')).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await deleteContainers(store);
    }
  });

  it('stores the Content-MD5 of files uploaded in blocks (bytes and paths over 4 MiB), and refuses paths that are not files', async () => {
    const store = await open();
    const dir = await mkdtemp(join(tmpdir(), 'jobq-stash-'));
    try {
      const data = Buffer.alloc(9 * 1024 * 1024 + 17);
      for (let i = 0; i < data.length; i += 4096) data[i] = i % 251;
      const source = join(dir, 'big.bin');
      await writeFile(source, data);
      const fromPath = await store.putFileFromPath('wf11', 't', 1, 'from-path.bin', source);
      const fromBytes = await store.putFile('wf11', 't', 1, 'from-bytes.bin', data);
      const container = service.getContainerClient(store.outputsContainer);
      for (const marker of [fromPath, fromBytes]) {
        expect(marker).toMatchObject({ md5: md5(data), size: data.length });
        const properties = await container.getBlobClient(marker.blobName).getProperties();
        expect(Buffer.from(properties.contentMD5 ?? []).toString('base64')).toBe(md5(data));
        const dest = join(dir, `copy-${marker.blobName.split('/').pop()}`);
        await store.downloadFileTo(marker, dest);
        expect((await readFile(dest)).equals(data)).toBe(true);
      }
      for (const path of [join(dir, 'missing.bin'), dir]) {
        expect(isJobqError(await caught(store.putFileFromPath('wf11', 't', 1, 'x.bin', path)), 'invalid-argument')).toBe(true);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
      await deleteContainers(store);
    }
  });

  it('reports corrupt for an overflow blob that does not decode', async () => {
    const store = await open();
    const location = await store.putUpstreamOverflow('wf8', 't', 1, { n: ['p'] });
    const path = location.slice(location.indexOf('/') + 1);
    const body = Buffer.from('{"x":[1]}');
    await service
      .getContainerClient(store.names.workflowsContainer)
      .getBlockBlobClient(path)
      .uploadData(body, { blobHTTPHeaders: { blobContentMD5: Buffer.from(md5(body), 'base64') } });
    const error = await caught(store.getUpstreamOverflow(location));
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect((error as Error).message).toMatch(/upstream overflow/);
    await deleteContainers(store);
  });

  it("tries an upload 3 times (each with the SDK's 3 tries) before falling back, and recovers from a transient failure", async () => {
    const faults = faultInjector();
    const store = await open({ blobPolicies: [faults.policy] });
    await store.putOutput('wf10', 'warm-up', 1, jsonOfBytes(40_000));
    faults.state.puts = 0;
    faults.state.broken = true;
    const result = await store.putOutput('wf10', 'down', 1, jsonOfBytes(40_000));
    expect(result.placement).toBe('inline-fallback');
    expect(result.warning).toMatch(/after 3 attempts \(upload .* failed: the storage service could not be reached \(ECONNREFUSED\)\)/);
    expect(faults.state.puts).toBe(9);
    faults.state.broken = false;
    // Four failed PUTs: the first attempt's three SDK tries and the second attempt's first; its second try succeeds.
    faults.state.failNext = 4;
    faults.state.puts = 0;
    const text = jsonOfBytes(40_000);
    const recovered = await store.putOutput('wf10', 'flaky', 1, text);
    expect(recovered).toEqual({
      placement: 'blob',
      bytes: 40_000,
      ref: `blob:${store.outputsContainer}/outputs/wf10/flaky/1.json:${md5(text)}`,
    });
    expect(faults.state.puts).toBe(5);
    await deleteContainers(store);
  });

  it("stops at the caller's abort signal without falling back", async () => {
    const store = await open();
    const controller = new AbortController();
    controller.abort();
    const error = await caught(store.putOutput('wf9', 'aborted', 1, jsonOfBytes(40_000), { abortSignal: controller.signal }));
    expect(isJobqError(error, 'aborted')).toBe(true);
  });
});
