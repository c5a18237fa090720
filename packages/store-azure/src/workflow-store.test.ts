import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { inspect } from 'node:util';
import { TableClient, type TableEntity, type TransactionAction } from '@azure/data-tables';
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  BlobServiceClient,
  SASProtocol,
  StorageSharedKeyCredential,
  generateAccountSASQueryParameters,
  type RequestPolicy,
  type RequestPolicyFactory,
  type WebResource,
} from '@azure/storage-blob';
import { createRuntime, reduce, validateWorkflow, type WorkflowDefinition, type WorkflowEvent, type WorkflowRuntime } from '@jobq/dag-core';
import { AZURITE_ACCOUNT_KEY, startAzurite, type LocalStorage } from '@jobq/local';
import { isJobqError } from '@jobq/ports';
import { describeWorkflowStoreContract } from '@jobq/ports/testing';
import { accountClients } from './clients';
import { indexPartition } from './names';
import { openOutputStore } from './output-store';
import { workflowStoreFixture } from './test-helpers/contract-fixtures';
import { openWorkflowStore, type AzureWorkflowStore, type OpenWorkflowStoreOptions, type TablePipelinePolicy } from './workflow-store';

let azurite: LocalStorage;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite.stop();
});

/** A prefix of its own for every store: letters and digits only. */
function uniquePrefix(): string {
  counter++;
  return `T${process.pid}x${Date.now().toString(36)}x${counter}`;
}

function open(extra: Partial<OpenWorkflowStoreOptions> = {}): Promise<AzureWorkflowStore> {
  return openWorkflowStore({
    connection: { connectionString: azurite.connectionString },
    prefix: uniquePrefix(),
    operationTimeoutInMs: 10_000,
    leaseDurationInMs: 15_000,
    renewIntervalInMs: 250,
    ...extra,
  });
}

function tableClient(name: string): TableClient {
  return TableClient.fromConnectionString(azurite.connectionString, name, { allowInsecureConnection: true });
}

function blobOf(store: AzureWorkflowStore, name: string) {
  return BlobServiceClient.fromConnectionString(azurite.connectionString)
    .getContainerClient(store.names.workflowsContainer)
    .getBlockBlobClient(name);
}

async function blobNames(store: AzureWorkflowStore): Promise<string[]> {
  const names: string[] = [];
  const container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(store.names.workflowsContainer);
  for await (const blob of container.listBlobsFlat()) names.push(blob.name);
  return names.sort();
}

function at(n: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
}

function definitionOf(tasks: ReadonlyArray<Record<string, unknown>>): WorkflowDefinition {
  const result = validateWorkflow({ name: 'test', tasks: tasks.map((t) => ({ kwargs: { cmd: 'true' }, ...t })) });
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

const ABC = definitionOf([{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a'] }]);

function step(runtime: WorkflowRuntime, event: WorkflowEvent): WorkflowRuntime {
  return reduce(runtime, event).runtime;
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Counts blob requests (below the retry policy: every try). */
function blobCounter(): { policy: RequestPolicyFactory; count: () => number; reset: () => void } {
  let n = 0;
  const policy: RequestPolicyFactory = {
    create: (next: RequestPolicy): RequestPolicy => ({
      sendRequest: (request: WebResource) => {
        n++;
        return next.sendRequest(request);
      },
    }),
  };
  return { policy, count: () => n, reset: () => (n = 0) };
}

/** Counts table requests: all, and table transactions (`$batch`). */
function tableCounter(): { policy: TablePipelinePolicy; all: () => number; batches: () => number; reset: () => void } {
  let all = 0;
  let batches = 0;
  const policy: TablePipelinePolicy = {
    name: 'test-table-counter',
    sendRequest: (request, next) => {
      all++;
      if (request.url.includes('$batch')) batches++;
      return next(request);
    },
  };
  return {
    policy,
    all: () => all,
    batches: () => batches,
    reset: () => {
      all = 0;
      batches = 0;
    },
  };
}

describeWorkflowStoreContract('Azure Storage (Azurite)', () => workflowStoreFixture(azurite.connectionString));

describe('AzureWorkflowStore specifics', () => {
  it('leaves the runtime blob byte for byte as it was after a stale-ETag save', async () => {
    const store = await open();
    const r0 = createRuntime(ABC, { workflowId: 'wf', now: at(1) });
    const { etag: e0 } = await store.create(r0, 'h');
    const r1 = step(r0, { type: 'activate', now: at(2) });
    await store.save(r1, e0);
    const before = await blobOf(store, 'wf.json').downloadToBuffer();
    const error = await caught(store.save(step(r1, { type: 'cancel', now: at(3) }), e0));
    expect(isJobqError(error, 'conflict')).toBe(true);
    expect((error as Error).message).toMatch(/workflow "wf" changed since it was loaded/);
    const after = await blobOf(store, 'wf.json').downloadToBuffer();
    expect(after.equals(before)).toBe(true);
    const properties = await blobOf(store, 'wf.json').getProperties();
    expect(properties.contentType).toBe('application/json');
    await store.deleteStorage();
  });

  it('keeps a cancel request that races with index writes of saves', async () => {
    const store = await open();
    let runtime = createRuntime(definitionOf(Array.from({ length: 8 }, (_, i) => ({ name: `t${i}` }))), { workflowId: 'race', now: at(1) });
    let { etag } = await store.create(runtime, 'h');
    runtime = step(runtime, { type: 'activate', now: at(2) });
    etag = (await store.save(runtime, etag)).etag;
    for (let i = 0; i < 8; i++) {
      const next = step(runtime, {
        type: 'completion',
        now: at(10 + i),
        taskName: `t${i}`,
        attemptNo: null,
        success: true,
        outputRef: null,
        error: null,
      });
      const [, saved] = await Promise.all([
        i % 2 === 0 ? store.requestCancel('race', at(100 + i)) : store.requestRetry('race', at(100 + i)),
        store.save(next, etag, { previous: runtime }),
      ]);
      etag = saved.etag;
      runtime = next;
    }
    const summary = await store.getWorkflow('race');
    expect(summary).toMatchObject({ cancelRequestedAt: at(106), retryRequestedAt: at(107), updatedAt: at(17), status: 'pending' });
    await store.deleteStorage();
  });

  it('writes a 250-task runtime as 4 blob writes, 3 table transactions and 1 index write; then only what changed', async () => {
    const blobs = blobCounter();
    const tables = tableCounter();
    const store = await open({ blobPolicies: [blobs.policy], tablePolicies: [tables.policy] });
    const def = definitionOf(Array.from({ length: 250 }, (_, i) => ({ name: `group${i % 3}/task${String(i).padStart(3, '0')}` })));
    const r0 = createRuntime(def, { workflowId: 'big', now: at(1) });
    blobs.reset();
    tables.reset();
    const { etag: e0 } = await store.create(r0, 'h');
    // The definition, the first snapshot, an empty log, then the head.
    expect([blobs.count(), tables.batches(), tables.all()]).toEqual([4, 3, 4]);

    const r1 = step(r0, { type: 'activate', now: at(2) });
    blobs.reset();
    tables.reset();
    const { etag: e1 } = await store.save(r1, e0); // no previous: the first flush writes every row
    // Without `previous` the save rolls: a snapshot, the record closing the log, a new log, the
    // head; then the old generation goes (a listing, two deletes).
    expect([blobs.count(), tables.batches(), tables.all()]).toEqual([7, 3, 4]);

    const rows = [];
    let token: string | undefined;
    do {
      const page = await store.listTasks({ workflowId: 'big', limit: 100, ...(token ? { continuationToken: token } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(100);
      rows.push(...page.items);
      token = page.continuationToken ?? undefined;
    } while (token);
    expect(rows).toHaveLength(250);
    expect(new Set(rows.map((r) => r.taskName))).toEqual(new Set(Object.keys(r1.tasks)));
    expect(rows.every((r) => r.status === 'running' && r.attemptNo === 1 && r.updatedAt === at(2))).toBe(true);

    const r2 = step(r1, {
      type: 'completion',
      now: at(3),
      taskName: 'group1/task001',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
    });
    blobs.reset();
    tables.reset();
    await store.save(r2, e1, { previous: r1 });
    // One Append Block.
    expect([blobs.count(), tables.batches(), tables.all()]).toEqual([1, 1, 2]);
    expect((await store.listTasks({ workflowId: 'big', status: ['completed'] })).items.map((r) => r.taskName)).toEqual(['group1/task001']);
    await store.deleteStorage();
  });

  it('reports rows it could not write after the blob as rowsError, and writes them with the next save', async () => {
    const store = await open();
    const r0 = createRuntime(ABC, { workflowId: 'rows', now: at(1) });
    const { etag: e0 } = await store.create(r0, 'h');
    const tasks = tableClient(store.names.tasksTable);
    await tasks.deleteTable();
    const r1 = step(r0, { type: 'activate', now: at(2) });
    const saved = await store.save(r1, e0, { previous: r0 });
    expect(isJobqError(saved.rowsError, 'not-found')).toBe(true);
    expect(saved.rowsError?.message).toMatch(/workflow "rows" was saved, but some of its index\/task rows were not written/);
    expect(await store.load('rows')).toEqual({ runtime: r1, etag: saved.etag }); // the truth moved on
    expect((await store.getWorkflow('rows'))?.status).toBe('running'); // the index row was written

    await tasks.createTable();
    const r2 = step(r1, { type: 'completion', now: at(3), taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null });
    const repaired = await store.save(r2, saved.etag, { previous: r1 });
    expect(repaired.rowsError).toBeNull();
    const rows = Object.fromEntries((await store.listTasks({ workflowId: 'rows' })).items.map((r) => [r.taskName, r.status]));
    // a and c changed now; b changed in the save whose rows failed.
    expect(rows).toEqual({ a: 'completed', b: 'running', c: 'running' });
    await store.deleteStorage();
  });

  it('leaves the index row of a finished runtime behind when its task rows fail; writeTaskRows reports the rows it could not write', async () => {
    const store = await open();
    const r0 = createRuntime(ABC, { workflowId: 'final', now: at(1) });
    const { etag: e0 } = await store.create(r0, 'h');
    const r1 = step(r0, { type: 'activate', now: at(2) });
    const { etag: e1 } = await store.save(r1, e0, { previous: r0, deferTaskRows: true });
    const tasks = tableClient(store.names.tasksTable);
    await tasks.deleteTable();
    const failed = await store.writeTaskRows(r1, ['a', 'b']);
    expect(failed.failed.sort()).toEqual(['a', 'b']);
    expect(isJobqError(failed.error, 'not-found')).toBe(true);
    let r2 = r1;
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      r2 = step(r2, { type: 'completion', now: at(3 + i), taskName: name, attemptNo: 1, success: true, outputRef: null, error: null });
    }
    expect(r2.status).toBe('completed');
    const saved = await store.save(r2, e1, { previous: r1, alsoTaskRows: ['a', 'b'] });
    expect(saved.rowsError).toMatchObject({ code: 'not-found', details: { indexRowWritten: false } });
    expect((await store.getWorkflow('final'))?.status).toBe('running'); // behind its runtime: the sweeps repair it
    await tasks.createTable();
    await store.save(r2, saved.etag); // what the repair does: every row, then the index row
    const rows = Object.fromEntries((await store.listTasks({ workflowId: 'final' })).items.map((r) => [r.taskName, r.status]));
    expect(rows).toEqual({ a: 'completed', b: 'completed', c: 'completed' });
    expect((await store.getWorkflow('final'))?.status).toBe('completed');
    await store.deleteStorage();
  });

  it('fails a create whose rows cannot be written (no task table), keeps nothing, and a later submit succeeds', async () => {
    const store = await open();
    const tasks = tableClient(store.names.tasksTable);
    await tasks.deleteTable();
    const r0 = createRuntime(ABC, { workflowId: 'half', now: at(1) });
    const error = await caught(store.create(r0, 'h'));
    expect(isJobqError(error, 'not-found')).toBe(true);
    expect((error as Error).message).toMatch(/workflow "half" was not submitted and nothing of it was kept$/);
    expect(await store.getWorkflow('half')).toBeNull();
    expect(await blobOf(store, 'half.json').exists()).toBe(false);
    await tasks.createTable();
    expect((await store.create(r0, 'h')).created).toBe(true);
    expect((await store.getWorkflow('half'))?.definitionHash).toBe('h');
    expect((await store.listTasks({ workflowId: 'half' })).items).toHaveLength(3);
    await store.deleteStorage();
  });

  it('fails a create whose index row the service refuses (400 PropertyValueTooLarge), keeps nothing, and the id stays free', async () => {
    const store = await open();
    // A 40 000-character name passes no validation, but a runtime can still be built with it.
    const huge: WorkflowDefinition = { ...ABC, name: 'n'.repeat(40_000) };
    const error = await caught(store.create(createRuntime(huge, { workflowId: 'huge', now: at(1) }), 'h1'));
    expect(error).toMatchObject({
      code: 'invalid-argument',
      retryable: false,
      details: { statusCode: 400, serviceCode: 'PropertyValueTooLarge', cleanedUp: true },
    });
    expect((error as Error).message).toBe(
      'write the index row of workflow "huge" failed: bad request (PropertyValueTooLarge); workflow "huge" was not submitted and nothing of it was kept',
    );
    // Nothing is left: no runtime blob, no index row, no task rows.
    expect(await blobOf(store, 'huge.json').exists()).toBe(false);
    expect(await store.load('huge')).toBeNull();
    expect(await store.getWorkflow('huge')).toBeNull();
    expect((await store.listTasks({ workflowId: 'huge' })).items).toEqual([]);
    // A corrected workflow takes the id.
    const fixed = createRuntime(ABC, { workflowId: 'huge', now: at(2) });
    expect((await store.create(fixed, 'h2')).created).toBe(true);
    expect(await store.getWorkflow('huge')).toMatchObject({ definitionHash: 'h2', name: 'test' });
    expect((await store.load('huge'))?.runtime).toEqual(fixed);
    await store.deleteStorage();
  });

  it('keeps the runtime of a create whose rows failed with a retryable error, for a resubmit to complete', async () => {
    // Table requests fail as if the service could not be reached once `down` is set.
    let down = false;
    const unreachable: TablePipelinePolicy = {
      name: 'test-unreachable',
      sendRequest: (request, next) =>
        down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) : next(request),
    };
    const flaky = await open({ tablePolicies: [unreachable] });
    const store = await open({ prefix: flaky.names.prefix });
    const r0 = createRuntime(ABC, { workflowId: 'flaky', now: at(1) });
    down = true;
    const error = await caught(flaky.create(r0, 'h'));
    expect(error).toMatchObject({ code: 'unavailable', retryable: true });
    expect((error as Error).message).toMatch(/submit the same id again to complete it$/);
    expect((await store.load('flaky'))?.runtime).toEqual(r0);
    expect((await store.create(r0, 'h')).created).toBe(true);
    expect(await store.getWorkflow('flaky')).toMatchObject({ definitionHash: 'h' });
    await store.deleteStorage();
  });

  it('refuses an undecodable runtime blob as corrupt, naming the workflow but not quoting the blob', async () => {
    const store = await open();
    const text = 'definitely not json: s3cr3t-looking-content';
    await blobOf(store, 'bad.json').upload(text, text.length);
    const error = await caught(store.load('bad'));
    expect(isJobqError(error, 'corrupt')).toBe(true);
    expect((error as Error).message).toContain('workflow "bad"');
    expect(inspect(error)).not.toContain('s3cr3t');
    const future = JSON.stringify({ version: 99 });
    await blobOf(store, 'future.json').upload(future, future.length);
    const futureError = await caught(store.load('future'));
    expect(isJobqError(futureError, 'unsupported')).toBe(true);
    expect((futureError as Error).message).toMatch(
      /workflow "future" was written by a newer jobq \(runtime format version 99; this jobq reads versions 1–2\)/,
    );
    const unknown = JSON.stringify({ version: 'two' });
    await blobOf(store, 'odd.json').upload(unknown, unknown.length);
    const unknownError = await caught(store.load('odd'));
    expect(isJobqError(unknownError, 'corrupt')).toBe(true);
    expect((unknownError as Error).message).toMatch(/workflow "odd".*unknown format version "two"/);
    await store.deleteStorage();
  });

  it('takes over a lease that ran out because its holder stopped renewing (15 s)', async () => {
    const store = await open();
    // A coordinator that crashed: it took the lease and never renewed it.
    const lock = blobOf(store, store.names.leaseBlob);
    await lock.upload('', 0);
    const crashed = lock.getBlobLeaseClient();
    await crashed.acquireLease(15);
    expect(isJobqError(await caught(store.acquireLease()), 'lease-held')).toBe(true);
    let lease;
    while (!lease) {
      try {
        lease = await store.acquireLease();
      } catch (error) {
        if (!isJobqError(error, 'lease-held')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    // The new holder renews it past the original 15 s.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(lease.lost.aborted).toBe(false);
    await expect(crashed.renewLease()).rejects.toMatchObject({ statusCode: 409 });
    await lease.release();
    await store.deleteStorage();
  }, 30_000);

  it('fires lost when the lease is broken behind its back', async () => {
    const store = await open();
    const lease = await store.acquireLease();
    await blobOf(store, store.names.leaseBlob).getBlobLeaseClient().breakLease(0);
    const reason = await new Promise<unknown>((resolve) =>
      lease.lost.addEventListener('abort', () => resolve(lease.lost.reason), { once: true }),
    );
    expect(isJobqError(reason, 'lease-lost')).toBe(true);
    expect((reason as Error).message).toMatch(/stop writing/);
    await lease.release();
    await store.deleteStorage();
  });

  it('finds nothing (and creates nothing) on an unused prefix opened without createIfMissing', async () => {
    const store = await open({ createIfMissing: false });
    expect(await store.load('x')).toBeNull();
    expect(await store.getWorkflow('x')).toBeNull();
    expect(await store.listWorkflows()).toEqual({ items: [], continuationToken: null });
    expect(await store.listWorkflows({ recent: true })).toEqual({ items: [], continuationToken: null });
    expect(await store.listTasks({ status: ['running'] })).toEqual({ items: [], continuationToken: null });
    expect(await store.countWorkflows()).toMatchObject({ pending: 0, running: 0 });
    expect(await store.readCoordinatorStats()).toBeNull();
    expect(
      await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(store.names.workflowsContainer).exists(),
    ).toBe(false);
  });

  it('refuses bad settings and arguments clearly', async () => {
    for (const extra of [
      { prefix: 'bad-prefix' },
      { leaseDurationInMs: 10_000 },
      { leaseDurationInMs: 15_500 },
      { renewIntervalInMs: 15_000 },
      { rowWriteConcurrency: 0 },
    ]) {
      expect(isJobqError(await caught(open({ createIfMissing: false, ...extra })), 'invalid-config')).toBe(true);
    }
    const store = await open({ createIfMissing: false });
    for (const bad of ['../etc', '', 'a/b', '..', '_coordinator.stats', '_coordinator.lock', 'x'.repeat(129)]) {
      expect(isJobqError(await caught(store.load(bad)), 'invalid-argument')).toBe(true);
    }
    expect(isJobqError(await caught(store.requestCancel('wf', 'yesterday')), 'invalid-argument')).toBe(true);
    expect(isJobqError(await caught(store.listWorkflows({ limit: 0 })), 'invalid-argument')).toBe(true);
    expect(isJobqError(await caught(store.listWorkflows({ recent: true, continuationToken: 'nope' })), 'invalid-argument')).toBe(true);
    expect(isJobqError(await caught(store.writeCoordinatorStats([] as unknown as Record<string, unknown>)), 'invalid-argument')).toBe(true);
  });
});

/** ABC run to completion at second `n`. */
function completed(workflowId: string, n: number): WorkflowRuntime {
  let r = step(createRuntime(ABC, { workflowId, now: at(1) }), { type: 'activate', now: at(2) });
  for (const name of ['a', 'b', 'c'])
    r = step(r, { type: 'completion', now: at(n), taskName: name, attemptNo: null, success: true, outputRef: null, error: null });
  return r;
}

async function storeCompleted(store: AzureWorkflowStore, workflowId: string, n = 5): Promise<void> {
  const { etag } = await store.create(createRuntime(ABC, { workflowId, now: at(1) }), 'h');
  await store.save(completed(workflowId, n), etag);
}

describe('purge on Azure Storage', () => {
  it('deletes upstream/{wf}/ exactly: workflow "a" leaves "a.b" alone, and workflow "upstream" only upstream/upstream/', async () => {
    const store = await open();
    for (const id of ['a', 'a.b', 'upstream']) await storeCompleted(store, id);
    const overflow = [
      'upstream/a/c/1.json',
      'upstream/a/c/2.json',
      'upstream/a.b/c/1.json',
      'upstream/upstream/c/1.json',
      'upstream/ab/c/1.json',
    ];
    for (const name of overflow) await blobOf(store, name).upload('{}', 2);
    const before = await blobNames(store);
    const owned = (id: string): string[] =>
      before.filter(
        (n) => n === `${id}.json` || n.startsWith(`state/${id}/`) || n.startsWith(`definitions/${id}/`) || n.startsWith(`upstream/${id}/`),
      );
    // Each stored workflow holds a head, a definition, a snapshot and a log.
    expect(owned('a.b').filter((n) => !n.startsWith('upstream/'))).toHaveLength(4);
    expect(await store.purge('a')).toMatchObject({ outcome: 'purged', blobs: owned('a').length, taskRows: 3 });
    expect(owned('a')).toHaveLength(6);
    expect(await blobNames(store)).toEqual(before.filter((n) => !owned('a').includes(n)));
    expect(await store.purge('upstream')).toMatchObject({ outcome: 'purged', blobs: 5 });
    expect(await blobNames(store)).toEqual(before.filter((n) => !owned('a').includes(n) && !owned('upstream').includes(n)));
    expect((await blobNames(store)).filter((n) => n.startsWith('upstream/'))).toEqual(['upstream/a.b/c/1.json', 'upstream/ab/c/1.json']);
    expect((await store.load('a.b'))?.runtime).toEqual(completed('a.b', 5));
    await store.deleteStorage();
  });

  it('purges a workflow whose runtime does not decode once the coordinator set it aside as corrupt, not before', async () => {
    const store = await open();
    await storeCompleted(store, 'bad');
    await blobOf(store, 'bad.json').upload('not json', 8);
    expect(await store.purge('bad')).toMatchObject({
      outcome: 'skipped',
      status: 'completed',
      reason: expect.stringContaining('cannot be read'),
    });
    expect(await blobOf(store, 'bad.json').exists()).toBe(true);
    await store.markCorrupt('bad', 'the runtime cannot be read: it is not JSON', at(9));
    expect(await store.purge('bad')).toMatchObject({ outcome: 'purged', status: 'corrupt', finishedAt: at(9), blobs: 4, taskRows: 3 });
    expect(await blobNames(store)).toEqual([]);
    expect(await store.getWorkflow('bad')).toBeNull();
    await store.deleteStorage();
  });

  it('deletes nothing when the runtime is saved between the re-check and the delete (a retry applied meanwhile)', async () => {
    const store = await open();
    const failed = step(
      step(step(createRuntime(ABC, { workflowId: 'race', now: at(1) }), { type: 'activate', now: at(2) }), {
        type: 'completion',
        now: at(3),
        taskName: 'a',
        attemptNo: null,
        success: false,
        outputRef: null,
        error: 'exit 1',
      }),
      { type: 'completion', now: at(4), taskName: 'b', attemptNo: null, success: true, outputRef: null, error: null },
    );
    expect(failed.status).toBe('failed');
    const { etag } = await store.create(createRuntime(ABC, { workflowId: 'race', now: at(1) }), 'h');
    await store.save(failed, etag);
    // A coordinator applies a retry right after the purge read the runtime.
    const load = store.load.bind(store);
    store.load = async (id, options) => {
      const loaded = await load(id, options);
      if (loaded) await store.save(step(loaded.runtime, { type: 'retry', now: at(10), requestedAt: at(10) }), loaded.etag);
      return loaded;
    };
    const result = await store.purge('race');
    store.load = load;
    expect(result).toMatchObject({ outcome: 'skipped', status: 'failed', reason: expect.stringContaining('changed while being purged') });
    expect((await store.load('race'))?.runtime.status).toBe('running');
    expect(await store.getWorkflow('race')).toMatchObject({ status: 'running' });
    expect((await store.listTasks({ workflowId: 'race' })).items).toHaveLength(3);
    await store.deleteStorage();
  });
});

/** Writes index rows straight into the table (no runtimes): `active` running ones, the rest finished, 100 per transaction. */
async function seedIndex(store: AzureWorkflowStore, total: number, active: number): Promise<void> {
  const byPartition = new Map<string, Array<TableEntity<Record<string, string>>>>();
  for (let i = 0; i < total; i++) {
    const id = `wf-${String(i).padStart(5, '0')}`;
    const running = i < active;
    const row: TableEntity<Record<string, string>> = {
      partitionKey: indexPartition(id),
      rowKey: id,
      name: 'seeded',
      status: running ? 'running' : i % 3 === 0 ? 'failed' : 'completed',
      created_at: at(1),
      updated_at: at(2),
      finished_at: running ? '' : at(2),
      cancel_applied_at: '',
      retry_applied_at: '',
      error: '',
    };
    const list = byPartition.get(row.partitionKey) ?? [];
    list.push(row);
    byPartition.set(row.partitionKey, list);
  }
  const index = tableClient(store.names.indexTable);
  for (const rows of byPartition.values()) {
    for (let i = 0; i < rows.length; i += 100)
      await index.submitTransaction(rows.slice(i, i + 100).map((row): TransactionAction => ['upsert', row]));
  }
}

/** Every page of a listing: how many items in all. */
async function drain<T>(list: (token: string | undefined) => Promise<{ items: T[]; continuationToken: string | null }>): Promise<number> {
  let n = 0;
  let token: string | undefined;
  do {
    const page = await list(token);
    n += page.items.length;
    token = page.continuationToken ?? undefined;
  } while (token !== undefined);
  return n;
}

describe('the cost of the coordinator scans (table requests over 3 000 index rows)', () => {
  /** The queries of one round of coordinator scans: requests, never-activated, lost-task sweep, ready-repair. */
  async function scanRound(store: AzureWorkflowStore): Promise<number[]> {
    const page = { limit: 1_000 };
    const token = (t: string | undefined) => (t ? { continuationToken: t } : {});
    return [
      await drain((t) => store.listRequests({ ...page, ...token(t) })),
      await drain((t) => store.listWorkflows({ savedStatus: ['pending'], ...page, ...token(t) })),
      await drain((t) => store.listWorkflows({ savedStatus: ['running', 'cancelling'], ...page, ...token(t) })),
      await drain((t) => store.listWorkflows({ savedStatus: ['running'], updatedBefore: at(60), ...page, ...token(t) })),
    ];
  }

  for (const active of [0, 1_000, 2_500]) {
    it(`${active} active of 3 000: one request per 1 000 matches of each scan, the finished rows never read`, async () => {
      const tables = tableCounter();
      const store = await open({ tablePolicies: [tables.policy] });
      await seedIndex(store, 3_000, active);
      await store.create(createRuntime(ABC, { workflowId: 'asks', now: at(1) }), 'h');
      await store.requestCancel('asks', at(3));
      tables.reset();
      const found = await scanRound(store);
      expect(found).toEqual([1, 1, active, active]);
      // One request for the request rows, one for the never-activated workflows (none), and one per
      // started 1 000 matches for each of the two sweeps: 4 on an idle deployment, 4 at 1 000
      // active, 8 at 2 500, however many finished rows the index holds. (The service itself may end
      // a page early at a partition boundary, with a continuation token: one more request then.)
      expect(tables.all()).toBe(2 + 2 * Math.max(1, Math.ceil(active / 1_000)));

      // The old request scan (statuses with the derived `pending`, default pages of 100) for comparison:
      // every page of 100 reads the whole index again (3 002 rows: 4 requests): 44 requests at 1 000 active.
      tables.reset();
      await drain((t) => store.listWorkflows({ status: ['pending', 'running', 'cancelling'], ...(t ? { continuationToken: t } : {}) }));
      expect(tables.all()).toBe(Math.max(1, Math.ceil((active + 1) / 100)) * 4);
      await store.deleteStorage();
    }, 60_000);
  }
});

describe('connection strings', () => {
  it('works with a SAS connection string (no AccountName): blobs, tables, the lease and outputs', async () => {
    const sas = generateAccountSASQueryParameters(
      {
        expiresOn: new Date(Date.now() + 3_600_000),
        permissions: AccountSASPermissions.parse('rwdlacup'),
        services: AccountSASServices.parse('bqt').toString(),
        resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
        protocol: SASProtocol.HttpsAndHttp,
      },
      new StorageSharedKeyCredential(azurite.accountName, AZURITE_ACCOUNT_KEY),
    );
    const connectionString = `BlobEndpoint=${azurite.blobEndpoint};QueueEndpoint=${azurite.queueEndpoint};TableEndpoint=${azurite.tableEndpoint};SharedAccessSignature=${sas.toString()}`;
    const prefix = uniquePrefix();
    const store = await openWorkflowStore({ connection: { connectionString }, prefix, leaseDurationInMs: 15_000, renewIntervalInMs: 250 });
    const r0 = createRuntime(ABC, { workflowId: 'sas', now: at(1) });
    const { etag } = await store.create(r0, 'h');
    const r1 = step(r0, { type: 'activate', now: at(2) });
    const saved = await store.save(r1, etag);
    expect(saved.rowsError).toBeNull();
    expect(await store.load('sas')).toEqual({ runtime: r1, etag: saved.etag });
    expect((await store.listWorkflows({ recent: true })).items.map((w) => w.workflowId)).toEqual(['sas']);
    expect((await store.listTasks({ workflowId: 'sas' })).items.map((t) => t.taskName)).toEqual(['a', 'b', 'c']);
    await store.requestCancel('sas', at(3));
    expect((await store.getWorkflow('sas'))?.cancelRequestedAt).toBe(at(3));
    const lease = await store.acquireLease();
    await store.writeCoordinatorStats({ writtenAt: at(4) });
    expect(await store.readCoordinatorStats()).toEqual({ writtenAt: at(4) });
    await lease.release();
    const outputs = await openOutputStore({ connection: { connectionString }, prefix });
    const big = JSON.stringify('x'.repeat(40_000));
    const put = await outputs.putOutput('sas', 'a', 1, big);
    expect(put.placement).toBe('blob');
    expect(await outputs.getOutput(put.ref)).toBe('x'.repeat(40_000));
    await BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(outputs.outputsContainer).deleteIfExists();
    await store.deleteStorage();
  });

  it('takes an endpoint-only string (no key, no SAS) as its endpoints with a token credential', async () => {
    const scopes: string[] = [];
    const credential = {
      getToken: (scope: string | string[]) => {
        scopes.push(String(scope));
        return Promise.resolve({ token: 'not-a-real-token', expiresOnTimestamp: Date.now() + 3_600_000 });
      },
    };
    // A port nothing listens on: each call asks for a token, then fails to connect.
    const clients = accountClients(
      { connectionString: 'BlobEndpoint=https://127.0.0.1:1/myacct;TableEndpoint=https://127.0.0.1:1/myacct', credential },
      { operationTimeoutInMs: 2_000 },
    );
    expect(clients.blobService.url).toBe('https://127.0.0.1:1/myacct');
    await expect(clients.container('c').exists()).rejects.toThrow();
    await expect(clients.table('t').getEntity('p', 'r')).rejects.toThrow();
    expect(scopes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(scopes)).toEqual(new Set(['https://storage.azure.com/.default']));
  });
});

describe('failures', () => {
  it('never puts the account key in an error, its message, its inspection or its JSON', async () => {
    const secret = Buffer.from('not-the-key-'.repeat(6)).toString('base64');
    const connectionString = azurite.connectionString.replace(AZURITE_ACCOUNT_KEY, secret);
    expect(connectionString).toContain(secret);
    const error = await caught(
      openWorkflowStore({ connection: { connectionString }, prefix: uniquePrefix(), operationTimeoutInMs: 5_000 }),
    );
    expect(isJobqError(error, 'auth')).toBe(true);
    const texts = [
      String(error),
      (error as Error).message,
      (error as Error).stack ?? '',
      inspect(error, { depth: 10 }),
      JSON.stringify(error),
    ];
    for (const text of texts) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(AZURITE_ACCOUNT_KEY);
    }
  });

  it('reports a full emulator (409 MemoryExtentStoreAtSizeLimit) on save as a retryable unavailable, not as a write race', async () => {
    const own = await startAzurite({ extentMemoryLimitMb: 0.25 });
    try {
      const store = await openWorkflowStore({
        connection: { connectionString: own.connectionString },
        prefix: uniquePrefix(),
        operationTimeoutInMs: 5_000,
      });
      const r0 = createRuntime(ABC, { workflowId: 'full', now: at(1) });
      const { etag } = await store.create(r0, 'h');
      // Fill the emulator's blob memory behind the store's back.
      const filler = BlobServiceClient.fromConnectionString(own.connectionString).getContainerClient(store.names.workflowsContainer);
      let n = 0;
      for (const size of [16 * 1024, 1024, 64]) {
        const chunk = Buffer.alloc(size, 1);
        for (;;) {
          const refused = await filler
            .getBlockBlobClient(`filler-${n++}`)
            .upload(chunk, size)
            .then(
              () => false,
              (e: { statusCode?: number }) => e.statusCode === 409,
            );
          if (refused) break;
          if (n > 2_000) throw new Error('the emulator never filled up');
        }
      }
      const error = await caught(store.save(step(r0, { type: 'activate', now: at(2) }), etag));
      expect(isJobqError(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'unavailable',
        retryable: true,
        details: { statusCode: 409, serviceCode: 'MemoryExtentStoreAtSizeLimit' },
      });
      expect((error as Error).message).toContain("the storage emulator's blob memory is full");
      // A create hits the same wall, and says so too.
      const created = await caught(store.create(createRuntime(ABC, { workflowId: 'full2', now: at(1) }), 'h'));
      expect(created).toMatchObject({ code: 'unavailable', retryable: true });
    } finally {
      await own.stop();
    }
  });

  it('gives typed, retryable errors (and no hang) once the service is gone', async () => {
    const own = await startAzurite();
    const store = await openWorkflowStore({
      connection: { connectionString: own.connectionString },
      prefix: uniquePrefix(),
      operationTimeoutInMs: 3_000,
    });
    const r0 = createRuntime(ABC, { workflowId: 'gone', now: at(1) });
    const { etag } = await store.create(r0, 'h');
    await own.stop();
    const attempts: Array<() => Promise<unknown>> = [
      () => store.load('gone'),
      () => store.save(step(r0, { type: 'activate', now: at(2) }), etag),
      () => store.getWorkflow('gone'),
      () => store.listWorkflows({ recent: true }),
      () => store.listTasks({ workflowId: 'gone' }),
      () => store.requestCancel('gone', at(3)),
      () => store.acquireLease(),
      () => store.writeCoordinatorStats({ a: 1 }),
    ];
    for (const attempt of attempts) {
      const error = await caught(attempt());
      expect(isJobqError(error)).toBe(true);
      if (!isJobqError(error)) return;
      expect(['unavailable', 'timeout']).toContain(error.code);
      expect(error.retryable).toBe(true);
    }
  }, 60_000);
});
