import type { TableClient, TableEntityResult } from '@azure/data-tables';
import {
  capRunning,
  type OperationOptions,
  type WorkerHeartbeat,
  type WorkerQueueHeartbeat,
  type WorkerRecord,
  type WorkerRegistry,
  type WorkerRunningTask,
} from '@jobq/ports';
import { accountClients, type StorageAccountConnection } from './clients';
import { storeCall } from './errors';
import { storeNames } from './names';
import type { TablePipelinePolicy } from './workflow-store';

/** The one partition of the workers table. */
const PARTITION = 'w';
/** Longest JSON text of the running list in a row (a Table string property holds 32 K characters). */
const MAX_RUNNING_JSON_CHARS = 30_000;

type Row = Record<string, string | number | boolean>;

function parseJson<T>(text: unknown, fallback: T): T {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** Options of {@link openWorkerRegistry}. */
export interface OpenWorkerRegistryOptions {
  connection: StorageAccountConnection;
  /** The deployment prefix: the table is `{PREFIX}Workers`. */
  prefix: string;
  /** Create the table when missing (default true). */
  createIfMissing?: boolean;
  operationTimeoutInMs?: number;
  /** Extra policies of the table client, after its retry policy (each try is seen), e.g. a request counter. */
  tablePolicies?: readonly TablePipelinePolicy[];
}

/**
 * Worker heartbeats in `{PREFIX}Workers` (docs/design.md#worker-heartbeats): one row per worker
 * (RowKey = worker id) in one partition; each beat is one Upsert (replace). Ages are the service's
 * `Timestamp` of the row against the `Date` of the listing's answer, both on the service's clock.
 */
export class AzureWorkerRegistry implements WorkerRegistry {
  constructor(
    private readonly table: TableClient,
    private readonly timeoutInMs: number,
  ) {}

  /** Creates the table when missing. */
  async ensureExists(options?: OperationOptions): Promise<void> {
    await storeCall({ operation: 'create the workers table' }, this.timeoutInMs, options, (abortSignal) =>
      this.table.createTable({ abortSignal }),
    );
  }

  async beat(heartbeat: WorkerHeartbeat, options?: OperationOptions): Promise<void> {
    let running = capRunning(heartbeat.running).running;
    let json = JSON.stringify(running);
    while (json.length > MAX_RUNNING_JSON_CHARS && running.length > 0) {
      running = running.slice(0, Math.floor(running.length / 2));
      json = JSON.stringify(running);
    }
    const more = heartbeat.runningMore + heartbeat.running.length - running.length;
    const entity = {
      partitionKey: PARTITION,
      rowKey: heartbeat.workerId,
      host: heartbeat.host,
      pid: heartbeat.pid,
      version: heartbeat.version,
      interval_ms: heartbeat.intervalInMs,
      stopping: heartbeat.stopping,
      started_at: heartbeat.startedAt,
      queues: JSON.stringify(heartbeat.queues),
      running: json,
      running_more: more,
    };
    await storeCall({ operation: `write the heartbeat of worker "${heartbeat.workerId}"` }, this.timeoutInMs, options, (abortSignal) =>
      this.table.upsertEntity(entity, 'Replace', { abortSignal }),
    );
  }

  async remove(workerId: string, options?: OperationOptions): Promise<void> {
    try {
      await storeCall({ operation: `delete the heartbeat of worker "${workerId}"` }, this.timeoutInMs, options, (abortSignal) =>
        this.table.deleteEntity(PARTITION, workerId, { abortSignal }),
      );
    } catch (error) {
      if ((error as { code?: unknown }).code === 'not-found') return;
      throw error;
    }
  }

  /** Every row; none when the table does not exist (no worker of this jobq wrote one yet). */
  async list(options?: OperationOptions): Promise<WorkerRecord[]> {
    try {
      return await this.listRows(options);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'not-found') return [];
      throw error;
    }
  }

  private async listRows(options?: OperationOptions): Promise<WorkerRecord[]> {
    return storeCall({ operation: 'list the worker heartbeats' }, this.timeoutInMs, options, async (abortSignal) => {
      let serviceNow: number | null = null;
      const rows: TableEntityResult<Row>[] = [];
      const pages = this.table
        .listEntities<Row>({
          queryOptions: { filter: `PartitionKey eq '${PARTITION}'` },
          abortSignal,
          onResponse: (response) => {
            const date = Date.parse(response.headers.get('date') ?? '');
            if (Number.isFinite(date)) serviceNow = Math.max(serviceNow ?? 0, date);
          },
        })
        .byPage();
      for await (const page of pages) rows.push(...page);
      return rows.map((row) => toRecord(row, serviceNow)).sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
    });
  }

  async prune(olderThanInMs: number, options?: OperationOptions): Promise<number> {
    const old = (await this.list(options)).filter((r) => r.ageInMs >= olderThanInMs);
    for (const record of old) await this.remove(record.workerId, options);
    return old.length;
  }
}

function toRecord(row: TableEntityResult<Row>, serviceNow: number | null): WorkerRecord {
  const seen = Date.parse(row.timestamp ?? '');
  const seenAt = Number.isFinite(seen) ? new Date(seen).toISOString() : new Date(0).toISOString();
  // The answer's Date has whole seconds: an age within that second reads 0.
  const ageInMs = serviceNow === null || !Number.isFinite(seen) ? 0 : Math.max(0, serviceNow - seen);
  const text = (key: string): string => (typeof row[key] === 'string' ? row[key] : '');
  const num = (key: string): number => (typeof row[key] === 'number' ? row[key] : Number(row[key] ?? 0) || 0);
  return {
    workerId: row.rowKey ?? '',
    host: text('host'),
    pid: num('pid'),
    version: text('version'),
    intervalInMs: num('interval_ms'),
    stopping: row.stopping === true,
    startedAt: text('started_at'),
    queues: parseJson<WorkerQueueHeartbeat[]>(row.queues, []),
    running: parseJson<WorkerRunningTask[]>(row.running, []),
    runningMore: num('running_more'),
    seenAt,
    ageInMs,
  };
}

/** Opens the worker registry of a prefix (`{PREFIX}Workers`), creating the table unless `createIfMissing: false`. */
export async function openWorkerRegistry(options: OpenWorkerRegistryOptions): Promise<AzureWorkerRegistry> {
  const names = storeNames(options.prefix);
  const timeout = options.operationTimeoutInMs ?? 10_000;
  const clients = accountClients(options.connection, { operationTimeoutInMs: timeout });
  const table = clients.table(names.workersTable);
  for (const policy of options.tablePolicies ?? []) table.pipeline.addPolicy(policy, { afterPhase: 'Retry' });
  const registry = new AzureWorkerRegistry(table, timeout);
  if (options.createIfMissing ?? true) await registry.ensureExists();
  return registry;
}
