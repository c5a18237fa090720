import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mergeNodeName, parseWorkflow, reduce, sequentializeFanIn, type WorkflowEvent, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeCoordinatorMessage } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { isJobqError, type WorkflowStore } from '@jobq/ports';
import { openStorageQueue, type StorageTaskQueue } from '@jobq/queue-storage';
import { openWorkflowStore, type AzureWorkflowStore } from '@jobq/store-azure';
import { WorkflowClient, WorkflowValidationError, canonicalJson, definitionHash, type SubmitManyResult } from './index';

let azurite: LocalStorage;
let counter = 0;
const disposals: Array<() => Promise<void>> = [];

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await Promise.allSettled(disposals.map((d) => d()));
  await azurite.stop();
});

function uniquePrefix(): string {
  counter++;
  return `C${process.pid}x${Date.now().toString(36)}x${counter}`;
}

interface Setup {
  store: AzureWorkflowStore;
  completions: StorageTaskQueue;
  client: WorkflowClient;
}

async function openQueue(queueName: string): Promise<StorageTaskQueue> {
  const queue = await openStorageQueue({ connection: { connectionString: azurite.connectionString }, queueName, lockDurationInMs: 5_000 });
  disposals.push(() => queue.deleteQueue());
  return queue;
}

async function setup(now?: () => Date): Promise<Setup> {
  const store = await openWorkflowStore({
    connection: { connectionString: azurite.connectionString },
    prefix: uniquePrefix(),
    operationTimeoutInMs: 10_000,
  });
  disposals.push(() => store.deleteStorage());
  const completions = await openQueue(store.names.completionQueue);
  const client = new WorkflowClient({ store, completions, outputsContainer: store.names.outputsContainer, ...(now ? { now } : {}) });
  return { store, completions, client };
}

async function wakeups(queue: StorageTaskQueue): Promise<string[]> {
  const peeked = await queue.peek(32);
  return peeked.map((m) => {
    const decoded = decodeCoordinatorMessage(m.body);
    if (decoded.kind !== 'wakeup') throw new Error(`not a wake-up: ${m.body}`);
    return decoded.workflowId;
  });
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Loads, applies events, saves. */
async function advance(
  store: WorkflowStore,
  workflowId: string,
  events: (runtime: WorkflowRuntime) => WorkflowEvent[],
): Promise<WorkflowRuntime> {
  const loaded = await store.load(workflowId);
  if (!loaded) throw new Error(`no runtime for ${workflowId}`);
  let runtime = loaded.runtime;
  for (const event of events(runtime)) runtime = reduce(runtime, event).runtime;
  await store.save(runtime, loaded.etag, { previous: loaded.runtime });
  return runtime;
}

function done(taskName: string, success = true, now = new Date().toISOString()): WorkflowEvent {
  return { type: 'completion', now, taskName, attemptNo: 1, success, outputRef: null, error: success ? null : 'exit 1' };
}

const ABC = `name: demo
tasks:
  - name: a
    kwargs: {cmd: "true"}
  - name: b
    kwargs: {cmd: "true"}
  - name: c
    depends_on: [a]
    kwargs: {cmd: "true"}
`;

const FAN_IN = `name: fan
tasks:
  - {name: a, kwargs: {cmd: "true"}}
  - {name: b, kwargs: {cmd: "true"}}
  - {name: c, kwargs: {cmd: "true"}}
  - {name: d, depends_on: [a, b, c], kwargs: {cmd: "true"}}
`;

const BAD = `name: broken
tasks:
  - name: a
    kwargs: {cmd: "true"}
    depends_on: [nope]
`;

describe('definitionHash', () => {
  it('is stable under key order and tells definitions apart', () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: null }], c: undefined })).toBe('{"a":[{"x":null,"y":2}],"b":1}');
    const one = parseWorkflow(ABC, { filename: 'x.yaml' });
    const two = parseWorkflow(ABC.replace('name: demo', 'name: other'), { filename: 'x.yaml' });
    if (!one.ok || !two.ok) throw new Error('fixtures must parse');
    expect(definitionHash(one.value)).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionHash(one.value)).toBe(definitionHash(structuredClone(one.value)));
    expect(definitionHash(one.value)).not.toBe(definitionHash(two.value));
  });
});

describe('WorkflowClient (Azurite)', () => {
  it('submits YAML: runtime created, index row pending, a wake-up on the completion queue', async () => {
    const { client, completions, store } = await setup();
    const result = await client.submit({ text: ABC, filename: 'abc.yaml' });
    expect(result.created).toBe(true);
    expect(result.workflowId).toMatch(/^[0-9a-f]{32}$/);
    const row = await client.status(result.workflowId, { detail: true });
    expect(row?.status).toBe('pending');
    expect(row?.name).toBe('demo');
    expect(row?.counts.ready).toBe(2);
    expect(row?.runtime?.activated).toBe(false);
    expect((await store.load(result.workflowId))?.runtime.outputsContainer).toBe(store.names.outputsContainer);
    expect(await wakeups(completions)).toEqual([result.workflowId]);
    expect(await client.status('unknown-id')).toBeNull();
    const tasks = await client.tasks({ workflowId: result.workflowId });
    expect(tasks.items.map((t) => t.taskName).sort()).toEqual(['a', 'b', 'c']);
    expect((await client.list()).items.map((w) => w.workflowId)).toEqual([result.workflowId]);
  });

  it('refuses an invalid definition with every issue and its position, writing nothing', async () => {
    const { client, completions } = await setup();
    const error = await caught(client.submit({ text: BAD, filename: 'bad.yaml' }));
    expect(error).toBeInstanceOf(WorkflowValidationError);
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    const issues = (error as WorkflowValidationError).issues;
    expect(issues.length).toBeGreaterThan(0);
    expect(issues[0]?.line).toBe(5);
    expect(issues[0]?.column).toEqual(expect.any(Number));
    expect((error as Error).message).toMatch(/^bad\.yaml:5:\d+: /);
    expect((await client.list()).items).toEqual([]);
    expect(await completions.peek(1)).toEqual([]);
  });

  it('resubmits an --id: same definition → created false, different → conflict; bad ids refused', async () => {
    const { client, completions } = await setup();
    expect((await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: 'nightly-1' })).created).toBe(true);
    expect(await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: 'nightly-1' })).toEqual({
      workflowId: 'nightly-1',
      created: false,
      warnings: [],
    });
    const conflict = await caught(
      client.submit({ text: ABC.replace('name: demo', 'name: other'), filename: 'abc.yaml' }, { id: 'nightly-1' }),
    );
    expect(isJobqError(conflict, 'conflict')).toBe(true);
    for (const id of ['', '-lead', '.x', 'a/b', 'x'.repeat(129), 'sp ace']) {
      expect(isJobqError(await caught(client.submit({ text: ABC, filename: 'abc.yaml' }, { id })), 'invalid-argument')).toBe(true);
    }
    expect((await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: `9${'x'.repeat(127)}` })).created).toBe(true);
    expect(await wakeups(completions)).toEqual(['nightly-1', 'nightly-1', `9${'x'.repeat(127)}`]);
  });

  it('applies --max-fan-in: merge nodes are in the stored runtime; refusals are validation errors', async () => {
    const { client, store } = await setup();
    const { workflowId } = await client.submit({ text: FAN_IN, filename: 'fan.yaml' }, { maxFanIn: 2 });
    const runtime = (await store.load(workflowId))?.runtime;
    expect(Object.keys(runtime?.tasks ?? {})).toEqual(expect.arrayContaining([mergeNodeName('d', 0), mergeNodeName('d', 1)]));
    expect(runtime?.definition.tasks.find((t) => t.name === 'd')?.dependsOn).toEqual([mergeNodeName('d', 1)]);
    const refused = await caught(
      client.submit(
        { text: FAN_IN.replace('depends_on: [a, b, c]', 'depends_on: [a, b, c], dep_policy: any'), filename: 'f.yaml' },
        { maxFanIn: 2 },
      ),
    );
    expect(refused).toBeInstanceOf(WorkflowValidationError);
    expect((refused as WorkflowValidationError).issues[0]?.code).toBe('bad-fan-in');
  });

  it('validates a definition in hand, one with merge nodes too: an invalid DAG is refused with a clear error, writing nothing', async () => {
    const { client, completions } = await setup();
    const parsed = parseWorkflow(FAN_IN, { filename: 'fan.yaml' });
    if (!parsed.ok) throw new Error('invalid test definition');
    const split = sequentializeFanIn(parsed.value, 2);
    if (!split.ok) throw new Error('split failed');
    // What the fan-in transform made passes the engine's own rules.
    expect((await client.submit({ definition: split.value }, { id: 'split-ok' })).created).toBe(true);
    // A library caller's DAG with a merge node is no longer taken as already checked.
    const cyclic = { ...split.value, tasks: split.value.tasks.map((t) => (t.name === 'a' ? { ...t, dependsOn: ['d'] } : t)) };
    const refused = await caught(client.submit({ definition: cyclic }, { id: 'split-cyclic' }));
    expect(refused).toBeInstanceOf(WorkflowValidationError);
    expect((refused as WorkflowValidationError).issues.map((i) => i.code)).toContain('cycle');
    expect((refused as Error).message).toMatch(/^<definition>: tasks\[\d+\]\.depends_on: cycle: dependency cycle: /);
    expect(await client.status('split-cyclic')).toBeNull();
    expect(await wakeups(completions)).toEqual(['split-ok']);
  });

  it('submitMany keeps input order, reports each item, and survives a bad one', async () => {
    const { client } = await setup();
    const progress: Array<[number, number, boolean]> = [];
    const results = await client.submitMany(
      [
        { text: ABC, filename: 'one.yaml', id: 'one' },
        { text: BAD, filename: 'bad.yaml' },
        { text: FAN_IN, filename: 'fan.yaml', id: 'fan', maxFanIn: 2 },
        { text: ABC, filename: 'two.yaml' },
      ],
      { concurrency: 2, onProgress: (d, total, r: SubmitManyResult) => progress.push([d, total, r.ok]) },
    );
    expect(results.map((r) => r.ok)).toEqual([true, false, true, true]);
    expect(results[0]).toMatchObject({ ok: true, workflowId: 'one', created: true });
    expect(results[2]).toMatchObject({ ok: true, workflowId: 'fan', created: true });
    const bad = results[1];
    expect(bad?.ok === false && bad.error instanceof WorkflowValidationError).toBe(true);
    expect(progress.map(([d, total]) => [d, total])).toEqual([
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ]);
    expect(progress.filter(([, , ok]) => !ok)).toHaveLength(1);
    expect((await client.list()).items).toHaveLength(3);
  });

  it('cancel: records the request and a wake-up; twice is harmless; unknown is not-found; completed is a no-op', async () => {
    const { client, completions, store } = await setup();
    const { workflowId } = await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: 'to-cancel' });
    expect(await client.cancel(workflowId)).toEqual({ requested: true });
    expect(await client.cancel(workflowId)).toEqual({ requested: true });
    expect((await client.status(workflowId))?.cancelRequestedAt).toEqual(expect.any(String));
    expect(await wakeups(completions)).toEqual([workflowId, workflowId, workflowId]);
    expect(isJobqError(await caught(client.cancel('missing')), 'not-found')).toBe(true);

    const finished = await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: 'finished' });
    const runtime = await advance(store, finished.workflowId, () => [
      { type: 'activate', now: new Date().toISOString() },
      done('a'),
      done('b'),
      done('c'),
    ]);
    expect(runtime.status).toBe('completed');
    expect((await client.status('finished'))?.status).toBe('completed');
    expect(await client.cancel('finished')).toEqual({
      requested: false,
      message: 'workflow "finished" is already completed: nothing to cancel',
    });
    expect((await client.status('finished'))?.cancelRequestedAt).toBeNull();
  });

  it('retry: nothing to retry is a no-op; after a failure the request is recorded with a wake-up', async () => {
    const { client, completions, store } = await setup();
    const { workflowId } = await client.submit({ text: ABC, filename: 'abc.yaml' }, { id: 'flaky' });
    const none = await client.retry(workflowId);
    expect(none.requested).toBe(false);
    expect(none.message).toMatch(/^nothing to retry/);
    expect(isJobqError(await caught(client.retry('missing')), 'not-found')).toBe(true);

    const runtime = await advance(store, workflowId, () => [{ type: 'activate', now: new Date().toISOString() }, done('a', false)]);
    expect(runtime.counts.failed).toBe(1);
    expect(await client.retry(workflowId)).toEqual({ requested: true });
    const row = await client.status(workflowId);
    expect(row?.retryRequestedAt).toEqual(expect.any(String));
    expect(row?.status).toBe('pending');
    expect(await wakeups(completions)).toEqual([workflowId, workflowId]);
  });

  it('explain: unmet deps, max_parallelism, a stale running task and an old queue message', async () => {
    const later = () => new Date(Date.now() + 10 * 60_000);
    const { client, store } = await setup(later);
    const text = ABC.replace('tasks:', 'max_parallelism: 1\ntasks:');
    const { workflowId } = await client.submit({ text, filename: 'abc.yaml' }, { id: 'explained' });
    await advance(store, workflowId, () => [{ type: 'activate', now: new Date().toISOString() }]);

    const workQueue = await openQueue(`work-${process.pid}-${counter}`);
    await workQueue.send({ body: '{"hello":"world"}' });
    const report = await client.explain(workflowId, {
      staleRunningAfterMs: 1_000,
      peekQueues: (spec) => (spec === 'default' ? workQueue : undefined),
    });

    expect(report.workflow).toMatchObject({ workflowId, status: 'running', indexStatus: 'running', activated: true });
    const byName = new Map(report.tasks.map((t) => [t.name, t]));
    expect(byName.get('a')?.status).toBe('running');
    expect(byName.get('a')?.reasons.join('\n')).toMatch(/attempt 1[\s\S]*stale[\s\S]*timeout_s/);
    expect(byName.get('b')?.status).toBe('ready');
    expect(byName.get('b')?.reasons.join('\n')).toMatch(/held by max_parallelism 1/);
    expect(byName.get('c')?.status).toBe('pending');
    expect(byName.get('c')?.reasons.join('\n')).toMatch(/0 of 1 dependencies satisfied; waiting for "a" \(running\)/);
    expect(report.queues).toHaveLength(1);
    expect(report.queues[0]).toMatchObject({
      queue: 'default',
      name: workQueue.name,
      readyTasks: 1,
      runningTasks: 1,
      approximateMessageCount: 1,
    });
    expect(report.queues[0]?.oldestMessageAgeMs).toBeGreaterThan(300_000);
    expect(report.queues[0]?.reasons.join('\n')).toMatch(/no worker is taking messages from queue/);

    const fresh = await client.explain(workflowId);
    expect(fresh.tasks.find((t) => t.name === 'a')?.reasons.join('\n')).not.toMatch(/stale/);
    expect(isJobqError(await caught(client.explain('missing')), 'not-found')).toBe(true);
  });
});
