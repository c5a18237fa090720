// The delta-log runtime of the Azure workflow store against Azurite: layout, rolls, the definition
// cache, damaged state, migration from format 1, and failure injection around the log (a lost
// answer, a crash after an append, 412 on append, a crash at each step of a roll, two rollers at
// once, a stale writer after a roll). "Another process" is a second store on the same prefix with
// a definition cache of its own.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { BlobServiceClient, type ContainerClient, type WebResource } from '@azure/storage-blob';
import {
  createRuntime,
  foldEvents,
  sequentializeFanIn,
  taskState,
  tasksIn,
  toRawDefinition,
  validateWorkflow,
  type WorkflowDefinition,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { canonicalJson, encodeDefinition } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { isJobqError } from '@jobq/ports';
import { DefinitionCache } from './definition-cache';
import { indexPartition } from './names';
import { blobFaults, kindOf, type BlobRequestKind } from './test-helpers/blob-faults';
import { randomPrefix } from './test-helpers/contract-fixtures';
import { openWorkflowStore, type AzureWorkflowStore, type OpenWorkflowStoreOptions } from './workflow-store';

let azurite: LocalStorage;
const opened = new Map<string, AzureWorkflowStore>();

beforeAll(async () => {
  azurite = await startAzurite();
});

afterEach(async () => {
  for (const store of opened.values()) await store.deleteStorage().catch(() => undefined);
  opened.clear();
});

afterAll(async () => {
  await azurite.stop();
});

/** A store on a prefix of its own (or `extra.prefix`), with a definition cache of its own. */
async function open(extra: Partial<OpenWorkflowStoreOptions> = {}): Promise<AzureWorkflowStore> {
  const store = await openWorkflowStore({
    connection: { connectionString: azurite.connectionString },
    prefix: randomPrefix(),
    operationTimeoutInMs: 10_000,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 250,
    definitionCache: new DefinitionCache(),
    ...extra,
  });
  if (!opened.has(store.names.prefix)) opened.set(store.names.prefix, store);
  return store;
}

/** Another process on the same prefix. */
function reopen(store: AzureWorkflowStore, extra: Partial<OpenWorkflowStoreOptions> = {}): Promise<AzureWorkflowStore> {
  return open({ prefix: store.names.prefix, ...extra });
}

function containerOf(store: AzureWorkflowStore): ContainerClient {
  return BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(store.names.workflowsContainer);
}

async function list(store: AzureWorkflowStore, prefix = ''): Promise<string[]> {
  const names: string[] = [];
  for await (const item of containerOf(store).listBlobsFlat({ prefix })) names.push(item.name);
  return names.sort();
}

async function text(store: AzureWorkflowStore, name: string): Promise<string> {
  return (await containerOf(store).getBlobClient(name).downloadToBuffer()).toString('utf8');
}

interface HeadJson {
  version: number;
  workflow_id: string;
  definition_hash: string;
  generation: number;
  snapshot: string;
  snapshot_bytes: number;
  log: string;
}

async function headOf(store: AzureWorkflowStore, workflowId: string): Promise<HeadJson> {
  return JSON.parse(await text(store, `${workflowId}.json`)) as HeadJson;
}

async function logLines(store: AzureWorkflowStore, workflowId: string): Promise<Array<Record<string, unknown>>> {
  const log = await text(store, (await headOf(store, workflowId)).log);
  return log === ''
    ? []
    : log
        .slice(0, -1)
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The state blobs are exactly the current generation's snapshot and log. */
async function expectOnlyCurrentGeneration(store: AzureWorkflowStore, workflowId: string): Promise<void> {
  const head = await headOf(store, workflowId);
  expect(await list(store, `state/${workflowId}/`)).toEqual([head.log, head.snapshot].sort());
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : `not a JobqError: ${String(error)}`;
  }
  return undefined;
}

async function caught(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

function at(n: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
}

function definitionOf(tasks: ReadonlyArray<Record<string, unknown>>, name = 'test'): WorkflowDefinition {
  const result = validateWorkflow({ name, tasks: tasks.map((t) => ({ kwargs: { cmd: 'true' }, ...t })) });
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

/** `a` and `b` roots, `c` after `a`, `d` after `b`. */
const ABCD = definitionOf([{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a'] }, { name: 'd', depends_on: ['b'] }]);

function wide(n: number): WorkflowDefinition {
  return definitionOf(
    Array.from({ length: n }, (_, i) => ({ name: `t${i}` })),
    `wide-${n}`,
  );
}

function done(taskName: string, n: number, outputRef: string | null = null): WorkflowEvent {
  return { type: 'completion', now: at(n), taskName, attemptNo: null, success: true, outputRef, error: null };
}

function step(runtime: WorkflowRuntime, ...events: WorkflowEvent[]): WorkflowRuntime {
  return foldEvents(runtime, events).runtime;
}

const is =
  (...kinds: BlobRequestKind[]) =>
  (request: WebResource): boolean =>
    kinds.includes(kindOf(request));

/** A created and activated workflow, saved once through the log. */
async function started(
  store: AzureWorkflowStore,
  workflowId = 'wf',
  definition = ABCD,
): Promise<{ r0: WorkflowRuntime; r1: WorkflowRuntime; e1: string }> {
  const r0 = createRuntime(definition, { workflowId, now: at(1), outputsContainer: 'outs' });
  const { etag: e0 } = await store.create(r0, 'h');
  const r1 = step(r0, { type: 'activate', now: at(2) });
  const { etag: e1 } = await store.save(r1, e0, { previous: r0 });
  return { r0, r1, e1 };
}

describe('layout', () => {
  it('writes the definition once under its sha256, a snapshot and an empty log, then a small head naming them', async () => {
    const store = await open();
    const r0 = createRuntime(ABCD, { workflowId: 'wf.1', now: at(1) });
    const { etag } = await store.create(r0, 'hash-of-the-caller');
    const hash = createHash('sha256')
      .update(canonicalJson(toRawDefinition(ABCD)), 'utf8')
      .digest('hex');
    const head = await headOf(store, 'wf.1');
    expect(head).toEqual({
      version: 2,
      workflow_id: 'wf.1',
      definition_hash: hash,
      generation: 1,
      snapshot: expect.stringMatching(/^state\/wf\.1\/1-[0-9a-f]+\.snapshot\.json$/),
      snapshot_bytes: expect.any(Number),
      log: expect.stringMatching(/^state\/wf\.1\/1-[0-9a-f]+\.log$/),
    });
    expect(head.log.replace(/\.log$/, '')).toBe(head.snapshot.replace(/\.snapshot\.json$/, ''));
    expect((await text(store, `wf.1.json`)).length).toBeLessThan(400);
    expect(await list(store)).toEqual([`definitions/wf.1/${hash}.json`, 'wf.1.json', head.log, head.snapshot].sort());
    expect(await text(store, `definitions/wf.1/${hash}.json`)).toBe(encodeDefinition(ABCD));
    expect(await text(store, head.log)).toBe('');
    expect(Buffer.byteLength(await text(store, head.snapshot))).toBe(head.snapshot_bytes);
    expect(JSON.parse(await text(store, head.snapshot))).not.toHaveProperty('definition');
    // The caller's hash stays what the index shows (the coordinator passes the same sha256).
    expect((await store.getWorkflow('wf.1'))?.definitionHash).toBe('hash-of-the-caller');
    expect((await (await reopen(store)).load('wf.1'))?.etag).toBe(etag);
  });

  it('appends one line per save with the changed tasks and workflow fields; another process replays it', async () => {
    const store = await open();
    const { r1, e1 } = await started(store);
    const headBefore = await containerOf(store).getBlobClient('wf.json').getProperties();
    const r2 = step(r1, done('a', 3, '{"v":1}'));
    const { etag: e2 } = await store.save(r2, e1, { previous: r1 });
    const lines = await logLines(store, 'wf');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ seq: 1, workflow: { status: 'running', activated: true, updated_at: at(2) } });
    expect(Object.keys(lines[0]!.tasks as object).sort()).toEqual(['a', 'b']);
    expect(lines[1]).toEqual({
      seq: 2,
      workflow: { updated_at: at(3) },
      tasks: {
        a: { status: 'completed', attempt_no: 1, output_ref: '{"v":1}', dispatched_at: at(2), completed_at: at(3) },
        c: { status: 'running', attempt_no: 1, dispatched_at: at(3) },
      },
    });
    // Appends leave the head alone.
    expect((await containerOf(store).getBlobClient('wf.json').getProperties()).etag).toBe(headBefore.etag);
    expect(await (await reopen(store)).load('wf')).toEqual({ runtime: r2, etag: e2 });
  });

  it('rolls without `previous`, once the log would pass the snapshot, for a record over the append limit, and after the most records; the old generation goes', async () => {
    const bySize = await open({ logRollMinBytes: 0 });
    let { r1: runtime, e1: etag } = await started(bySize, 'wf', wide(20));
    const first = await headOf(bySize, 'wf');
    let appended = 0;
    for (let n = 3; (await headOf(bySize, 'wf')).generation === first.generation; n++) {
      expect(n).toBeLessThan(23);
      const next = step(runtime, done(`t${n - 3}`, n));
      etag = (await bySize.save(next, etag, { previous: runtime })).etag;
      runtime = next;
      appended++;
    }
    // Several saves appended; the one that would have passed the snapshot's size went into the new snapshot.
    expect(appended).toBeGreaterThan(2);
    expect(await logLines(bySize, 'wf')).toHaveLength(0);
    expect((await headOf(bySize, 'wf')).generation).toBe(first.generation + 1);
    await expectOnlyCurrentGeneration(bySize, 'wf');
    expect((await (await reopen(bySize)).load('wf'))?.runtime).toEqual(runtime);

    const byRecord = await open({ logMaxAppendBytes: 300 });
    const small = await started(byRecord, 'wf', wide(20));
    expect((await headOf(byRecord, 'wf')).generation).toBe(2); // activating 20 tasks: a record over 300 bytes
    const one = step(small.r1, done('t0', 3));
    await byRecord.save(one, small.e1, { previous: small.r1 }); // one task: fits
    expect((await headOf(byRecord, 'wf')).generation).toBe(2);
    expect(await logLines(byRecord, 'wf')).toHaveLength(1);

    const byCount = await open({ logRollMaxAppends: 2 });
    let s = await started(byCount, 'wf', wide(20));
    let r = s.r1;
    let e = s.e1;
    for (const [i, generation] of [
      [0, 1],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 3],
    ] as const) {
      const next = step(r, done(`t${i}`, 3 + i));
      e = (await byCount.save(next, e, { previous: r })).etag;
      r = next;
      expect((await headOf(byCount, 'wf')).generation).toBe(generation);
    }
    await expectOnlyCurrentGeneration(byCount, 'wf');

    const noPrevious = await open();
    s = await started(noPrevious, 'wf');
    const next = step(s.r1, done('a', 3));
    const saved = await noPrevious.save(next, s.e1);
    expect((await headOf(noPrevious, 'wf')).generation).toBe(2);
    await expectOnlyCurrentGeneration(noPrevious, 'wf');
    expect(await (await reopen(noPrevious)).load('wf')).toEqual({ runtime: next, etag: saved.etag });
  });

  it('decodes a definition it has seen from its cache: no download, and the same object every time', async () => {
    const store = await open();
    await started(store);
    const faults = blobFaults();
    const other = await reopen(store, { blobPolicies: [faults.policy] });
    const first = await other.load('wf');
    const reads = faults.seen.filter((k) => k === 'read').length;
    faults.seen.length = 0;
    const second = await other.load('wf');
    expect(faults.seen.filter((k) => k === 'read').length).toBe(reads - 1); // head, snapshot, log; no definition
    expect(second?.runtime.definition).toBe(first?.runtime.definition);
    expect(second?.runtime).toEqual(first?.runtime);
    // Another workflow of the same definition shares the entry.
    await started(store, 'wf-2');
    expect((await other.load('wf-2'))?.runtime.definition).toBe(first?.runtime.definition);
  });
});

describe('damaged stored state', () => {
  async function damagedLoad(change: (store: AzureWorkflowStore, head: HeadJson) => Promise<void>): Promise<Error> {
    const store = await open();
    await started(store);
    const head = await headOf(store, 'wf');
    await change(store, head);
    const headText = await text(store, 'wf.json');
    const error = await caught((await reopen(store)).load('wf'));
    expect(await text(store, 'wf.json')).toBe(headText); // left as it is
    return error;
  }

  it('a definition blob whose bytes do not match its hash is corrupt', async () => {
    const error = await damagedLoad(async (store, head) => {
      const other = encodeDefinition(definitionOf([{ name: 'a' }]));
      await containerOf(store).getBlockBlobClient(`definitions/wf/${head.definition_hash}.json`).upload(other, other.length);
    });
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect(error.message).toMatch(
      /the runtime of workflow "wf" cannot be read: its definition blob "definitions\/wf\/[0-9a-f]{64}\.json" does not match its hash/,
    );
  });

  it('a definition that hashes right but does not decode is corrupt', async () => {
    const store = await open();
    const bad = '{"name":"x","tasks":[]}';
    const hash = createHash('sha256').update(bad).digest('hex');
    await started(store);
    const head = await headOf(store, 'wf');
    await containerOf(store).getBlockBlobClient(`definitions/wf/${hash}.json`).upload(bad, bad.length);
    const moved = JSON.stringify({ ...head, definition_hash: hash });
    await containerOf(store).getBlockBlobClient('wf.json').upload(moved, moved.length);
    const error = await caught((await reopen(store)).load('wf'));
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect(error.message).toMatch(/cannot be read: definition: invalid: tasks/);
  });

  it.each([
    ['definition', (head: HeadJson) => `definitions/wf/${head.definition_hash}.json`],
    ['snapshot', (head: HeadJson) => head.snapshot],
    ['log', (head: HeadJson) => head.log],
  ])('a missing %s is corrupt, naming the blob', async (_what, nameOf) => {
    let name = '';
    const error = await damagedLoad(async (store, head) => {
      name = nameOf(head);
      await containerOf(store).getBlobClient(name).delete();
    });
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect(error.message).toBe(`the runtime of workflow "wf" cannot be read: blob "${name}" is missing`);
  });

  it.each([
    ['a line that is not JSON', 'garbage: s3cr3t\n', /runtime log: record 2 is not JSON/],
    ['a gap in the numbering', '{"seq":3}\n', /runtime log: record 2 is numbered 3: a record is missing or repeated/],
    [
      'a task the definition does not have',
      '{"seq":2,"tasks":{"zz":{"status":"ready"}}}\n',
      /runtime log: record 2 names a task the definition does not have/,
    ],
    ['a record cut short', '{"seq":2', /runtime log: its last record is cut short/],
    [
      'a roll to a generation it cannot have',
      '{"seq":2,"rolled_to":{"generation":7,"snapshot":"state/wf/7-ab.snapshot.json","snapshot_bytes":1,"log":"state/wf/7-ab.log"}}\n',
      /closed by a roll to a generation it cannot have/,
    ],
  ])('a log with %s is corrupt, never quoting it', async (_what, appended, pattern) => {
    const error = await damagedLoad(async (store, head) => {
      await containerOf(store).getAppendBlobClient(head.log).appendBlock(appended, Buffer.byteLength(appended));
    });
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect(error.message).toMatch(pattern);
    expect(error.message).not.toContain('s3cr3t');
  });

  it('a damaged snapshot, or one of another size than its head says, is corrupt', async () => {
    const damaged = await damagedLoad(async (store, head) => {
      const bytes = Buffer.from(await text(store, head.snapshot), 'utf8');
      bytes[Math.floor(bytes.length / 2)] = 0x7b; // "{"
      await containerOf(store).getBlockBlobClient(head.snapshot).upload(bytes, bytes.length);
    });
    expect(isJobqError(damaged, 'corrupt')).toBe(true);
    expect(damaged.message).toMatch(/cannot be read: runtime snapshot: /);
    const resized = await damagedLoad(async (store, head) => {
      const grown = `${await text(store, head.snapshot)} `;
      await containerOf(store).getBlockBlobClient(head.snapshot).upload(grown, grown.length);
    });
    expect(isJobqError(resized, 'corrupt')).toBe(true);
    expect(resized.message).toMatch(/its snapshot "state\/wf\/1-[0-9a-f]+\.snapshot\.json" has \d+ bytes where its head says \d+/);
  });

  it('a head written by a newer jobq is unsupported, and a writer holding an older token never rewrites it', async () => {
    const store = await open();
    const { r1, e1 } = await started(store);
    const head = await headOf(store, 'wf');
    // A newer jobq closes the log before it replaces the head.
    await containerOf(store).getAppendBlobClient(head.log).appendBlock('{"closed":"by a newer jobq"}\n', 30);
    const newer = JSON.stringify({ version: 3, workflow_id: 'wf', somewhere: 'else' });
    await containerOf(store).getBlockBlobClient('wf.json').upload(newer, newer.length);
    const error = await caught((await reopen(store)).load('wf'));
    expect(isJobqError(error, 'unsupported')).toBe(true);
    expect(error.message).toBe(
      'workflow "wf" was written by a newer jobq (runtime format version 3; this jobq reads versions 1–2): it is left as it is; upgrade jobq to process it',
    );
    expect(await codeOf(store.save(step(r1, done('a', 3)), e1, { previous: r1 }))).toBe('conflict');
    expect(await codeOf(store.save(step(r1, done('a', 3)), e1))).toBe('conflict');
    expect(await text(store, 'wf.json')).toBe(newer);
  });
});

describe('migration from format 1', () => {
  interface Fixture {
    max_fan_in: number;
    definition: unknown;
    events: WorkflowEvent[];
    blob: string;
  }
  const fixture = JSON.parse(readFileSync(join(__dirname, 'test-helpers/fixtures/runtime-v1.json'), 'utf8')) as Fixture;

  /** The runtime the fixture's blob holds, rebuilt with this code's reducer. */
  function expected(): WorkflowRuntime {
    const checked = validateWorkflow(fixture.definition);
    if (!checked.ok) throw new Error('invalid fixture definition');
    const merged = sequentializeFanIn(checked.value, fixture.max_fan_in);
    if (!merged.ok) throw new Error('fixture transform failed');
    return foldEvents(createRuntime(merged.value, { workflowId: 'legacy.wf-1', now: at(0), outputsContainer: 'p-outputs' }), fixture.events)
      .runtime;
  }

  it('reads a runtime blob written by the landed code, and replaces it by a head on its next save', async () => {
    const store = await open();
    const legacy = containerOf(store).getBlockBlobClient('legacy.wf-1.json');
    const written = await legacy.upload(fixture.blob, fixture.blob.length);
    const loaded = await store.load('legacy.wf-1');
    expect(loaded?.runtime).toEqual(expected());
    expect(loaded?.etag).not.toBe(written.etag); // opaque, not the blob's ETag
    const r1 = loaded!.runtime;
    const r2 = step(r1, done('fetch/c', 10, '{"c":3}'));
    expect(taskState(r2, 'join')?.status).toBe('running');
    const { etag: e2 } = await store.save(r2, loaded!.etag, { previous: r1 });
    const head = await headOf(store, 'legacy.wf-1');
    expect(head).toMatchObject({ version: 2, workflow_id: 'legacy.wf-1', generation: 1 });
    expect(await list(store, 'definitions/legacy.wf-1/')).toEqual([`definitions/legacy.wf-1/${head.definition_hash}.json`]);
    expect(await (await reopen(store)).load('legacy.wf-1')).toEqual({ runtime: r2, etag: e2 });
    // The old format's writer (If-Match on the blob it read) and the old token both lose now.
    const oldWriter = await caught(legacy.upload(fixture.blob, fixture.blob.length, { conditions: { ifMatch: written.etag! } }));
    expect(oldWriter).toMatchObject({ statusCode: 412 });
    expect(await codeOf(store.save(r2, loaded!.etag, { previous: r1 }))).toBe('conflict');
    // Later saves append.
    const r3 = step(r2, done('join', 11));
    await store.save(r3, e2, { previous: r2 });
    expect(await logLines(store, 'legacy.wf-1')).toHaveLength(1);
    expect((await (await reopen(store)).load('legacy.wf-1'))?.runtime).toEqual(r3);
  });

  it('loses a migration to a concurrent writer of the old format (conflict) and leaves no state behind', async () => {
    const store = await open();
    const legacy = containerOf(store).getBlockBlobClient('legacy.wf-1.json');
    await legacy.upload(fixture.blob, fixture.blob.length);
    const loaded = await store.load('legacy.wf-1');
    const moved = fixture.blob.replace('"status":"running"', '"status":"cancelling"');
    await legacy.upload(moved, moved.length); // an old coordinator saved meanwhile
    expect(await codeOf(store.save(step(loaded!.runtime, done('fetch/c', 10)), loaded!.etag))).toBe('conflict');
    expect(await text(store, 'legacy.wf-1.json')).toBe(moved);
    expect(await list(store, 'state/')).toEqual([]);
  });
});

describe('failure injection', () => {
  it('finds an append whose answer was lost in the log: the save succeeds, the record is there once', async () => {
    const faults = blobFaults();
    const store = await open({ blobPolicies: [faults.policy] });
    const { r1, e1 } = await started(store);
    const r2 = step(r1, done('a', 3));
    faults.loseAnswer(is('log-append'));
    faults.seen.length = 0;
    const saved = await store.save(r2, e1, { previous: r1 });
    // The append, the SDK's retry of it (412), the read-back of the log.
    expect(faults.seen).toEqual(['log-append', 'log-append', 'read']);
    expect((await logLines(store, 'wf')).map((l) => l.seq)).toEqual([1, 2]);
    expect(await (await reopen(store)).load('wf')).toEqual({ runtime: r2, etag: saved.etag });
    const r3 = step(r2, done('b', 4));
    await store.save(r3, saved.etag, { previous: r2 });
    expect((await (await reopen(store)).load('wf'))?.runtime).toEqual(r3);
  });

  it('after a crash between the append and its ack, the re-read shows the batch applied once; applying it again changes nothing', async () => {
    const faults = blobFaults();
    const store = await open({ blobPolicies: [faults.policy] });
    const { r1, e1 } = await started(store);
    const batch = [done('a', 3), done('b', 4)];
    const r2 = step(r1, ...batch);
    faults.crashAfter(is('log-append'));
    faults.loseAnswer(is('log-append'));
    const error = await caught(store.save(r2, e1, { previous: r1 }));
    expect(isJobqError(error, 'unavailable')).toBe(true);
    // The coordinator, restarted, reads the workflow and receives the same completions again.
    const after = await reopen(store);
    const loaded = await after.load('wf');
    expect(loaded?.runtime).toEqual(r2);
    const again = foldEvents(loaded!.runtime, batch);
    expect(again.runtime).toBe(loaded!.runtime);
    expect(again.effects.flat().every((e) => e.type === 'ignored')).toBe(true);
    expect((await logLines(after, 'wf')).map((l) => l.seq)).toEqual([1, 2]);
    const r3 = step(loaded!.runtime, done('c', 5));
    await after.save(r3, loaded!.etag, { previous: loaded!.runtime });
    expect((await (await reopen(store)).load('wf'))?.runtime).toEqual(r3);
  });

  it('refuses a second writer at the same token (412 on append, conflict): its record is not written', async () => {
    const store = await open();
    const { r1, e1 } = await started(store);
    const other = await reopen(store);
    const loaded = await other.load('wf');
    expect(loaded?.etag).toBe(e1);
    const mine = step(r1, done('a', 3));
    const { etag } = await store.save(mine, e1, { previous: r1 });
    const theirs = step(loaded!.runtime, done('b', 3));
    const error = await caught(other.save(theirs, loaded!.etag, { previous: loaded!.runtime }));
    expect(isJobqError(error, 'conflict')).toBe(true);
    expect(error.message).toMatch(/workflow "wf" changed since it was loaded/);
    expect((await logLines(store, 'wf')).map((l) => l.seq)).toEqual([1, 2]);
    expect(await (await reopen(store)).load('wf')).toEqual({ runtime: mine, etag });
  });

  describe.each<[string, BlobRequestKind, boolean]>([
    ['(1) writing the new snapshot', 'snapshot-put', false],
    ['(2) closing the old log', 'log-append', true],
    ['(3) creating the new log', 'log-create', true],
    ['(4) moving the head', 'head-put', true],
  ])('a crash right after step %s of a roll', (_step, kind, committed) => {
    it(`loses nothing and applies nothing twice: another process reads the ${committed ? 'new' : 'old'} state, saves on, and later rolls clean up`, async () => {
      const faults = blobFaults();
      const store = await open({ blobPolicies: [faults.policy] });
      const { r1, e1 } = await started(store);
      const r2 = step(r1, done('a', 3));
      faults.crashAfter(is(kind));
      await store.save(r2, e1).catch(() => undefined); // no previous: a roll
      expect(faults.crashed).toBe(true);

      const after = await reopen(store);
      const loaded = await after.load('wf');
      expect(loaded?.runtime).toEqual(committed ? r2 : r1);
      expect((await headOf(after, 'wf')).generation).toBe(kind === 'head-put' ? 2 : 1);
      const base = loaded!.runtime;
      const r3 = step(base, done('b', 4));
      const { etag: e3 } = await after.save(r3, loaded!.etag, { previous: base });
      const reread = await (await reopen(store)).load('wf');
      expect(reread).toEqual({ runtime: r3, etag: e3 });
      expect((await headOf(after, 'wf')).generation).toBe(committed ? 2 : 1);
      // The next roll leaves only its own generation.
      const r4 = step(r3, done(committed ? 'c' : 'a', 5));
      await after.save(r4, e3);
      await expectOnlyCurrentGeneration(after, 'wf');
      expect((await (await reopen(store)).load('wf'))?.runtime).toEqual(r4);
    });
  });

  it("serializes two processes rolling at once: exactly one wins, the other gets conflict, the state is the winner's and nothing of the loser is left", async () => {
    const store = await open();
    const { e1 } = await started(store);
    const [a, b] = [await reopen(store), await reopen(store)];
    const [la, lb] = [await a.load('wf'), await b.load('wf')];
    expect(la?.etag).toBe(e1);
    expect(lb?.etag).toBe(e1);
    const ra = step(la!.runtime, done('a', 3));
    const rb = step(lb!.runtime, done('b', 3));
    const outcomes = await Promise.allSettled([a.save(ra, e1), b.save(rb, e1)]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(isJobqError(lost[0]!.reason, 'conflict')).toBe(true);
    const winner = outcomes[0].status === 'fulfilled' ? ra : rb;
    expect((await (await reopen(store)).load('wf'))?.runtime).toEqual(winner);
    expect((await headOf(store, 'wf')).generation).toBe(2);
    await expectOnlyCurrentGeneration(store, 'wf');
  });

  it('lets exactly one of two processes complete the same half-done roll and append; the other gets conflict', async () => {
    const faults = blobFaults();
    const store = await open({ blobPolicies: [faults.policy] });
    const { r1, e1 } = await started(store);
    const r2 = step(r1, done('a', 3));
    faults.crashAfter(is('log-append'));
    await store.save(r2, e1).catch(() => undefined); // the roll is committed; its head did not move
    const [a, b] = [await reopen(store), await reopen(store)];
    const [la, lb] = [await a.load('wf'), await b.load('wf')];
    expect(la).toEqual(lb);
    expect(la?.runtime).toEqual(r2);
    const ra = step(la!.runtime, done('b', 4));
    const rb = step(lb!.runtime, done('c', 4));
    const outcomes = await Promise.allSettled([
      a.save(ra, la!.etag, { previous: la!.runtime }),
      b.save(rb, lb!.etag, { previous: lb!.runtime }),
    ]);
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(lost).toHaveLength(1);
    expect(isJobqError(lost[0]!.reason, 'conflict')).toBe(true);
    const winner = outcomes[0].status === 'fulfilled' ? ra : rb;
    expect((await (await reopen(store)).load('wf'))?.runtime).toEqual(winner);
    expect((await headOf(a, 'wf')).generation).toBe(2);
    expect(await logLines(a, 'wf')).toHaveLength(1);
    await expectOnlyCurrentGeneration(a, 'wf');
  });

  it('fails the append of a writer that went stale across a roll, whether the old log is closed or already deleted', async () => {
    const store = await open();
    const { r1, e1 } = await started(store);
    const roller = await reopen(store);
    const loaded = await roller.load('wf');
    const rolled = step(loaded!.runtime, done('b', 3));
    // The roll's clean-up would delete the old log; keep it to see the closing record refuse the append.
    const keep = blobFaults();
    const closing = await reopen(store, { blobPolicies: [keep.policy] });
    keep.crashAfter(is('log-append'));
    await closing.save(rolled, loaded!.etag).catch(() => undefined);
    expect(await codeOf(store.save(step(r1, done('a', 3)), e1, { previous: r1 }))).toBe('conflict');
    // A fresh process completes the roll and deletes the old generation: now the old log is gone.
    const next = await roller.load('wf');
    const r3 = step(next!.runtime, done('a', 4));
    const { etag: e3 } = await roller.save(r3, next!.etag, { previous: next!.runtime });
    await expectOnlyCurrentGeneration(roller, 'wf');
    expect(await codeOf(store.save(step(r1, done('a', 3)), e1, { previous: r1 }))).toBe('conflict');
    expect(await (await reopen(store)).load('wf')).toEqual({ runtime: r3, etag: e3 });
  });

  it('reads the head again when a roll deletes what it named while a load was reading', async () => {
    const faults = blobFaults();
    const store = await open();
    const { r1, e1 } = await started(store);
    const reader = await reopen(store, { blobPolicies: [faults.policy] });
    const r2 = step(r1, done('a', 3));
    const oldLog = (await headOf(store, 'wf')).log;
    let rolled = '';
    // Right before the reader fetches the log, another process rolls (deleting that log).
    faults.before(
      (request) => kindOf(request) === 'read' && decodeURIComponent(new URL(request.url).pathname).endsWith(oldLog),
      async () => {
        rolled = (await store.save(r2, e1)).etag;
      },
    );
    const loaded = await reader.load('wf');
    expect(loaded).toEqual({ runtime: r2, etag: rolled });
    expect(await list(store, oldLog)).toEqual([]);
  });
});

describe('deleting and cleaning up blobs', () => {
  it("deletes one workflow's head, state, definition and upstream blobs, and nothing of workflows whose ids start the same", async () => {
    const store = await open({ logRollMinBytes: 0 });
    for (const id of ['a', 'a.b', 'ab', 'a.json']) {
      const { r1, e1 } = await started(store, id);
      await store.save(step(r1, done('a', 3)), e1); // a roll
      await containerOf(store).getBlockBlobClient(`upstream/${id}/c/1.json`).upload('{}', 2);
    }
    const before = await list(store);
    const mine = before.filter((name) => name === 'a.json' || /^(state|definitions|upstream)\/a\//.test(name));
    expect(mine).toHaveLength(5); // head, snapshot, log, definition, upstream blob (workflow "a.json" has the head "a.json.json")
    expect((await store.workflowBlobNames('a')).sort()).toEqual(mine.sort());
    const deleted = await store.deleteWorkflowBlobs('a');
    expect(deleted.sort()).toEqual(mine.sort());
    expect(await list(store)).toEqual(before.filter((name) => !mine.includes(name)));
    expect(await store.load('a')).toBeNull();
    for (const id of ['a.b', 'ab', 'a.json']) expect((await store.load(id))?.runtime.workflowId).toBe(id);
    expect(await store.deleteWorkflowBlobs('a')).toEqual([]);
    expect(await store.workflowBlobNames('a')).toEqual([]);
  });

  it('replaces an orphan with its snapshots, logs and definition; a resubmit of the same definition keeps nothing of its attempt', async () => {
    const store = await open();
    const first = await started(store, 'wf');
    await store.save(step(first.r1, done('a', 3)), first.e1); // generation 2
    const index = TableClient.fromConnectionString(azurite.connectionString, store.names.indexTable, { allowInsecureConnection: true });
    await index.deleteEntity(indexPartition('wf'), 'wf');
    const replacement = createRuntime(wide(3), { workflowId: 'wf', now: at(9) });
    const created = await store.create(replacement, 'h2');
    expect(created.created).toBe(true);
    const head = await headOf(store, 'wf');
    expect(await list(store, 'state/wf/')).toEqual([head.log, head.snapshot].sort());
    expect(await list(store, 'definitions/wf/')).toEqual([`definitions/wf/${head.definition_hash}.json`]);
    const again = await store.create(replacement, 'h2');
    expect(again).toEqual({ etag: created.etag, created: false });
    expect(await list(store, 'state/wf/')).toEqual([head.log, head.snapshot].sort());
  });

  it('leaves no runtime blob behind when a create cannot write its rows', async () => {
    const store = await open();
    await TableClient.fromConnectionString(azurite.connectionString, store.names.tasksTable, {
      allowInsecureConnection: true,
    }).deleteTable();
    const error = await caught(store.create(createRuntime(ABCD, { workflowId: 'half', now: at(1) }), 'h'));
    expect(error.message).toMatch(/nothing of it was kept$/);
    expect(await list(store)).toEqual([]);
  });
});

describe('sizes', () => {
  it('appends a few hundred bytes per completion, whatever the number of tasks', async () => {
    const store = await open();
    const sizes: number[] = [];
    for (const n of [10, 2_000]) {
      const id = `w${n}`;
      const { r1, e1 } = await started(store, id, wide(n));
      const before = (await logLines(store, id)).length;
      const r2 = step(r1, done('t1', 3), done('t2', 3));
      await store.save(r2, e1, { previous: r1 });
      const log = await text(store, (await headOf(store, id)).log);
      const last = log.slice(0, -1).split('\n')[before]!;
      sizes.push(Buffer.byteLength(last) + 1);
      expect([...tasksIn(r2)].filter(([, t]) => t.status === 'completed')).toHaveLength(2);
    }
    expect(sizes[0]).toBe(sizes[1]);
    expect(sizes[0]).toBeLessThan(400);
  });
});
