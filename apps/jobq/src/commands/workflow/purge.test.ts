import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createRuntime,
  foldEvents,
  parseWorkflow,
  type WorkflowDefinition,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { isJobqError } from '@jobq/ports';
import { openWorkflowStore, type AzureWorkflowStore, type TablePipelinePolicy } from '@jobq/store-azure';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

const OLD = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();

function definition(): WorkflowDefinition {
  const parsed = parseWorkflow(TWO_TASKS);
  if (!parsed.ok) throw new Error('bad workflow');
  return parsed.value;
}

const done = (taskName: string, now: string, success = true): WorkflowEvent => ({
  type: 'completion',
  now,
  taskName,
  attemptNo: null,
  success,
  outputRef: null,
  error: success ? null : 'exit 1',
});

/** The runtime of TWO_TASKS after `events` (activated at `start` first). */
function runtimeAfter(workflowId: string, start: string, events: WorkflowEvent[]): WorkflowRuntime {
  const r0 = createRuntime(definition(), { workflowId, now: start, outputsContainer: null });
  return foldEvents(r0, [{ type: 'activate', now: start }, ...events]).runtime;
}

/** Writes a workflow as the coordinator would have left it (no coordinator runs in this file). */
async function seed(store: AzureWorkflowStore, runtime: WorkflowRuntime): Promise<void> {
  const { etag } = await store.create(
    createRuntime(runtime.definition, { workflowId: runtime.workflowId, now: runtime.createdAt, outputsContainer: null }),
    'h',
  );
  await store.save(runtime, etag);
}

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
/** The output ref of task `a` of each workflow that has one. */
const refs = new Map<string, string>();
const big = JSON.stringify({ pad: 'p'.repeat(40 * 1024) });

beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Purge');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  const store = deployment.store;
  // Finished long ago: "a" (completed), "upstream" (completed), "old-failed" (failed).
  for (const id of ['a', 'upstream']) await seed(store, runtimeAfter(id, OLD(1), [done('a', OLD(2)), done('b', OLD(3))]));
  await seed(store, runtimeAfter('old-failed', OLD(1), [done('a', OLD(2), false)]));
  // Finished just now: "a.b" (its id starts with "a").
  const now = new Date().toISOString();
  await seed(store, runtimeAfter('a.b', OLD(1), [done('a', now), done('b', now)]));
  // Running since long ago; failed long ago with a retry waiting.
  await seed(store, runtimeAfter('run', OLD(1), []));
  await seed(store, runtimeAfter('retry-waiting', OLD(1), [done('a', OLD(2), false)]));
  await store.requestRetry('retry-waiting', now);
  // Finished long ago by its index row, but its runtime was retried since (the index row write was lost).
  await seed(store, runtimeAfter('lagging', OLD(1), [done('a', OLD(2), false)]));
  let loseIndexWrites = false;
  const lose: TablePipelinePolicy = {
    name: 'test-lose-index-writes',
    sendRequest: (request, next) =>
      loseIndexWrites && request.method !== 'GET' && request.url.includes(`/${store.names.indexTable}(`)
        ? Promise.reject(new Error('lost'))
        : next(request),
  };
  const lossy = await openWorkflowStore({
    connection: { connectionString: storage.azurite.connectionString },
    prefix,
    createIfMissing: false,
    tablePolicies: [lose],
  });
  const lagging = await lossy.load('lagging');
  if (!lagging) throw new Error('no runtime');
  loseIndexWrites = true;
  const retried = foldEvents(lagging.runtime, [{ type: 'retry', now, requestedAt: now }]).runtime;
  expect((await lossy.save(retried, lagging.etag)).rowsError).not.toBeNull();
  loseIndexWrites = false;
  expect((await store.getWorkflow('lagging'))?.status).toBe('failed');
  expect((await store.load('lagging'))?.runtime.status).toBe('running');
  // Outputs and overflow blobs of a, a.b and upstream.
  for (const id of ['a', 'a.b', 'upstream']) {
    const put = await deployment.outputs.putOutput(id, 'a', 1, big);
    expect(put.placement).toBe('blob');
    refs.set(id, put.ref ?? '');
    await deployment.outputs.putFile(id, 'a', 1, 'f.txt', Buffer.from(id));
    await deployment.outputs.putUpstreamOverflow(id, 'b', 1, { s: { '1': ['a'] } });
  }
});
afterAll(() => storage.stop());

const overflowOf = (id: string) => `${deployment.store.names.workflowsContainer}/upstream/${id}/b/1.json`;

async function exists(id: string): Promise<{ runtime: boolean; row: boolean; output: boolean; overflow: boolean }> {
  const missing = (error: unknown): boolean => {
    if (isJobqError(error, 'not-found')) return false;
    throw error;
  };
  return {
    runtime: (await deployment.store.load(id)) !== null,
    row: (await deployment.store.getWorkflow(id)) !== null,
    output: refs.has(id) ? await deployment.outputs.getOutput(refs.get(id) ?? null).then(() => true, missing) : false,
    overflow: refs.has(id) ? await deployment.outputs.getUpstreamOverflow(overflowOf(id)).then(() => true, missing) : false,
  };
}

const everything = { runtime: true, row: true, output: true, overflow: true };
const nothing = { runtime: false, row: false, output: false, overflow: false };

describe('jobq workflow purge', () => {
  it('--dry-run says what it would delete and deletes nothing', async () => {
    const result = await runCli(['workflow', 'purge', '--finished-before', '1h', '--dry-run'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n').sort();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^would purge a \(completed, finished 2025-01-01T00:00:03\.000Z\): its runtime, blobs, outputs and 2 task rows$/,
    );
    expect(lines[1]).toMatch(/^would purge old-failed \(failed, finished 2025-01-01T00:00:02\.000Z\)/);
    expect(lines[2]).toMatch(/^would purge upstream \(completed/);
    expect(result.stderr).toMatch(/skipped retry-waiting: a retry was requested at .* and is not applied yet/);
    expect(result.stderr).toMatch(/skipped lagging: it is not finished: its runtime is running/);
    expect(result.stderr).toMatch(
      new RegExp(
        `Dry run: 3 workflows finished before \\S+ \\(1h ago\\) would be purged from devstoreaccount1/${prefix} \\(6 task rows\\); nothing was deleted; 2 skipped\\.`,
      ),
    );
    for (const id of ['a', 'a.b', 'upstream']) expect(await exists(id)).toEqual(everything);

    const json = await runCli(['workflow', 'purge', '--finished-before', '1h', '--dry-run', '--json'], { env: storage.env(prefix) });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      dry_run: boolean;
      purged: number;
      would_purge: number;
      skipped: number;
      failed: number;
      workflows: Array<{ workflow_id: string; outcome: string }>;
    };
    expect(doc).toMatchObject({ dry_run: true, purged: 0, would_purge: 3, skipped: 2, failed: 0 });
    expect(Object.fromEntries(doc.workflows.map((w) => [w.workflow_id, w.outcome]))).toEqual({
      a: 'would-purge',
      upstream: 'would-purge',
      'old-failed': 'would-purge',
      'retry-waiting': 'skipped',
      lagging: 'skipped',
    });
  });

  it('purges the finished workflows older than the cutoff (a, never a.b; upstream, never the upstream/ folder), nothing that is not finished', async () => {
    const result = await runCli(['workflow', 'purge', '--finished-before', '1h'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n').sort();
    expect(lines).toEqual([
      // Its head, definition, snapshot and log; then an output, a stashed file and an overflow blob.
      'purged a (completed, finished 2025-01-01T00:00:03.000Z): 7 blobs, 2 task rows',
      'purged old-failed (failed, finished 2025-01-01T00:00:02.000Z): 4 blobs, 2 task rows',
      'purged upstream (completed, finished 2025-01-01T00:00:03.000Z): 7 blobs, 2 task rows',
    ]);
    expect(result.stderr).toMatch(/Purged 3 workflows finished before .* 18 blobs, 6 task rows; 2 skipped\./);
    expect(await exists('a')).toEqual(nothing);
    expect(await exists('upstream')).toEqual(nothing);
    expect(await exists('a.b')).toEqual(everything);
    expect((await deployment.store.listTasks({ workflowId: 'a' })).items).toEqual([]);
    expect((await deployment.store.listTasks({ workflowId: 'a.b' })).items).toHaveLength(2);
    for (const id of ['run', 'retry-waiting', 'lagging']) expect(await exists(id)).toMatchObject({ runtime: true, row: true });
    expect((await deployment.store.load('run'))?.runtime.status).toBe('running');

    const again = await runCli(['workflow', 'purge', '--finished-before', '1h', '--json'], { env: storage.env(prefix) });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ purged: 0, skipped: 2, failed: 0 });
  });

  it('says so when nothing finished before the cutoff', async () => {
    const result = await runCli(['workflow', 'purge', '--finished-before', '2020-01-01'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toBe(`No workflows finished before 2020-01-01T00:00:00.000Z in devstoreaccount1/${prefix}.`);
  });

  it('refuses a bad or missing cutoff as a usage error (exit 2, one line), and explains itself in --help', async () => {
    for (const args of [['--finished-before', 'soon'], ['--finished-before', '2999-01-01'], []]) {
      const result = await runCli(['workflow', 'purge', ...args], { env: storage.env(prefix) });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    const help = await runCli(['workflow', 'purge', '--help'], { env: storage.env(prefix) });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--finished-before');
    expect(help.stdout).toContain('--dry-run');
    expect(help.stdout).toMatch(/re-reads the workflow's\s+runtime/);
  });
});
