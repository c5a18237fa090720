import { afterEach, describe, expect, it } from './jest-globals';
import {
  createRuntime,
  encodeRuntime,
  reduce,
  validateWorkflow,
  type WorkflowDefinition,
  type WorkflowEvent,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { isJobqError } from '../errors';
import type {
  CoordinatorLease,
  PurgeResult,
  RerunRequest,
  TaskRow,
  WorkflowRequest,
  WorkflowStore,
  WorkflowSummary,
} from '../workflow-store';

/** A fresh, empty workflow store for one test, and how to dispose of it. */
export interface WorkflowStoreFixture {
  /**
   * An empty store (its own prefix). Its coordinator lease must renew often (every ≤ 1 s), so a
   * broken lease is noticed within the test.
   */
  store: WorkflowStore;
  /**
   * Makes `workflowId` look like a submit that crashed after writing the runtime: removes its
   * index row, keeping the runtime.
   */
  simulateOrphan(workflowId: string): Promise<void>;
  /**
   * Damages the stored runtime of `workflowId` so that it cannot be read (e.g. deletes a part of
   * it). Optional: adapters without a stored form leave it out, and its case is skipped.
   */
  damageRuntime?(workflowId: string): Promise<void>;
  /**
   * Makes the stored runtime of `workflowId` look written by a newer version of the adapter (an
   * unknown format version), the way such a version would leave it for older writers. Optional.
   */
  writeNewerFormat?(workflowId: string): Promise<void>;
  dispose(): Promise<void>;
}

/** Options of {@link describeWorkflowStoreContract}. */
export interface WorkflowStoreContractOptions {
  /** Per-test timeout. Default 30 s. */
  timeoutInMs?: number;
}

/** Second `n` after 2026-01-01T00:00:00Z, as ISO-8601. */
function at(n: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
}

function definitionOf(
  name: string,
  tasks: ReadonlyArray<Record<string, unknown>>,
  extra: Record<string, unknown> = {},
): WorkflowDefinition {
  const result = validateWorkflow({ name, ...extra, tasks: tasks.map((t) => ({ kwargs: { cmd: 'true' }, ...t })) });
  if (!result.ok) throw new Error(result.issues.map((i) => `${i.path}: ${i.message}`).join('\n'));
  return result.value;
}

/** `a` and `b` are roots on `default`; `c` (queue `gpu`) depends on `a`. */
const ABC = definitionOf('abc', [{ name: 'a' }, { name: 'b' }, { name: 'c', depends_on: ['a'], queue: 'gpu' }]);

function step(runtime: WorkflowRuntime, event: WorkflowEvent): WorkflowRuntime {
  return reduce(runtime, event).runtime;
}

function activate(runtime: WorkflowRuntime, n: number): WorkflowRuntime {
  return step(runtime, { type: 'activate', now: at(n) });
}

function finish(runtime: WorkflowRuntime, taskName: string, n: number, success = true, error: string | null = null): WorkflowRuntime {
  return step(runtime, { type: 'completion', now: at(n), taskName, attemptNo: null, success, outputRef: null, error });
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : `not a JobqError: ${String(error)}`;
  }
  return undefined;
}

async function allPages<T>(list: (token: string | undefined) => Promise<{ items: T[]; continuationToken: string | null }>): Promise<T[][]> {
  const pages: T[][] = [];
  let token: string | undefined;
  do {
    const page = await list(token);
    pages.push(page.items);
    token = page.continuationToken ?? undefined;
  } while (token !== undefined && pages.length < 100);
  return pages;
}

/** Every page of a listing, flattened. */
async function everything<T>(list: (token: string | undefined) => Promise<{ items: T[]; continuationToken: string | null }>): Promise<T[]> {
  return (await allPages(list)).flat();
}

/** A runtime of ABC run to its end at second `n` (a, b, c completed; `failA`: a failed, c upstream_failed). */
function finished(workflowId: string, n: number, failA = false): WorkflowRuntime {
  const r0 = createRuntime(ABC, { workflowId, now: at(1) });
  const r1 = finish(finish(activate(r0, 2), 'b', n - 1), 'a', failA ? n : n - 1, !failA, failA ? 'exit 1' : null);
  return failA ? r1 : finish(r1, 'c', n);
}

/** Creates a workflow and saves `runtime` over it (every row written). */
async function stored(store: WorkflowStore, runtime: WorkflowRuntime): Promise<void> {
  const { etag } = await store.create(createRuntime(ABC, { workflowId: runtime.workflowId, now: at(1) }), 'h');
  await store.save(runtime, etag);
}

function byName(rows: TaskRow[]): Record<string, TaskRow> {
  return Object.fromEntries(rows.map((r) => [r.taskName, r]));
}

/** Resolves when `signal` fires, or rejects after `withinMs`. */
function whenAborted(signal: AbortSignal, withinMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      resolve(signal.reason);
      return;
    }
    const timer = setTimeout(() => reject(new Error(`the signal did not fire within ${withinMs} ms`)), withinMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * The contract of {@link WorkflowStore}, as jest tests. Every adapter runs it with a factory that
 * opens a fresh, empty store (see {@link WorkflowStoreFixture}).
 */
export function describeWorkflowStoreContract(
  label: string,
  open: () => Promise<WorkflowStoreFixture>,
  options: WorkflowStoreContractOptions = {},
): void {
  describe(`WorkflowStore contract: ${label}`, () => {
    let fixture: WorkflowStoreFixture | undefined;
    const leases: CoordinatorLease[] = [];
    const fresh = async (): Promise<WorkflowStore> => {
      fixture = await open();
      return fixture.store;
    };
    afterEach(async () => {
      for (const lease of leases.splice(0)) await lease.release().catch(() => undefined);
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 30_000;

    describe('runtime', () => {
      it(
        'creates a runtime and loads it back equal, at the ETag create returned',
        async () => {
          const store = await fresh();
          const runtime = createRuntime(ABC, { workflowId: 'wf-create', now: at(1), outputsContainer: 'outs' });
          const created = await store.create(runtime, 'hash-1');
          expect(created.created).toBe(true);
          expect(typeof created.etag).toBe('string');
          const loaded = await store.load('wf-create');
          expect(loaded?.etag).toBe(created.etag);
          expect(loaded?.runtime).toEqual(runtime);
          expect(encodeRuntime(loaded!.runtime)).toBe(encodeRuntime(runtime));
        },
        timeout,
      );

      it(
        'gives null for a workflow that does not exist',
        async () => {
          const store = await fresh();
          expect(await store.load('nope')).toBeNull();
          expect(await store.getWorkflow('nope')).toBeNull();
        },
        timeout,
      );

      it(
        'treats a second create with the same definition hash as done: nothing written, created false',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-twice', now: at(1) });
          const first = await store.create(r0, 'hash-1');
          const r1 = activate(r0, 2);
          const saved = await store.save(r1, first.etag);
          const again = await store.create(r0, 'hash-1');
          expect(again).toEqual({ etag: saved.etag, created: false });
          const loaded = await store.load('wf-twice');
          expect(loaded?.runtime).toEqual(r1);
          expect(loaded?.etag).toBe(saved.etag);
          expect((await store.getWorkflow('wf-twice'))?.status).toBe('running');
        },
        timeout,
      );

      it(
        'refuses a create of an existing id with a different definition hash (conflict), changing nothing',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-clash', now: at(1) });
          const first = await store.create(r0, 'hash-1');
          const other = createRuntime(definitionOf('other', [{ name: 'x' }]), { workflowId: 'wf-clash', now: at(5) });
          let caught: unknown;
          try {
            await store.create(other, 'hash-2');
          } catch (error) {
            caught = error;
          }
          expect(isJobqError(caught, 'conflict')).toBe(true);
          expect((caught as Error).message).toContain('workflow "wf-clash" already exists with a different definition');
          const loaded = await store.load('wf-clash');
          expect(loaded?.etag).toBe(first.etag);
          expect(loaded?.runtime).toEqual(r0);
          expect((await store.getWorkflow('wf-clash'))?.definitionHash).toBe('hash-1');
        },
        timeout,
      );

      it(
        'overwrites an orphan runtime (a submit that crashed before its index row) on the next create',
        async () => {
          const store = await fresh();
          await store.create(createRuntime(ABC, { workflowId: 'wf-orphan', now: at(1) }), 'hash-1');
          await fixture!.simulateOrphan('wf-orphan');
          expect(await store.getWorkflow('wf-orphan')).toBeNull();
          const replacement = createRuntime(definitionOf('second', [{ name: 'x' }, { name: 'y', depends_on: ['x'] }]), {
            workflowId: 'wf-orphan',
            now: at(9),
          });
          const created = await store.create(replacement, 'hash-2');
          expect(created.created).toBe(true);
          const loaded = await store.load('wf-orphan');
          expect(loaded?.runtime).toEqual(replacement);
          expect(loaded?.etag).toBe(created.etag);
          const summary = await store.getWorkflow('wf-orphan');
          expect(summary).toMatchObject({ name: 'second', definitionHash: 'hash-2', status: 'pending' });
          const tasks = await store.listTasks({ workflowId: 'wf-orphan' });
          expect(tasks.items.map((t) => t.taskName).sort()).toEqual(expect.arrayContaining(['x', 'y']));
        },
        timeout,
      );

      it(
        'saves with the current ETag, returning a new one that load sees',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-save', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const r1 = activate(r0, 2);
          const saved = await store.save(r1, e0, { previous: r0 });
          expect(saved.etag).not.toBe(e0);
          expect(saved.rowsError).toBeNull();
          const loaded = await store.load('wf-save');
          expect(loaded).toEqual({ runtime: r1, etag: saved.etag });
          const r2 = finish(r1, 'a', 3);
          const saved2 = await store.save(r2, saved.etag, { previous: r1 });
          expect((await store.load('wf-save'))?.etag).toBe(saved2.etag);
        },
        timeout,
      );

      it(
        'loadIfChanged: unchanged at the current ETag (create, save or load), the runtime after a save, null when missing',
        async () => {
          const store = await fresh();
          if (!store.loadIfChanged) return;
          const r0 = createRuntime(ABC, { workflowId: 'wf-since', now: at(1) });
          const created = await store.create(r0, 'hash-1');
          expect(await store.loadIfChanged('wf-since', created.etag)).toBe('unchanged');
          const r1 = activate(r0, 2);
          const saved = await store.save(r1, created.etag);
          const changed = await store.loadIfChanged('wf-since', created.etag);
          expect(changed).not.toBe('unchanged');
          expect(changed).toEqual({ runtime: r1, etag: saved.etag });
          expect(await store.loadIfChanged('wf-since', saved.etag)).toBe('unchanged');
          const loaded = await store.load('wf-since');
          expect(await store.loadIfChanged('wf-since', loaded!.etag)).toBe('unchanged');
          const r2 = finish(r1, 'a', 3);
          await store.save(r2, loaded!.etag, { previous: r1 });
          expect(await store.loadIfChanged('wf-since', loaded!.etag)).toMatchObject({ runtime: r2 });
          expect(await store.loadIfChanged('nope', saved.etag)).toBeNull();
        },
        timeout,
      );

      it(
        'refuses a save with a stale ETag (conflict) and keeps the stored runtime',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-stale', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const r1 = activate(r0, 2);
          const { etag: e1 } = await store.save(r1, e0);
          const r2 = finish(r1, 'a', 3);
          expect(await codeOf(store.save(r2, e0))).toBe('conflict');
          expect(await store.load('wf-stale')).toEqual({ runtime: r1, etag: e1 });
          expect((await store.getWorkflow('wf-stale'))?.counts.completed).toBe(0);
          expect(await codeOf(store.save(createRuntime(ABC, { workflowId: 'wf-never', now: at(1) }), e0))).toBe('conflict');
        },
        timeout,
      );
    });

    describe('stored state', () => {
      it(
        'refuses a runtime whose stored state is damaged as corrupt, and leaves it (and its row) as they are',
        async () => {
          const store = await fresh();
          if (!fixture!.damageRuntime) return;
          const r0 = createRuntime(ABC, { workflowId: 'wf-damaged', now: at(1) });
          const { etag } = await store.create(r0, 'h');
          const r1 = activate(r0, 2);
          await store.save(r1, etag, { previous: r0 });
          await fixture!.damageRuntime('wf-damaged');
          expect(await codeOf(store.load('wf-damaged'))).toBe('corrupt');
          expect(await codeOf(store.load('wf-damaged'))).toBe('corrupt');
          expect((await store.getWorkflow('wf-damaged'))?.status).toBe('running');
        },
        timeout,
      );

      it(
        'refuses a runtime written by a newer version as unsupported, and never rewrites it',
        async () => {
          const store = await fresh();
          if (!fixture!.writeNewerFormat) return;
          const r0 = createRuntime(ABC, { workflowId: 'wf-newer', now: at(1) });
          const { etag } = await store.create(r0, 'h');
          await fixture!.writeNewerFormat('wf-newer');
          expect(await codeOf(store.load('wf-newer'))).toBe('unsupported');
          const r1 = activate(r0, 2);
          expect(await codeOf(store.save(r1, etag, { previous: r0 }))).toBe('conflict');
          expect(await codeOf(store.save(r1, etag))).toBe('conflict');
          expect(await codeOf(store.load('wf-newer'))).toBe('unsupported');
        },
        timeout,
      );
    });

    describe('index', () => {
      it(
        'reflects name, status, counts, queues and times of the last save',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-index', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'hash-x');
          const s0 = await store.getWorkflow('wf-index');
          expect(s0).toMatchObject({
            workflowId: 'wf-index',
            name: 'abc',
            status: 'pending',
            queues: ['default', 'gpu'],
            definitionHash: 'hash-x',
            createdAt: at(1),
            updatedAt: at(1),
            cancelRequestedAt: null,
            retryRequestedAt: null,
            error: null,
          } satisfies Partial<WorkflowSummary>);
          expect(s0?.counts).toMatchObject({ ready: 2, pending: 1, running: 0, completed: 0 });
          const r1 = activate(r0, 2);
          const { etag: e1 } = await store.save(r1, e0, { previous: r0 });
          expect(await store.getWorkflow('wf-index')).toMatchObject({
            status: 'running',
            updatedAt: at(2),
            createdAt: at(1),
            definitionHash: 'hash-x',
          });
          expect((await store.getWorkflow('wf-index'))?.counts).toMatchObject({ ready: 0, pending: 1, running: 2 });
          let r = r1;
          let etag = e1;
          for (const [name, n] of [
            ['a', 3],
            ['b', 4],
            ['c', 5],
          ] as const) {
            const next = finish(r, name, n);
            etag = (await store.save(next, etag, { previous: r })).etag;
            r = next;
          }
          const done = await store.getWorkflow('wf-index');
          expect(done).toMatchObject({ status: 'completed', updatedAt: at(5) });
          expect(done?.counts).toMatchObject({ completed: 3, running: 0, pending: 0, ready: 0 });
        },
        timeout,
      );

      it(
        "names a failed workflow's failed task and its error",
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-fail', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const r1 = activate(r0, 2);
          const r2 = finish(finish(r1, 'a', 3, false, 'exit code 3'), 'b', 4);
          await store.save(r2, e0);
          const summary = await store.getWorkflow('wf-fail');
          expect(summary?.status).toBe('failed');
          expect(summary?.error).toContain('a');
          expect(summary?.error).toContain('exit code 3');
          expect(summary?.counts).toMatchObject({ failed: 1, upstream_failed: 1, completed: 1 });
        },
        timeout,
      );

      it(
        'records cancel and retry requests, which neither each other nor saves (even from an older copy) erase',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-req', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const older = await store.load('wf-req');
          await store.requestCancel('wf-req', at(10));
          await store.requestRetry('wf-req', at(11));
          // The coordinator saves from the copy it loaded before the requests.
          const r1 = activate(older!.runtime, 2);
          const { etag: e1 } = await store.save(r1, e0, { previous: older!.runtime });
          expect(await store.getWorkflow('wf-req')).toMatchObject({ cancelRequestedAt: at(10), retryRequestedAt: at(11) });
          await store.requestCancel('wf-req', at(12));
          expect(await store.getWorkflow('wf-req')).toMatchObject({ cancelRequestedAt: at(12), retryRequestedAt: at(11) });
          await store.save(finish(r1, 'a', 13), e1, { previous: r1 });
          expect(await store.getWorkflow('wf-req')).toMatchObject({ cancelRequestedAt: at(12), retryRequestedAt: at(11) });
          expect(await codeOf(store.requestCancel('wf-unknown', at(1)))).toBe('not-found');
          expect(await codeOf(store.requestRetry('wf-unknown', at(1)))).toBe('not-found');
          expect(await store.getWorkflow('wf-unknown')).toBeNull();
        },
        timeout,
      );

      it(
        'shows pending while a retry request is not yet applied',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-retry', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const failed = finish(finish(activate(r0, 2), 'a', 3, false, 'boom'), 'b', 4);
          const { etag: e1 } = await store.save(failed, e0);
          expect((await store.getWorkflow('wf-retry'))?.status).toBe('failed');
          await store.requestRetry('wf-retry', at(20));
          expect(await store.getWorkflow('wf-retry')).toMatchObject({ status: 'pending', retryRequestedAt: at(20), retryAppliedAt: null });
          expect((await store.listWorkflows({ status: ['pending'] })).items.map((w) => w.workflowId)).toEqual(['wf-retry']);
          expect((await store.listWorkflows({ status: ['failed'] })).items).toEqual([]);
          expect((await store.countWorkflows()).pending).toBe(1);
          const retried = step(failed, { type: 'retry', now: at(21), requestedAt: at(20) });
          await store.save(retried, e1, { previous: failed });
          expect(await store.getWorkflow('wf-retry')).toMatchObject({
            status: 'running',
            retryRequestedAt: at(20),
            retryAppliedAt: at(20),
          });
        },
        timeout,
      );

      it(
        'sets a workflow aside as corrupt with its reason, for good: a retry request does not show it pending',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-corrupt', now: at(1) });
          await store.create(r0, 'h');
          await store.markCorrupt('wf-corrupt', 'the runtime cannot be read: not JSON', at(5));
          await store.requestRetry('wf-corrupt', at(6));
          const summary = await store.getWorkflow('wf-corrupt');
          expect(summary).toMatchObject({ status: 'corrupt', name: 'abc', updatedAt: at(5) });
          expect(summary?.error).toContain('the runtime cannot be read: not JSON');
          expect((await store.listWorkflows({ status: ['corrupt'] })).items.map((w) => w.workflowId)).toEqual(['wf-corrupt']);
          expect((await store.listWorkflows({ status: ['pending', 'running', 'cancelling'] })).items).toEqual([]);
          expect((await store.countWorkflows()).corrupt).toBe(1);
          // A row for an id whose submit never wrote one.
          await store.markCorrupt('wf-orphan', 'no runtime', at(7));
          expect((await store.getWorkflow('wf-orphan'))?.status).toBe('corrupt');
        },
        timeout,
      );

      it(
        'lists workflows by status, newest first, in pages',
        async () => {
          const store = await fresh();
          // w1..w6 created at 1..6; the odd ones activated later (at 20 - i), so their order differs.
          const expectedRecent: Array<[string, string]> = [];
          for (let i = 1; i <= 6; i++) {
            const id = `w${i}`;
            const r0 = createRuntime(ABC, { workflowId: id, now: at(i) });
            const { etag } = await store.create(r0, 'h');
            if (i % 2 === 1) {
              await store.save(activate(r0, 20 - i), etag, { previous: r0 });
              expectedRecent.push([id, at(20 - i)]);
            } else {
              expectedRecent.push([id, at(i)]);
            }
          }
          expectedRecent.sort((x, y) => (x[1] < y[1] ? 1 : -1));
          const recent = await store.listWorkflows({ recent: true });
          expect(recent.items.map((w) => w.workflowId)).toEqual(expectedRecent.map(([id]) => id));
          expect(recent.continuationToken).toBeNull();

          const recentPages = await allPages((token) =>
            store.listWorkflows({ recent: true, limit: 2, ...(token ? { continuationToken: token } : {}) }),
          );
          expect(recentPages.every((p) => p.length <= 2)).toBe(true);
          expect(recentPages.flat().map((w) => w.workflowId)).toEqual(expectedRecent.map(([id]) => id));

          const keyPages = await allPages((token) => store.listWorkflows({ limit: 2, ...(token ? { continuationToken: token } : {}) }));
          expect(keyPages.every((p) => p.length <= 2)).toBe(true);
          expect(
            keyPages
              .flat()
              .map((w) => w.workflowId)
              .sort(),
          ).toEqual(['w1', 'w2', 'w3', 'w4', 'w5', 'w6']);

          const running = await store.listWorkflows({ status: ['running'] });
          expect(running.items.map((w) => w.workflowId).sort()).toEqual(['w1', 'w3', 'w5']);
          const runningPages = await allPages((token) =>
            store.listWorkflows({ status: ['running'], limit: 1, ...(token ? { continuationToken: token } : {}) }),
          );
          expect(
            runningPages
              .flat()
              .map((w) => w.workflowId)
              .sort(),
          ).toEqual(['w1', 'w3', 'w5']);
          const pendingRecent = await store.listWorkflows({ status: ['pending'], recent: true });
          expect(pendingRecent.items.map((w) => w.workflowId)).toEqual(['w6', 'w4', 'w2']);
          expect((await store.listWorkflows({ status: ['completed'] })).items).toEqual([]);
          expect(await store.countWorkflows()).toMatchObject({ running: 3, pending: 3, completed: 0, failed: 0 });
        },
        timeout,
      );
    });

    describe('requests', () => {
      it(
        'records each request in the request list until it is cleared; a newer request keeps it',
        async () => {
          const store = await fresh();
          await store.create(createRuntime(ABC, { workflowId: 'wf-a', now: at(1) }), 'h');
          await store.create(createRuntime(ABC, { workflowId: 'wf-b', now: at(1) }), 'h');
          const requests = async (): Promise<WorkflowRequest[]> =>
            (await store.listRequests()).items.sort((x, y) => (x.workflowId < y.workflowId ? -1 : 1));
          expect(await requests()).toEqual([]);
          await store.requestCancel('wf-a', at(10));
          const first = await requests();
          expect(first).toEqual([{ workflowId: 'wf-a', cancelRequestedAt: at(10), retryRequestedAt: null, etag: expect.any(String) }]);
          await store.requestRetry('wf-a', at(11));
          await store.requestRetry('wf-b', at(12));
          const second = await requests();
          expect(second).toEqual([
            { workflowId: 'wf-a', cancelRequestedAt: at(10), retryRequestedAt: at(11), etag: expect.any(String) },
            { workflowId: 'wf-b', cancelRequestedAt: null, retryRequestedAt: at(12), etag: expect.any(String) },
          ]);
          // Cleared at the version listed before the retry: the retry keeps it.
          expect(await store.clearRequest('wf-a', first[0]!.etag)).toBe(false);
          expect((await requests()).map((r) => r.workflowId)).toEqual(['wf-a', 'wf-b']);
          expect(await store.clearRequest('wf-a', second[0]!.etag)).toBe(true);
          expect(await store.clearRequest('wf-a', second[0]!.etag)).toBe(false);
          expect((await requests()).map((r) => r.workflowId)).toEqual(['wf-b']);
          // The index row keeps the request times; request rows are not workflows.
          expect(await store.getWorkflow('wf-a')).toMatchObject({ cancelRequestedAt: at(10), retryRequestedAt: at(11) });
          expect((await store.listWorkflows()).items.map((w) => w.workflowId).sort()).toEqual(['wf-a', 'wf-b']);
          const counts = await store.countWorkflows();
          expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(2);
          // A request for an unknown workflow records nothing.
          expect(await codeOf(store.requestRetry('wf-nope', at(13)))).toBe('not-found');
          expect(await codeOf(store.requestCancel('wf-nope', at(13)))).toBe('not-found');
          expect((await requests()).map((r) => r.workflowId)).toEqual(['wf-b']);
          // A request after a clear is listed again.
          await store.requestCancel('wf-a', at(14));
          expect((await requests()).map((r) => [r.workflowId, r.cancelRequestedAt])).toEqual([
            ['wf-a', at(14)],
            ['wf-b', null],
          ]);
        },
        timeout,
      );

      it(
        'lists requests in pages',
        async () => {
          const store = await fresh();
          for (const id of ['r1', 'r2', 'r3']) {
            await store.create(createRuntime(ABC, { workflowId: id, now: at(1) }), 'h');
            await store.requestCancel(id, at(5));
          }
          const pages = await allPages((token) => store.listRequests({ limit: 1, ...(token ? { continuationToken: token } : {}) }));
          expect(pages.every((p) => p.length <= 1)).toBe(true);
          expect(
            pages
              .flat()
              .map((r) => r.workflowId)
              .sort(),
          ).toEqual(['r1', 'r2', 'r3']);
          expect(await codeOf(store.listRequests({ continuationToken: 'garbage' }))).toBe('invalid-argument');
          expect(await codeOf(store.listRequests({ limit: 0 }))).toBe('invalid-argument');
        },
        timeout,
      );
    });

    describe('re-run requests', () => {
      const byId = (list: RerunRequest[]): RerunRequest[] =>
        [...list].sort((x, y) => (x.workflowId + '~' + x.requestId < y.workflowId + '~' + y.requestId ? -1 : 1));

      it(
        'records each request as a record of its own: two made at once are both listed, whatever their times; cleared one by one',
        async () => {
          const store = await fresh();
          for (const id of ['x', 'x.y', 'x-y', 'w']) await store.create(createRuntime(ABC, { workflowId: id, now: at(1) }), 'h');
          // Two requests for one workflow, made at the same instant, written at once.
          await Promise.all([
            store.requestRerun({ workflowId: 'x', requestId: 'r1', taskName: 'a', downstream: true, requestedAt: at(10) }),
            store.requestRerun({ workflowId: 'x', requestId: 'r2', taskName: 'c', downstream: false, requestedAt: at(10) }),
          ]);
          await store.requestRerun({
            workflowId: 'x.y',
            requestId: 'r1',
            taskName: 'träin / gpu #1',
            downstream: false,
            requestedAt: at(11),
          });
          await store.requestRerun({ workflowId: 'x-y', requestId: 'Z9_-', taskName: 'b', downstream: true, requestedAt: at(9) });
          const all = byId((await store.listReruns()).items);
          // In key order: workflow id, then `~` (after every character of an id), then request id.
          expect(all).toEqual([
            { workflowId: 'x-y', requestId: 'Z9_-', taskName: 'b', downstream: true, requestedAt: at(9), etag: expect.any(String) },
            {
              workflowId: 'x.y',
              requestId: 'r1',
              taskName: 'träin / gpu #1',
              downstream: false,
              requestedAt: at(11),
              etag: expect.any(String),
            },
            { workflowId: 'x', requestId: 'r1', taskName: 'a', downstream: true, requestedAt: at(10), etag: expect.any(String) },
            { workflowId: 'x', requestId: 'r2', taskName: 'c', downstream: false, requestedAt: at(10), etag: expect.any(String) },
          ]);
          // One workflow's, and only its (never x.y's or x-y's).
          expect(byId((await store.listReruns({ workflowId: 'x' })).items).map((r) => r.requestId)).toEqual(['r1', 'r2']);
          expect((await store.listReruns({ workflowId: 'x.y' })).items.map((r) => r.requestId)).toEqual(['r1']);
          expect((await store.listReruns({ workflowId: 'w' })).items).toEqual([]);
          // Neither the index row nor the cancel/retry request list is touched.
          expect(await store.getWorkflow('x')).toMatchObject({ status: 'pending', cancelRequestedAt: null, retryRequestedAt: null });
          expect((await store.listRequests()).items).toEqual([]);
          // The same id again is a conflict; an unknown workflow, a bad id, an empty task or a bad time record nothing.
          expect(
            await codeOf(store.requestRerun({ workflowId: 'x', requestId: 'r1', taskName: 'b', downstream: false, requestedAt: at(12) })),
          ).toBe('conflict');
          expect(
            await codeOf(
              store.requestRerun({ workflowId: 'nope', requestId: 'r3', taskName: 'a', downstream: false, requestedAt: at(12) }),
            ),
          ).toBe('not-found');
          for (const requestId of ['', '_x', 'a/b', 'a~b', 'x'.repeat(65)]) {
            expect(
              await codeOf(store.requestRerun({ workflowId: 'x', requestId, taskName: 'a', downstream: false, requestedAt: at(12) })),
            ).toBe('invalid-argument');
          }
          expect(
            await codeOf(store.requestRerun({ workflowId: 'x', requestId: 'r4', taskName: '', downstream: false, requestedAt: at(12) })),
          ).toBe('invalid-argument');
          expect(
            await codeOf(store.requestRerun({ workflowId: 'x', requestId: 'r5', taskName: 'a', downstream: false, requestedAt: 'soon' })),
          ).toBe('invalid-argument');
          expect(byId((await store.listReruns()).items).map((r) => `${r.workflowId}/${r.requestId}/${r.taskName}`)).toEqual(
            all.map((r) => `${r.workflowId}/${r.requestId}/${r.taskName}`),
          );
          // Cleared one by one, at the version listed.
          expect(await store.clearRerun('x', 'r1', all[2]!.etag)).toBe(true);
          expect(await store.clearRerun('x', 'r1', all[2]!.etag)).toBe(false);
          expect((await store.listReruns({ workflowId: 'x' })).items.map((r) => r.requestId)).toEqual(['r2']);
          expect(await store.clearRerun('x', 'r2', '*')).toBe(true);
          expect(await store.clearRerun('x', 'never', '*')).toBe(false);
          expect((await store.listReruns()).items.map((r) => r.workflowId).sort()).toEqual(['x-y', 'x.y']);
          // Re-run records are not workflows.
          expect((await store.listWorkflows()).items.map((w) => w.workflowId).sort()).toEqual(['w', 'x', 'x-y', 'x.y']);
        },
        timeout,
      );

      it(
        'lists re-run requests in pages, of all workflows or of one',
        async () => {
          const store = await fresh();
          for (const id of ['p1', 'p2']) {
            await store.create(createRuntime(ABC, { workflowId: id, now: at(1) }), 'h');
            for (const requestId of ['a', 'b', 'c'])
              await store.requestRerun({ workflowId: id, requestId, taskName: 'a', downstream: false, requestedAt: at(5) });
          }
          const pages = await allPages((token) => store.listReruns({ limit: 2, ...(token ? { continuationToken: token } : {}) }));
          expect(pages.every((p) => p.length <= 2)).toBe(true);
          expect(pages.flat().map((r) => `${r.workflowId}/${r.requestId}`)).toEqual(['p1/a', 'p1/b', 'p1/c', 'p2/a', 'p2/b', 'p2/c']);
          const one = await allPages((token) =>
            store.listReruns({ workflowId: 'p2', limit: 1, ...(token ? { continuationToken: token } : {}) }),
          );
          expect(one.flat().map((r) => `${r.workflowId}/${r.requestId}`)).toEqual(['p2/a', 'p2/b', 'p2/c']);
          expect(await codeOf(store.listReruns({ continuationToken: 'garbage' }))).toBe('invalid-argument');
          expect(await codeOf(store.listReruns({ limit: 0 }))).toBe('invalid-argument');
          expect(await codeOf(store.listReruns({ workflowId: 'not/an id' }))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'a purge leaves a workflow with a re-run its runtime has not applied, and deletes the records with the workflow once it has',
        async () => {
          const store = await fresh();
          await stored(store, finished('done', 5));
          await store.requestRerun({ workflowId: 'done', requestId: 'q1', taskName: 'b', downstream: false, requestedAt: at(10) });
          expect(await store.purge('done')).toMatchObject({
            outcome: 'skipped',
            reason: expect.stringContaining('re-run of task "b" was requested at'),
          });
          // The runtime applies it (b runs again and completes), and the record stays (not yet cleared).
          const loaded = (await store.load('done'))!;
          const rerun = step(loaded.runtime, { type: 'rerun', now: at(11), requestId: 'q1', taskName: 'b', downstream: false });
          const again = finish(rerun, 'b', 12);
          expect(again.status).toBe('completed');
          await store.save(again, loaded.etag);
          expect((await store.purge('done')).outcome).toBe('purged');
          expect((await store.listReruns()).items).toEqual([]);
        },
        timeout,
      );
    });

    describe('paged filters', () => {
      it(
        'lists by saved status, last update and finish time, in pages; a retry waiting makes no finished workflow pending there',
        async () => {
          const store = await fresh();
          await store.create(createRuntime(ABC, { workflowId: 'p1', now: at(1) }), 'h'); // never activated
          const r0 = createRuntime(ABC, { workflowId: 'r1', now: at(1) });
          await store.save(activate(r0, 2), (await store.create(r0, 'h')).etag); // running since 2
          await stored(store, finished('f1', 4, true)); // failed at 4
          await store.requestRetry('f1', at(20));
          await stored(store, finished('c1', 6)); // completed at 6
          await store.create(createRuntime(ABC, { workflowId: 'x1', now: at(1) }), 'h');
          await store.markCorrupt('x1', 'cannot be read', at(8)); // corrupt at 8
          const ids = async (filter: Parameters<WorkflowStore['listWorkflows']>[0]): Promise<string[]> =>
            (await everything((token) => store.listWorkflows({ ...filter, ...(token ? { continuationToken: token } : {}) })))
              .map((w) => w.workflowId)
              .sort();

          expect(await ids({ savedStatus: ['pending'] })).toEqual(['p1']);
          expect(await ids({ status: ['pending'] })).toEqual(['f1', 'p1']);
          const failed = await store.listWorkflows({ savedStatus: ['failed'] });
          expect(failed.items.map((w) => [w.workflowId, w.status])).toEqual([['f1', 'pending']]);
          expect(await ids({ savedStatus: ['running', 'cancelling'] })).toEqual(['r1']);
          expect(await ids({ savedStatus: ['completed', 'corrupt'], limit: 1 })).toEqual(['c1', 'x1']);
          expect(await ids({ updatedBefore: at(3) })).toEqual(['p1', 'r1']);
          expect(await ids({ savedStatus: ['running'], updatedBefore: at(3) })).toEqual(['r1']);
          expect(await ids({ savedStatus: ['running'], updatedBefore: at(2) })).toEqual([]);
          expect(await ids({ finishedBefore: at(7) })).toEqual(['c1', 'f1']);
          expect(await ids({ finishedBefore: at(9), limit: 1 })).toEqual(['c1', 'f1', 'x1']);
          expect(await ids({ finishedBefore: at(4) })).toEqual([]);
          expect(await ids({ finishedBefore: at(9), savedStatus: ['completed'] })).toEqual(['c1']);
          expect(await ids({ finishedBefore: at(9), status: ['pending'] })).toEqual(['f1']);
          expect((await store.getWorkflow('c1'))?.finishedAt).toBe(at(6));
          expect((await store.getWorkflow('x1'))?.finishedAt).toBe(at(8));
          expect((await store.getWorkflow('p1'))?.finishedAt).toBeNull();
          expect((await store.listWorkflows({ savedStatus: [] })).items).toEqual([]);
          expect(await codeOf(store.listWorkflows({ finishedBefore: 'yesterday' }))).toBe('invalid-argument');
          expect(await codeOf(store.listWorkflows({ updatedBefore: 'soon' }))).toBe('invalid-argument');
        },
        timeout,
      );
    });

    describe('purge', () => {
      it(
        "purges a finished workflow — runtime, task rows, request, index row last — and nothing of its neighbour's (a, never a.b)",
        async () => {
          const store = await fresh();
          await stored(store, finished('a', 5));
          await stored(store, finished('a.b', 5));
          await stored(store, finished('upstream', 5));
          await store.requestCancel('a', at(9)); // a request on a finished workflow goes too
          await store.requestCancel('a.b', at(9));
          const seen: string[] = [];
          const result = await store.purge('a', {
            beforeIndexRow: async () => {
              seen.push(
                `runtime ${(await store.load('a')) === null ? 'gone' : 'there'}, index row ${(await store.getWorkflow('a'))?.status}`,
              );
            },
          });
          expect(result).toEqual({
            workflowId: 'a',
            outcome: 'purged',
            status: 'completed',
            finishedAt: at(5),
            reason: null,
            blobs: expect.any(Number),
            taskRows: 3,
          });
          expect(result.blobs).toBeGreaterThanOrEqual(1);
          expect(seen).toEqual(['runtime gone, index row completed']);
          expect(await store.load('a')).toBeNull();
          expect(await store.getWorkflow('a')).toBeNull();
          expect((await store.listTasks({ workflowId: 'a' })).items).toEqual([]);
          expect((await store.listRequests()).items.map((r) => r.workflowId)).toEqual(['a.b']);
          expect((await store.listWorkflows()).items.map((w) => w.workflowId).sort()).toEqual(['a.b', 'upstream']);
          for (const id of ['a.b', 'upstream']) {
            expect((await store.load(id))?.runtime).toEqual(finished(id, 5));
            expect((await store.listTasks({ workflowId: id })).items).toHaveLength(3);
          }
          expect((await store.purge('upstream')).outcome).toBe('purged');
          expect((await store.load('a.b'))?.runtime).toEqual(finished('a.b', 5));
          expect((await store.purge('a')).outcome).toBe('not-found');
        },
        timeout,
      );

      it(
        'never deletes what is not finished: running, never activated, a retry waiting, finished after the cutoff; a dry run deletes nothing',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'run', now: at(1) });
          await store.save(activate(r0, 2), (await store.create(r0, 'h')).etag);
          await store.create(createRuntime(ABC, { workflowId: 'new', now: at(1) }), 'h');
          await stored(store, finished('fail', 4, true));
          await store.requestRetry('fail', at(10));
          await stored(store, finished('done', 5));
          const before = new Map<string, unknown>();
          for (const id of ['run', 'new', 'fail', 'done']) before.set(id, await store.load(id));

          expect(await store.purge('run')).toMatchObject({
            outcome: 'skipped',
            status: 'running',
            reason: expect.stringContaining('not finished'),
          });
          expect(await store.purge('new')).toMatchObject({
            outcome: 'skipped',
            status: 'pending',
            reason: expect.stringContaining('not finished'),
          });
          expect(await store.purge('fail')).toMatchObject({
            outcome: 'skipped',
            status: 'failed',
            reason: expect.stringContaining('retry'),
          });
          expect(await store.purge('done', { finishedBefore: at(5) })).toMatchObject({
            outcome: 'skipped',
            status: 'completed',
            reason: expect.stringContaining(at(5)),
          });
          expect(await store.purge('done', { finishedBefore: at(6), dryRun: true })).toEqual({
            workflowId: 'done',
            outcome: 'would-purge',
            status: 'completed',
            finishedAt: at(5),
            reason: null,
            blobs: 0,
            taskRows: 3,
          } satisfies PurgeResult);
          for (const id of ['run', 'new', 'fail', 'done']) {
            expect(await store.load(id)).toEqual(before.get(id));
            expect(await store.getWorkflow(id)).not.toBeNull();
            expect((await store.listTasks({ workflowId: id })).items).toHaveLength(3);
          }
          expect((await store.listRequests()).items.map((r) => r.workflowId)).toEqual(['fail']);
          expect((await store.purge('done', { finishedBefore: at(6) })).outcome).toBe('purged');
          expect(await store.getWorkflow('done')).toBeNull();
        },
        timeout,
      );

      it(
        'purges a workflow the coordinator set aside as corrupt on its index row',
        async () => {
          const store = await fresh();
          await store.create(createRuntime(ABC, { workflowId: 'bad', now: at(1) }), 'h');
          await store.markCorrupt('bad', 'an event could not be applied', at(7));
          expect(await store.purge('bad', { finishedBefore: at(7) })).toMatchObject({ outcome: 'skipped', status: 'corrupt' });
          expect(await store.purge('bad', { finishedBefore: at(8) })).toMatchObject({
            outcome: 'purged',
            status: 'corrupt',
            finishedAt: at(7),
          });
          expect(await store.getWorkflow('bad')).toBeNull();
          expect(await store.load('bad')).toBeNull();
        },
        timeout,
      );

      it(
        'keeps the index row when beforeIndexRow fails, and a second purge finishes the workflow',
        async () => {
          const store = await fresh();
          await stored(store, finished('half', 5));
          let caught: unknown;
          try {
            await store.purge('half', {
              beforeIndexRow: () => Promise.reject(new Error('the outputs account is down')),
            });
          } catch (error) {
            caught = error;
          }
          expect((caught as Error | undefined)?.message).toBe('the outputs account is down');
          expect(await store.load('half')).toBeNull();
          expect(await store.getWorkflow('half')).toMatchObject({ status: 'completed', finishedAt: at(5) });
          expect((await store.listWorkflows({ finishedBefore: at(6) })).items.map((w) => w.workflowId)).toEqual(['half']);
          let hooked = 0;
          const again = await store.purge('half', {
            finishedBefore: at(6),
            beforeIndexRow: () => {
              hooked++;
              return Promise.resolve();
            },
          });
          expect(again).toMatchObject({ outcome: 'purged', status: 'completed', blobs: 0 });
          expect(hooked).toBe(1);
          expect(await store.getWorkflow('half')).toBeNull();
          expect((await store.listTasks({ workflowId: 'half' })).items).toEqual([]);
        },
        timeout,
      );

      it(
        'says not-found for an unknown workflow and refuses a bad id or time',
        async () => {
          const store = await fresh();
          expect(await store.purge('nope')).toEqual({
            workflowId: 'nope',
            outcome: 'not-found',
            status: null,
            finishedAt: null,
            reason: null,
            blobs: 0,
            taskRows: 0,
          } satisfies PurgeResult);
          expect(await codeOf(store.purge('../x'))).toBe('invalid-argument');
          expect(await codeOf(store.purge('x', { finishedBefore: 'soon' }))).toBe('invalid-argument');
        },
        timeout,
      );
    });

    describe('task rows', () => {
      it(
        'lists the rows of a workflow with status, queue and attempt',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-rows', now: at(1) });
          const { etag } = await store.create(r0, 'h');
          await store.create(createRuntime(ABC, { workflowId: 'wf-other', now: at(1) }), 'h');
          const rows = byName((await store.listTasks({ workflowId: 'wf-rows' })).items);
          expect(Object.keys(rows).sort()).toEqual(['a', 'b', 'c']);
          expect(rows.a).toEqual({
            workflowId: 'wf-rows',
            taskName: 'a',
            status: 'ready',
            queue: 'default',
            attemptNo: 0,
            updatedAt: at(1),
            error: null,
          } satisfies TaskRow);
          expect(rows.c).toMatchObject({ status: 'pending', queue: 'gpu' });
          const failed = finish(activate(r0, 2), 'a', 3, false, 'exit 1');
          await store.save(failed, etag);
          const after = byName((await store.listTasks({ workflowId: 'wf-rows' })).items);
          expect(after.a).toMatchObject({ status: 'failed', attemptNo: 1, error: 'exit 1', updatedAt: at(3) });
          expect(after.b).toMatchObject({ status: 'running', attemptNo: 1 });
          expect(after.c).toMatchObject({ status: 'upstream_failed' });
        },
        timeout,
      );

      it(
        'lists by name prefix as a key range, "/" and "%" included',
        async () => {
          const store = await fresh();
          const names = ['prep/a', 'prep/b', 'prepx', 'train/a', 'prep%x', 'pre'];
          const def = definitionOf(
            'prefixes',
            names.map((name) => ({ name })),
          );
          await store.create(createRuntime(def, { workflowId: 'wf-prefix', now: at(1) }), 'h');
          await store.create(createRuntime(def, { workflowId: 'wf-prefix2', now: at(1) }), 'h');
          const list = async (namePrefix: string) =>
            (await store.listTasks({ workflowId: 'wf-prefix', namePrefix })).items.map((t) => t.taskName).sort();
          expect(await list('prep/')).toEqual(['prep/a', 'prep/b']);
          expect(await list('prep')).toEqual(['prep%x', 'prep/a', 'prep/b', 'prepx']);
          expect(await list('train/')).toEqual(['train/a']);
          expect(await list('prep%')).toEqual(['prep%x']);
          expect(await list('zzz')).toEqual([]);
          expect(await codeOf(store.listTasks({ namePrefix: 'prep/' }))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'lists by status and by queue across workflows',
        async () => {
          const store = await fresh();
          for (const id of ['x1', 'x2']) {
            const r0 = createRuntime(ABC, { workflowId: id, now: at(1) });
            const { etag } = await store.create(r0, 'h');
            if (id === 'x1') await store.save(activate(r0, 2), etag);
          }
          const running = (await store.listTasks({ status: ['running'] })).items.map((t) => `${t.workflowId}:${t.taskName}`).sort();
          expect(running).toEqual(['x1:a', 'x1:b']);
          const readyOrRunning = (await store.listTasks({ status: ['ready', 'running'] })).items
            .map((t) => `${t.workflowId}:${t.taskName}`)
            .sort();
          expect(readyOrRunning).toEqual(['x1:a', 'x1:b', 'x2:a', 'x2:b']);
          const gpu = (await store.listTasks({ queue: 'gpu' })).items.map((t) => `${t.workflowId}:${t.taskName}`).sort();
          expect(gpu).toEqual(['x1:c', 'x2:c']);
          const gpuPending = (await store.listTasks({ queue: 'gpu', status: ['pending'], workflowId: 'x2' })).items.map((t) => t.taskName);
          expect(gpuPending).toEqual(['c']);
        },
        timeout,
      );

      it(
        'pages task rows with a small limit',
        async () => {
          const store = await fresh();
          const def = definitionOf(
            'many',
            Array.from({ length: 7 }, (_, i) => ({ name: `t${i}` })),
          );
          await store.create(createRuntime(def, { workflowId: 'wf-pages', now: at(1) }), 'h');
          const pages = await allPages((token) =>
            store.listTasks({ workflowId: 'wf-pages', limit: 3, ...(token ? { continuationToken: token } : {}) }),
          );
          expect(pages.every((p) => p.length <= 3)).toBe(true);
          expect(
            pages
              .flat()
              .map((t) => t.taskName)
              .sort(),
          ).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
          expect(await codeOf(store.listTasks({ workflowId: 'wf-pages', continuationToken: 'garbage' }))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'writes only the changed task rows when given the previous runtime, all of them without',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-delta', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const r1 = activate(r0, 2); // a, b dispatched; c untouched
          const { etag: e1 } = await store.save(r1, e0, { previous: r0 });
          let rows = byName((await store.listTasks({ workflowId: 'wf-delta' })).items);
          expect([rows.a?.updatedAt, rows.b?.updatedAt, rows.c?.updatedAt]).toEqual([at(2), at(2), at(1)]);
          const r2 = finish(r1, 'a', 3); // a completed, c dispatched; b untouched
          const { etag: e2 } = await store.save(r2, e1, { previous: r1 });
          rows = byName((await store.listTasks({ workflowId: 'wf-delta' })).items);
          expect([rows.a?.updatedAt, rows.b?.updatedAt, rows.c?.updatedAt]).toEqual([at(3), at(2), at(3)]);
          expect([rows.a?.status, rows.b?.status, rows.c?.status]).toEqual(['completed', 'running', 'running']);
          const r3 = finish(r2, 'b', 4);
          await store.save(r3, e2); // no previous: every row
          rows = byName((await store.listTasks({ workflowId: 'wf-delta' })).items);
          expect([rows.a?.updatedAt, rows.b?.updatedAt, rows.c?.updatedAt]).toEqual([at(4), at(4), at(4)]);
        },
        timeout,
      );

      it(
        'defers the task rows of a save to writeTaskRows, and writes deferred rows with a later save',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-defer', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          const r1 = activate(r0, 2); // a, b running
          const { etag: e1, rowsError } = await store.save(r1, e0, { previous: r0, deferTaskRows: true });
          expect(rowsError).toBeNull();
          // The index row is written; the task rows are not.
          expect(await store.getWorkflow('wf-defer')).toMatchObject({ status: 'running', updatedAt: at(2) });
          let rows = byName((await store.listTasks({ workflowId: 'wf-defer' })).items);
          expect([rows.a?.status, rows.b?.status, rows.c?.status]).toEqual(['ready', 'ready', 'pending']);
          expect(await store.writeTaskRows(r1, ['a', 'no-such-task'])).toEqual({ failed: [], error: null });
          rows = byName((await store.listTasks({ workflowId: 'wf-defer' })).items);
          expect([rows.a?.status, rows.b?.status]).toEqual(['running', 'ready']);
          // A save that writes its rows takes the deferred ones along (b), from its own runtime.
          const r2 = finish(r1, 'a', 3); // a completed, c running; b unchanged since r1
          await store.save(r2, e1, { previous: r1, alsoTaskRows: ['b'] });
          rows = byName((await store.listTasks({ workflowId: 'wf-defer' })).items);
          expect([rows.a?.status, rows.b?.status, rows.c?.status]).toEqual(['completed', 'running', 'running']);
          expect(rows.b?.updatedAt).toBe(at(3));
          expect(await store.writeTaskRows(r2, [])).toEqual({ failed: [], error: null });
        },
        timeout,
      );

      it(
        'with deferIndexRow too, a save writes the runtime only; writeIndexRow writes the index row, leaving the request timestamps alone',
        async () => {
          const store = await fresh();
          const r0 = createRuntime(ABC, { workflowId: 'wf-defer-index', now: at(1) });
          const { etag: e0 } = await store.create(r0, 'h');
          await store.requestCancel('wf-defer-index', at(1));
          const r1 = activate(r0, 2);
          const { etag: e1, rowsError } = await store.save(r1, e0, { previous: r0, deferTaskRows: true, deferIndexRow: true });
          expect(rowsError).toBeNull();
          expect((await store.load('wf-defer-index'))?.runtime.updatedAt).toBe(at(2));
          // Neither the index row nor the task rows moved.
          expect(await store.getWorkflow('wf-defer-index')).toMatchObject({
            status: 'pending',
            updatedAt: at(1),
            cancelRequestedAt: at(1),
          });
          expect(byName((await store.listTasks({ workflowId: 'wf-defer-index' })).items).a?.status).toBe('ready');
          await store.writeIndexRow(r1);
          expect(await store.getWorkflow('wf-defer-index')).toMatchObject({
            status: 'running',
            updatedAt: at(2),
            cancelRequestedAt: at(1),
          });
          // A later save without the option writes its index row itself.
          const r2 = finish(r1, 'a', 3);
          await store.save(r2, e1, { previous: r1, deferTaskRows: true });
          expect(await store.getWorkflow('wf-defer-index')).toMatchObject({ updatedAt: at(3) });
        },
        timeout,
      );
    });

    describe('coordinator', () => {
      it(
        'holds the lease exclusively until it is released',
        async () => {
          const store = await fresh();
          const first = await store.acquireLease();
          leases.push(first);
          expect(typeof first.leaseId).toBe('string');
          expect(first.lost.aborted).toBe(false);
          expect(await codeOf(store.acquireLease())).toBe('lease-held');
          await first.release();
          await first.release(); // harmless twice
          expect(first.lost.aborted).toBe(false);
          const second = await store.acquireLease();
          leases.push(second);
          expect(second.leaseId).not.toBe(first.leaseId);
          await second.release();
        },
        timeout,
      );

      it(
        'breaks a held lease when asked; the old holder learns it lost the lease',
        async () => {
          const store = await fresh();
          const first = await store.acquireLease();
          leases.push(first);
          const second = await store.acquireLease({ breakExisting: true });
          leases.push(second);
          const reason = await whenAborted(first.lost, 10_000);
          expect(isJobqError(reason, 'lease-lost')).toBe(true);
          expect(second.lost.aborted).toBe(false);
          expect(await codeOf(store.acquireLease())).toBe('lease-held');
          await first.release(); // a lost lease releases quietly
          await second.release();
          const third = await store.acquireLease();
          leases.push(third);
          await third.release();
        },
        timeout,
      );

      it(
        'acquires with breakExisting when nobody holds the lease, before and after the first holder',
        async () => {
          const store = await fresh();
          const first = await store.acquireLease({ breakExisting: true });
          leases.push(first);
          await first.release();
          // The lock exists now but nobody holds it: there is nothing to break.
          const second = await store.acquireLease({ breakExisting: true });
          leases.push(second);
          expect(second.lost.aborted).toBe(false);
          await second.release();
        },
        timeout,
      );

      it(
        'reports the lease state without taking it: none before the first holder, held, then free',
        async () => {
          const store = await fresh();
          expect(await store.leaseState()).toBeNull();
          const first = await store.acquireLease();
          leases.push(first);
          expect(await store.leaseState()).toEqual({ held: true, state: 'leased' });
          // Reading it took nothing: the holder still holds it.
          expect(first.lost.aborted).toBe(false);
          expect(await codeOf(store.acquireLease())).toBe('lease-held');
          await first.release();
          expect(await store.leaseState()).toEqual({ held: false, state: 'available' });
          const second = await store.acquireLease({ breakExisting: true });
          leases.push(second);
          expect(await store.leaseState()).toEqual({ held: true, state: 'leased' });
          await second.release();
          expect((await store.leaseState())?.held).toBe(false);
        },
        timeout,
      );

      it(
        'round-trips the coordinator stats',
        async () => {
          const store = await fresh();
          expect(await store.readCoordinatorStats()).toBeNull();
          const stats = { written_at: at(1), completions: 12, poison: 0, per_queue: { default: 3 } };
          await store.writeCoordinatorStats(stats);
          expect(await store.readCoordinatorStats()).toEqual(stats);
          await store.writeCoordinatorStats({ ...stats, completions: 13 });
          expect(await store.readCoordinatorStats()).toEqual({ ...stats, completions: 13 });
        },
        timeout,
      );

      it(
        'keeps a stats document per shard; shard 0 is the coordinator stats',
        async () => {
          const store = await fresh();
          await store.writeCoordinatorStats({ shard: 3 }, { shard: 3 });
          expect(await store.readCoordinatorStats()).toBeNull();
          expect(await store.readCoordinatorStats({ shard: 3 })).toEqual({ shard: 3 });
          await store.writeCoordinatorStats({ shard: 0 }, { shard: 0 });
          expect(await store.readCoordinatorStats()).toEqual({ shard: 0 });
          expect(await store.readCoordinatorStats({ shard: 1 })).toBeNull();
        },
        timeout,
      );

      it(
        'writes stats while the lease is held',
        async () => {
          const store = await fresh();
          const lease = await store.acquireLease();
          leases.push(lease);
          await store.writeCoordinatorStats({ ok: true });
          expect(await store.readCoordinatorStats()).toEqual({ ok: true });
          await lease.release();
        },
        timeout,
      );
    });
  });
}
