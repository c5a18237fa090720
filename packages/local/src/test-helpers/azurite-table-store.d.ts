/*
 * Minimal types for Azurite's LokiJS table store (internal API of azurite 3.35.0, loaded by deep
 * path), for table-patch.test.ts only: what that test calls.
 */
declare module 'azurite/dist/src/table/persistence/LokiTableMetadataStore' {
  /** A stored entity: the keys, the properties, and LokiJS's `$loki` once stored. */
  export interface StoredEntity {
    PartitionKey: string;
    RowKey: string;
    properties: Record<string, unknown>;
    lastModifiedTime: string;
    eTag: string;
  }

  /** Azurite passes its request context; the store reads only `contextID` (for errors). */
  export interface StoreContext {
    contextID: string;
  }

  export default class LokiTableMetadataStore {
    constructor(lokiDBPath: string, inMemory: boolean);
    init(): Promise<void>;
    close(): Promise<void>;
    createTable(context: StoreContext, table: { account: string; table: string }): Promise<void>;
    insertTableEntity(context: StoreContext, table: string, account: string, entity: StoredEntity, batchId?: string): Promise<StoredEntity>;
    insertOrMergeTableEntity(
      context: StoreContext,
      table: string,
      account: string,
      entity: StoredEntity,
      ifMatch: string | undefined,
      batchId?: string,
    ): Promise<StoredEntity>;
    beginBatchTransaction(batchId: string): Promise<void>;
    endBatchTransaction(account: string, table: string, batchId: string, context: StoreContext, succeeded: boolean): Promise<void>;
  }
}
