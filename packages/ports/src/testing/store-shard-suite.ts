import { afterEach, describe, expect, it } from './jest-globals';
import { createRuntime, reduce, shardOf, validateWorkflow, type WorkflowDefinition } from '@jobq/dag-core';
import { isJobqError } from '../errors';
import type { ShardFilter, WorkflowStore } from '../workflow-store';
import type { WorkflowStoreContractOptions, WorkflowStoreFixture } from './store-suite';

/** Second `n` after 2026-01-01T00:00:00Z, as ISO-8601. */
function at(n: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
}

function definition(): WorkflowDefinition {
  const result = validateWorkflow({ name: 'one', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });
  if (!result.ok) throw new Error(result.issues.map((i) => i.message).join('\n'));
  return result.value;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : `not a JobqError: ${String(error)}`;
  }
  return undefined;
}

async function all<T>(list: (token: string | undefined) => Promise<{ items: T[]; continuationToken: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await list(token);
    items.push(...page.items);
    if (page.continuationToken === null) return items;
    token = page.continuationToken;
  }
  throw new Error('more than 100 pages');
}

/** Workflows `s-0` … `s-{n−1}`: created, the even ones activated (saved `running`). */
async function seed(store: WorkflowStore, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `s-${i}`);
  const def = definition();
  for (const [i, id] of ids.entries()) {
    const runtime = createRuntime(def, { workflowId: id, now: at(i) });
    const { etag } = await store.create(runtime, 'h');
    if (i % 2 === 0) await store.save(reduce(runtime, { type: 'activate', now: at(100 + i) }).runtime, etag);
  }
  return ids;
}

const sorted = (ids: readonly string[]): string[] => [...ids].sort();

/**
 * The shard filters of {@link WorkflowStore}'s listings (docs/sharding.md): `shard: {index, count}`
 * lists exactly the workflows (requests, re-run requests) whose `shardOf(id, count)` is `index`,
 * paged as usual. Adapters run it beside `describeWorkflowStoreContract`, with the same fixture.
 */
export function describeWorkflowStoreShardContract(
  label: string,
  open: () => Promise<WorkflowStoreFixture>,
  options: WorkflowStoreContractOptions = {},
): void {
  describe(`WorkflowStore shard filters: ${label}`, () => {
    let fixture: WorkflowStoreFixture | undefined;
    const fresh = async (): Promise<WorkflowStore> => {
      fixture = await open();
      return fixture.store;
    };
    afterEach(async () => {
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 60_000;

    it(
      "lists each shard's workflows, in pages, with the other conditions, and nothing twice",
      async () => {
        const store = await fresh();
        const ids = await seed(store, 12);
        for (const count of [1, 4] as const) {
          const union: string[] = [];
          for (let index = 0; index < count; index++) {
            const shard: ShardFilter = { index, count };
            const mine = ids.filter((id) => shardOf(id, count) === index);
            const listed = await all((token) => store.listWorkflows({ shard, limit: 2, ...(token ? { continuationToken: token } : {}) }));
            expect(sorted(listed.map((w) => w.workflowId))).toEqual(sorted(mine));
            union.push(...listed.map((w) => w.workflowId));
            const running = await all((token) =>
              store.listWorkflows({ shard, savedStatus: ['running'], limit: 1, ...(token ? { continuationToken: token } : {}) }),
            );
            expect(sorted(running.map((w) => w.workflowId))).toEqual(sorted(mine.filter((id) => Number(id.slice(2)) % 2 === 0)));
            const recent = await all((token) =>
              store.listWorkflows({ shard, recent: true, limit: 3, ...(token ? { continuationToken: token } : {}) }),
            );
            expect(sorted(recent.map((w) => w.workflowId))).toEqual(sorted(mine));
            const pending = await store.listWorkflows({ shard, status: ['pending'] });
            expect(sorted(pending.items.map((w) => w.workflowId))).toEqual(sorted(mine.filter((id) => Number(id.slice(2)) % 2 === 1)));
          }
          expect(sorted(union)).toEqual(sorted(ids));
        }
      },
      timeout,
    );

    it(
      "lists each shard's requests and re-run requests only",
      async () => {
        const store = await fresh();
        const ids = await seed(store, 8);
        for (const id of ids) {
          await store.requestCancel(id, at(200));
          await store.requestRerun({ workflowId: id, requestId: `r-${id}`, taskName: 'a', downstream: false, requestedAt: at(201) });
        }
        const union: string[] = [];
        for (let index = 0; index < 2; index++) {
          const shard: ShardFilter = { index, count: 2 };
          const mine = sorted(ids.filter((id) => shardOf(id, 2) === index));
          const requests = await all((token) => store.listRequests({ shard, limit: 1, ...(token ? { continuationToken: token } : {}) }));
          expect(sorted(requests.map((r) => r.workflowId))).toEqual(mine);
          const reruns = await all((token) => store.listReruns({ shard, limit: 1, ...(token ? { continuationToken: token } : {}) }));
          expect(sorted(reruns.map((r) => r.workflowId))).toEqual(mine);
          union.push(...requests.map((r) => r.workflowId));
        }
        expect(sorted(union)).toEqual(sorted(ids));
        const one = ids[0]!;
        const theirs = await store.listReruns({ workflowId: one, shard: { index: (shardOf(one, 2) + 1) % 2, count: 2 } });
        expect(theirs.items).toEqual([]);
      },
      timeout,
    );

    it(
      'refuses a shard filter that names no shard',
      async () => {
        const store = await fresh();
        for (const shard of [
          { index: 4, count: 4 },
          { index: 0, count: 3 },
          { index: -1, count: 2 },
          { index: 0.5, count: 2 },
        ] as ShardFilter[]) {
          expect(await codeOf(store.listWorkflows({ shard }))).toBe('invalid-argument');
          expect(await codeOf(store.listRequests({ shard }))).toBe('invalid-argument');
          expect(await codeOf(store.listReruns({ shard }))).toBe('invalid-argument');
        }
      },
      timeout,
    );
  });
}
