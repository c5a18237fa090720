/*
 * Minimal types for the parts of azurite 3.35.0 that this package loads by deep path. Azurite ships
 * no type declarations and these classes are internal API, which is why the dependency is pinned
 * exactly. Only what `azurite.ts` touches is declared.
 */

declare module 'azurite/dist/src/common/persistence/MemoryExtentStore' {
  /** The byte store behind in-memory extents; one instance may back several servers. */
  export class MemoryExtentChunkStore {
    /** @param sizeLimit - bytes; `undefined` means unlimited. */
    constructor(sizeLimit?: number);
    /** Drops every chunk of one category (`"blob"` or `"queue"`). */
    clear(categoryName: string): void;
    totalSize(): number;
    sizeLimit(): number | undefined;
  }
  /** The process-wide store the command line limits with `--extentMemoryLimit`. */
  export const SharedChunkStore: MemoryExtentChunkStore;
  export const DEFAULT_EXTENT_MEMORY_LIMIT: number;
}

declare module 'azurite/dist/src/common/ServerBase' {
  import type { Server } from 'node:http';

  /** Values of `ServerBase.getStatus()`. */
  export type AzuriteServerStatus = 'Closed' | 'Starting' | 'Running' | 'Closing';

  export default abstract class ServerBase {
    /** The node http server, wrapped by `stoppable`; `address()` gives the bound port. */
    readonly httpServer: Server;
    start(): Promise<void>;
    /** Throws unless the server is Running. Does not wait for the http server's `close` event. */
    close(): Promise<void>;
    getStatus(): AzuriteServerStatus;
    /**
     * Releases the stores and stops the GC loop. Protected in Azurite, where `close()` calls it;
     * declared public here so a server whose `listen` failed can be released (its stores and GC
     * loop were already started by `beforeStart`).
     */
    afterClose(): Promise<void>;
  }
}

declare module 'azurite/dist/src/blob/BlobConfiguration' {
  import type { MemoryExtentChunkStore } from 'azurite/dist/src/common/persistence/MemoryExtentStore';

  export default class BlobConfiguration {
    constructor(
      host?: string,
      port?: number,
      keepAliveTimeout?: number,
      metadataDBPath?: string,
      extentDBPath?: string,
      persistencePathArray?: unknown[],
      enableAccessLog?: boolean,
      accessLogWriteStream?: NodeJS.WritableStream,
      enableDebugLog?: boolean,
      debugLogFilePath?: string,
      loose?: boolean,
      skipApiVersionCheck?: boolean,
      cert?: string,
      key?: string,
      pwd?: string,
      oauth?: string,
      disableProductStyleUrl?: boolean,
      isMemoryPersistence?: boolean,
      memoryStore?: MemoryExtentChunkStore,
    );
  }
}

declare module 'azurite/dist/src/queue/QueueConfiguration' {
  import type { MemoryExtentChunkStore } from 'azurite/dist/src/common/persistence/MemoryExtentStore';

  export default class QueueConfiguration {
    constructor(
      host?: string,
      port?: number,
      keepAliveTimeout?: number,
      metadataDBPath?: string,
      extentDBPath?: string,
      persistencePathArray?: unknown[],
      enableAccessLog?: boolean,
      accessLogWriteStream?: NodeJS.WritableStream,
      enableDebugLog?: boolean,
      debugLogFilePath?: string,
      loose?: boolean,
      skipApiVersionCheck?: boolean,
      cert?: string,
      key?: string,
      pwd?: string,
      oauth?: string,
      disableProductStyleUrl?: boolean,
      isMemoryPersistence?: boolean,
      memoryStore?: MemoryExtentChunkStore,
    );
  }
}

declare module 'azurite/dist/src/table/TableConfiguration' {
  export default class TableConfiguration {
    constructor(
      host?: string,
      port?: number,
      keepAliveTimeout?: number,
      metadataDBPath?: string,
      enableDebugLog?: boolean,
      enableAccessLog?: boolean,
      accessLogWriteStream?: NodeJS.WritableStream,
      debugLogFilePath?: string,
      loose?: boolean,
      skipApiVersionCheck?: boolean,
      cert?: string,
      key?: string,
      pwd?: string,
      oauth?: string,
      disableProductStyleUrl?: boolean,
      isMemoryPersistence?: boolean,
    );
  }
}

declare module 'azurite/dist/src/blob/BlobServer' {
  import ServerBase from 'azurite/dist/src/common/ServerBase';
  import type BlobConfiguration from 'azurite/dist/src/blob/BlobConfiguration';

  export default class BlobServer extends ServerBase {
    constructor(configuration: BlobConfiguration);
  }
}

declare module 'azurite/dist/src/queue/QueueServer' {
  import ServerBase from 'azurite/dist/src/common/ServerBase';
  import type QueueConfiguration from 'azurite/dist/src/queue/QueueConfiguration';

  export default class QueueServer extends ServerBase {
    constructor(configuration: QueueConfiguration);
  }
}

declare module 'azurite/dist/src/table/TableServer' {
  import ServerBase from 'azurite/dist/src/common/ServerBase';
  import type TableConfiguration from 'azurite/dist/src/table/TableConfiguration';

  export default class TableServer extends ServerBase {
    constructor(configuration: TableConfiguration);
  }
}

declare module 'azurite/dist/src/common/Telemetry' {
  export class AzuriteTelemetryClient {
    /** Checked on every request; only the command line ever creates the Application Insights clients. */
    static enableTelemetry: boolean;
  }
}
