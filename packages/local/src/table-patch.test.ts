import { describe, expect, it } from '@jest/globals';
import LokiTableMetadataStore, { type StoredEntity } from 'azurite/dist/src/table/persistence/LokiTableMetadataStore';

/**
 * patches/azurite@3.35.0.patch, table side: a row merge (a task row's Merge upsert) must not visit
 * every row of the table. Azurite keeps a table's entities in a LokiJS collection with binary
 * indices on PartitionKey and RowKey; LokiJS's update() looked for the entity's entry in each index
 * by a linear scan. The patched merge leaves the entries where they are (the keys do not change).
 *
 * Rows visited are counted, not timed: every read of an element of the collection's documents or of
 * an index, outside LokiJS's binary searches (whose O(log n) probes are navigation, not visits).
 */

interface BinaryIndex {
  values: number[];
}

interface Collection {
  data: object[];
  binaryIndices: Record<string, BinaryIndex>;
  update(this: Collection, doc: object): void;
  findOne(this: Collection, query: Record<string, unknown>): (StoredEntity & { $loki: number }) | null;
}

const ACCOUNT = 'devstoreaccount1';
const TABLE = 'tasks';
const PARTITION = 'wf-1';
const context = { contextID: 'table-patch-test' };
/** LokiJS's binary searches: probes inside them are not counted. */
const BINARY_SEARCHES = ['calculateRange', 'calculateRangeStart', 'calculateRangeEnd', 'get'];

function entity(i: number, status: string): StoredEntity {
  return {
    PartitionKey: PARTITION,
    RowKey: `stage%2Ftask-${String(i).padStart(6, '0')}`,
    properties: { status, queue: 'default', attempt_no: 1, updated_at: '2026-01-01T00:00:00.000Z' },
    lastModifiedTime: '2026-01-01T00:00:00.000Z',
    eTag: `W/"datetime'${status}'"`,
  };
}

/** A table store holding `rows` rows in one partition, and a counter of the rows its calls visit. */
async function tableOf(
  rows: number,
): Promise<{ store: LokiTableMetadataStore; collection: Collection; count: (run: () => unknown) => Promise<number> }> {
  const store = new LokiTableMetadataStore(`table-patch-${rows}.json`, true);
  await store.init();
  await store.createTable(context, { account: ACCOUNT, table: TABLE });
  for (let i = 0; i < rows; i++) await store.insertTableEntity(context, TABLE, ACCOUNT, entity(i, 'pending'), '');
  const db = (store as unknown as { db: { getCollection(name: string): Collection | null } }).db;
  const collection = db.getCollection(`${ACCOUNT}$${TABLE}`);
  if (collection === null) throw new Error('no entity collection');
  expect(Object.keys(collection.binaryIndices).sort()).toEqual(['PartitionKey', 'RowKey']);

  let visits = 0;
  let paused = 0;
  const counted = <T>(array: T[]): T[] =>
    new Proxy(array, {
      get(target, key, receiver) {
        if (paused === 0 && typeof key === 'string' && /^\d+$/.test(key)) visits++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  collection.data = counted(collection.data);
  for (const index of Object.values(collection.binaryIndices)) index.values = counted(index.values);
  const methods = collection as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of BINARY_SEARCHES) {
    const search = methods[name]!;
    methods[name] = function (this: unknown, ...args: unknown[]) {
      paused++;
      try {
        return search.apply(this, args);
      } finally {
        paused--;
      }
    };
  }
  const count = async (run: () => unknown): Promise<number> => {
    const before = visits;
    await run();
    return visits - before;
  };
  return { store, collection, count };
}

/** Rows of a table of `rows` that a task-row merge visits: each of a few rows, as in a table transaction. */
async function visitsPerMerge(rows: number): Promise<number[]> {
  const { store, count } = await tableOf(rows);
  const out: number[] = [];
  try {
    for (const i of [0, Math.floor(rows / 2), rows - 1]) {
      out.push(
        await count(async () => {
          await store.beginBatchTransaction(`batch-${i}`);
          await store.insertOrMergeTableEntity(context, TABLE, ACCOUNT, entity(i, 'running'), undefined, `batch-${i}`);
          await store.endBatchTransaction(ACCOUNT, TABLE, `batch-${i}`, context, true);
        }),
      );
    }
  } finally {
    await store.close();
  }
  return out;
}

describe('the Azurite table patch', () => {
  it('visits as many rows per row merge at 10 000 rows in a partition as at 1 000', async () => {
    const small = await visitsPerMerge(1_000);
    const large = await visitsPerMerge(10_000);
    expect(large).toEqual(small);
    expect(Math.max(...large)).toBeLessThan(20);
  }, 60_000);

  it('merges the row: the new properties are stored and the row is still found by its keys', async () => {
    const { store, collection } = await tableOf(100);
    try {
      await store.insertOrMergeTableEntity(context, TABLE, ACCOUNT, entity(42, 'completed'), undefined, '');
      const row = collection.findOne({ RowKey: entity(42, '').RowKey, PartitionKey: PARTITION });
      expect(row?.properties.status).toBe('completed');
      expect(collection.findOne({ RowKey: entity(43, '').RowKey, PartitionKey: PARTITION })?.properties.status).toBe('pending');
      expect(collection.data).toHaveLength(100);
    } finally {
      await store.close();
    }
  });

  it('counts the scan LokiJS itself makes on update (the counter sees what the patch avoids)', async () => {
    const perUpdate = async (rows: number): Promise<number> => {
      const { store, collection, count } = await tableOf(rows);
      try {
        const doc = collection.findOne({ RowKey: entity(rows - 1, '').RowKey, PartitionKey: PARTITION })!;
        return await count(() => collection.update({ ...doc, properties: { ...doc.properties, status: 'running' } }));
      } finally {
        await store.close();
      }
    };
    const small = await perUpdate(1_000);
    const large = await perUpdate(10_000);
    expect(large).toBeGreaterThan(5 * small);
  }, 60_000);
});
