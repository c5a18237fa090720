import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { parseQueueSpec } from '@jobq/dag-core';
import type { LocalStorage, ServiceBusEmulator } from '@jobq/local';
import { DEFAULT_HEARTBEAT_INTERVAL_IN_MS, type Worker } from '@jobq/worker';
import { errorMessage } from '@jobq/ports';
import { JobqCommand, errorLine } from '../base';
import { openDeployment, type Deployment } from '../deployment';
import {
  EMBEDDED_ACCOUNT,
  EMBEDDED_PREFIX,
  LOCAL_MAX_IDLE_BACKOFF_IN_MS,
  embeddedConfig,
  loadLocalStack,
  localWorkerEnvironment,
  startLocalServiceBus,
} from '../embedded';
import { DEFAULT_DASHBOARD_PORT, dashboardLine, dashboardPortFlag, startDeploymentDashboard } from '../dashboard';
import { UsageError } from '../errors';
import { configFromFlags, coordinatorFlags } from '../flags';
import { QueueWorkerPool } from '../queue-workers';
import { metricsFlags, startMetrics } from '../metrics';
import { coordinatorOptions, createCoordinator, createWorker } from '../services';

/** Azurite's usual ports: blob 10000, queue 10001, table 10002. */
export const DEFAULT_PORT_BASE = 10_000;

/** The ports of the dev stack: Azurite's three and, with `--queues sb://local`, the broker's AMQP and admin ports. */
export interface DevPorts {
  blob: number;
  queue: number;
  table: number;
  /** AMQP port of the local Service Bus broker (the port base + 3, or --sb-port). */
  servicebus?: number;
  /** Its admin (HTTP) endpoint: the AMQP port + 1. */
  servicebus_admin?: number;
}

/** The `--json` document of `jobq dev`, printed once everything is running. */
export interface DevReport {
  status: 'ready';
  pid: number;
  prefix: string;
  account_name: string;
  connection_string: string;
  blob_endpoint: string;
  queue_endpoint: string;
  table_endpoint: string;
  ports: DevPorts;
  coordinator: boolean;
  /** The directory holding the stack's storage (`--data`); null when everything is in memory. */
  data_dir: string | null;
  workers: Array<{ queue: string; num_workers: number }>;
  /** `--auto-workers`: more queues get workers as workflow tasks are routed to them. */
  auto_workers: boolean;
  /** The local Service Bus broker (`--queues sb://local`); absent without it. */
  servicebus?: { connection_string: string; admin_endpoint: string };
  /** The environment another terminal (or process) needs to use the stack. */
  env: Record<string, string>;
  /** `--dashboard`: the dashboard's URL; absent without it. */
  dashboard_url?: string;
}

/**
 * The ports from the flags: `--port-base N` gives N, N+1, N+2 (default 10000) and, with the local
 * Service Bus broker, N+3 (AMQP) and N+4 (admin); `--blob-port`, `--queue-port`, `--table-port` and
 * `--sb-port` (its admin endpoint then on the next port) override one each. They must all differ.
 */
export function devPorts(
  flags: {
    'port-base'?: number | undefined;
    'blob-port'?: number | undefined;
    'queue-port'?: number | undefined;
    'table-port'?: number | undefined;
    'sb-port'?: number | undefined;
  },
  serviceBus = false,
): DevPorts {
  const base = flags['port-base'] ?? DEFAULT_PORT_BASE;
  const ports: DevPorts = {
    blob: flags['blob-port'] ?? base,
    queue: flags['queue-port'] ?? base + 1,
    table: flags['table-port'] ?? base + 2,
  };
  if (serviceBus) {
    ports.servicebus = flags['sb-port'] ?? base + 3;
    ports.servicebus_admin = ports.servicebus + 1;
  } else if (flags['sb-port'] !== undefined) {
    throw new UsageError('--sb-port is the port of the local Service Bus broker: it needs --queues sb://local');
  }
  for (const [name, port] of Object.entries(ports) as Array<[string, number]>) {
    if (!Number.isInteger(port) || port < 1 || port > 65_535)
      throw new UsageError(`the ${name.replace('_', ' ')} port must be between 1 and 65535, got ${port}`);
  }
  const all = Object.values(ports) as number[];
  if (new Set(all).size !== all.length) {
    throw new UsageError(
      serviceBus
        ? `the blob, queue, table, Service Bus and Service Bus admin ports must differ, got ${all.join(', ')}`
        : `the blob, queue and table ports must differ, got ${ports.blob}, ${ports.queue} and ${ports.table}`,
    );
  }
  return ports;
}

/** `--queues`: nothing (Storage Queues on Azurite) or `sb://local` (the local Service Bus broker); anything else is a usage error. */
export function devServiceBus(queues: string | undefined): boolean {
  if (queues === undefined) return false;
  if (queues.toLowerCase() === 'sb://local') return true;
  throw new UsageError(
    `--queues ${queues}: jobq dev runs everything locally: --queues takes sb://local (task and completion queues on a local Service Bus broker), or leave it out for Storage Queues on Azurite`,
  );
}

/**
 * The queues the local workers pull, deduplicated in the order given: `--queue` specs (`NAME`,
 * `ACCOUNT/NAME`, and with the local broker `sb://NAMESPACE/NAME`; every account and namespace is
 * mapped onto the dev stack), `default` when only `--workers` is given, none when neither is.
 */
export function devWorkerQueues(
  queues: readonly string[] | undefined,
  workers: number | undefined,
  serviceBus = false,
): { queues: string[]; numWorkers: number } {
  const specs = queues ?? [];
  if (specs.length === 0 && workers === undefined) return { queues: [], numWorkers: 0 };
  const out: string[] = [];
  for (const spec of specs.length === 0 ? ['default'] : specs) {
    const parsed = parseQueueSpec(spec);
    if (!parsed.ok) throw new UsageError(`--queue ${spec}: ${parsed.error}`);
    if (parsed.value.backend === 'servicebus' && !serviceBus) {
      throw new UsageError(
        `--queue ${spec}: a Service Bus queue needs the local broker: add --queues sb://local (every sb://NAMESPACE/NAME then lives on it as NAME)`,
      );
    }
    if (!out.includes(spec)) out.push(spec);
  }
  return { queues: out, numWorkers: workers ?? 1 };
}

/** Why a file-system call failed, in words (the code when there is no better one). */
function fsReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'ENOSPC':
      return 'no space left on the device';
    default:
      return code ?? errorMessage(error);
  }
}

/**
 * `--data DIR`: the absolute directory for the stack's storage, created when missing; a usage
 * error naming it when it is not a directory or cannot be written (checked by writing a file).
 */
export async function devDataDir(dir: string): Promise<string> {
  if (dir.trim() === '') throw new UsageError('--data needs a directory (where the stack keeps its storage)');
  const path = resolve(dir);
  let isDirectory: boolean | null = null;
  try {
    isDirectory = (await stat(path)).isDirectory();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new UsageError(`--data ${dir}: cannot use it (${fsReason(error)})`);
  }
  if (isDirectory === false) throw new UsageError(`--data ${dir}: not a directory`);
  if (isDirectory === null) {
    try {
      await mkdir(path, { recursive: true });
    } catch (error) {
      throw new UsageError(`--data ${dir}: cannot create the directory (${fsReason(error)})`);
    }
  }
  const probe = join(path, `.jobq-dev-write-check-${process.pid}`);
  try {
    await writeFile(probe, '');
  } catch (error) {
    throw new UsageError(`--data ${dir}: the directory is not writable (${fsReason(error)})`);
  }
  await rm(probe, { force: true });
  return path;
}

/** Marks a `--data` directory as used by this process, so that a second `jobq dev` on it does not start. */
const DATA_LOCK_FILE = 'jobq-dev.pid';

/**
 * Takes the `--data` directory for this process (`jobq-dev.pid` in it), or fails naming the live
 * `jobq dev` that holds it: two Azurite instances on one directory would overwrite each other's
 * files. A file left by a process that is gone is taken over. Returns the release.
 */
async function lockDataDir(dir: string): Promise<() => Promise<void>> {
  const file = join(dir, DATA_LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    const pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processIsAlive(pid)) {
      throw new Error(
        `--data ${dir} is in use by another jobq dev (pid ${pid}): stop it first, or use another directory (remove ${file} if that process is not jobq dev)`,
      );
    }
    await rm(file, { force: true });
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A single-quoted shell word. */
function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A failure to bind one of the fixed ports, as one clear line; null for other errors. */
function portError(error: unknown, ports: DevPorts): Error | null {
  const message = errorMessage(error);
  // The broker names the port itself ("… cannot listen on 127.0.0.1:PORT: the port is already in use").
  if (/cannot listen on 127\.0\.0\.1:\d+/.test(message)) {
    return new Error(`${message}: stop what holds it (another jobq dev?) or pick other ports with --port-base N or --sb-port N`);
  }
  const e = error as NodeJS.ErrnoException & { port?: number };
  if (e.code !== 'EADDRINUSE' && e.code !== 'EACCES') return null;
  const service = (Object.keys(ports) as Array<keyof DevPorts>).find((name) => ports[name] === e.port);
  const which = e.port === undefined ? 'a port' : `port ${e.port}${service === undefined ? '' : ` (${service})`}`;
  const why = e.code === 'EADDRINUSE' ? 'is already in use' : 'cannot be bound (permission denied)';
  return new Error(
    `${which} on 127.0.0.1 ${why}: stop what holds it (another Azurite or jobq dev?) or pick other ports with --port-base N or --blob-port/--queue-port/--table-port`,
  );
}

export default class Dev extends JobqCommand {
  static override traced = true;

  static override summary = 'Keep a local jobq stack running on fixed ports for other terminals';
  static override description =
    "Starts an in-memory Azurite (Blob, Queue and Table) on 127.0.0.1 at fixed ports (Azurite's usual 10000, 10001 and 10002 by default), " +
    'a coordinator for the prefix devstoreaccount1/Local (leave it out with --no-coordinator to run `jobq workflow coordinator` against the stack yourself) ' +
    'and, with --workers or --queue, local workers. Once everything runs it prints the connection settings and the export lines ' +
    'that point another terminal at the stack (with --json, one JSON document on stdout); then it keeps running until Ctrl-C or SIGTERM, ' +
    'which stop the workers, the coordinator and Azurite and exit 0. Everything is kept in memory and lost when it stops, ' +
    "unless --data DIR keeps the storage on disk (Azurite's own persistence, as `azurite --location DIR`): a later `jobq dev --data DIR` " +
    'has the same workflows, their history and outputs, and prints the same settings (same ports, same key); one jobq dev per directory at a time. ' +
    'With --auto-workers a queue gets local workers (--workers per queue, default 1) the first time the coordinator routes a task to it, ' +
    'besides the --queue names, which get theirs at once; on a restarted --data stack the queues of unfinished workflows get theirs at start. ' +
    'Every ACCOUNT/NAME queue a workflow names lives on the stack as NAME: run outside workers with --queue NAME. ' +
    'With --queues sb://local a local Service Bus broker joins the stack (AMQP on the port base + 3 or --sb-port, its admin endpoint on the next port): ' +
    'the completion queue, bare queue names and every sb://NAMESPACE/NAME queue live on it, and the export lines include JOBQ_WORKFLOW_QUEUES=sb://local, ' +
    "JOBQ_SERVICEBUS_CONNECTION_STRING and JOBQ_SERVICEBUS_ADMIN_ENDPOINT (its key is the broker's fixed development key); ACCOUNT/NAME queues stay " +
    'Storage Queues (outside workers: --queue devstoreaccount1/NAME). ' +
    'With --dashboard the dashboard (jobq dashboard) runs over the stack too, on 127.0.0.1:8050 or --dashboard-port (0 picks a free one), and its URL is printed. ' +
    "A port that is already in use is an error (exit 1). The account key printed is Azurite's well-known public development key.";
  static override examples = [
    '<%= config.bin %> dev',
    '<%= config.bin %> dev --workers 2',
    '<%= config.bin %> dev --data .jobq-dev --auto-workers',
    '<%= config.bin %> dev --port-base 20000 --queue default --queue gpu --workers 2',
    '<%= config.bin %> dev --no-coordinator --json',
    '<%= config.bin %> dev --queues sb://local --workers 2',
  ];
  static override flags = {
    'port-base': Flags.integer({
      description: `Use ports N (blob), N+1 (queue) and N+2 (table) (default ${DEFAULT_PORT_BASE})`,
      min: 1,
      max: 65_533,
      helpGroup: 'PORTS',
    }),
    'blob-port': Flags.integer({
      description: 'Port of the Blob service (default: the port base)',
      min: 1,
      max: 65_535,
      helpGroup: 'PORTS',
    }),
    'queue-port': Flags.integer({
      description: 'Port of the Queue service (default: the port base + 1)',
      min: 1,
      max: 65_535,
      helpGroup: 'PORTS',
    }),
    'table-port': Flags.integer({
      description: 'Port of the Table service (default: the port base + 2)',
      min: 1,
      max: 65_535,
      helpGroup: 'PORTS',
    }),
    'sb-port': Flags.integer({
      description:
        'AMQP port of the local Service Bus broker, its admin endpoint on the next one (default: the port base + 3; needs --queues sb://local)',
      min: 1,
      max: 65_534,
      helpGroup: 'PORTS',
    }),
    queues: Flags.string({
      description: 'sb://local: task and completion queues on a local Service Bus broker (default: Storage Queues on Azurite)',
    }),
    coordinator: Flags.boolean({
      description: 'Run a coordinator for devstoreaccount1/Local (--no-coordinator leaves it to `jobq workflow coordinator`)',
      default: true,
      allowNo: true,
    }),
    data: Flags.string({
      description:
        'Keep the storage on disk in DIR (created when missing), so a restarted jobq dev --data DIR has the history (default: in memory, lost when it stops)',
    }),
    workers: Flags.integer({
      description: 'Local workers per queue (default: none; 1 when --queue or --auto-workers is given)',
      min: 1,
      max: 64,
    }),
    queue: Flags.string({
      description:
        'A queue the local workers pull (repeatable; default "default" when --workers is given without --auto-workers); sb://… needs --queues sb://local',
      multiple: true,
    }),
    'auto-workers': Flags.boolean({
      description:
        'Start local workers on every queue a submitted workflow routes a task to, when the coordinator first sends a task there (with the --queue ones)',
      default: false,
    }),
    json: Flags.boolean({
      description: 'Print the settings as one JSON document on stdout once ready (then keep running)',
      default: false,
    }),
    dashboard: Flags.boolean({
      description: 'Also serve the dashboard (jobq dashboard) over the stack, on 127.0.0.1',
      default: false,
      helpGroup: 'DASHBOARD',
    }),
    'dashboard-port': dashboardPortFlag,
    config: Flags.string({
      description: 'Config file for the coordinator settings (default: $JOBQ_WORKFLOW_CONFIG, else ./jobq.yaml when present)',
      helpGroup: 'CONFIGURATION',
    }),
    ...coordinatorFlags,
    ...metricsFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dev);
    const serviceBus = devServiceBus(flags.queues);
    const ports = devPorts(flags, serviceBus);
    const autoWorkers = flags['auto-workers'];
    if (autoWorkers && !flags.coordinator) {
      throw new UsageError(
        "--auto-workers starts workers as the stack's coordinator routes tasks to new queues: leave out --no-coordinator, or name the queues with --queue",
      );
    }
    const { queues, numWorkers } = devWorkerQueues(
      flags.queue,
      autoWorkers && flags.queue === undefined ? undefined : flags.workers,
      serviceBus,
    );
    const workersPerQueue = numWorkers > 0 ? numWorkers : autoWorkers ? (flags.workers ?? 1) : 0;
    // Only the coordinator settings are taken from flags, environment and config file; the
    // prefix and connection are those of the dev stack.
    const baseConfig = configFromFlags({ ...flags, prefix: undefined, queues: undefined, blobs: undefined });
    // Checked (and created) before anything starts: a bad directory is a usage error.
    const dataDir = flags.data === undefined ? null : await devDataDir(flags.data);

    let signals = 0;
    const state: { failure: Error | null } = { failure: null };
    let closing = false;
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals === 1) {
        this.note(`jobq dev: ${signal} received: stopping (press Ctrl-C again to exit at once)`);
        wake();
      } else {
        this.note(`jobq dev: ${signal} received again: exiting at once`);
        process.exit(130);
      }
    };
    const fail = (error: Error): void => {
      if (closing) return;
      state.failure ??= error;
      wake();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const cleanups: Array<() => Promise<void>> = [];
    try {
      const { startAzurite } = await loadLocalStack();
      if (dataDir !== null) cleanups.push(await lockDataDir(dataDir));
      let storage: LocalStorage;
      try {
        storage = await startAzurite({
          blobPort: ports.blob,
          queuePort: ports.queue,
          tablePort: ports.table,
          ...(dataDir === null ? {} : { location: dataDir }),
        });
      } catch (error) {
        throw portError(error, ports) ?? error;
      }
      cleanups.push(() => storage.stop());
      let broker: ServiceBusEmulator | null = null;
      if (serviceBus) {
        try {
          broker = await startLocalServiceBus({ port: ports.servicebus!, adminPort: ports.servicebus_admin! });
        } catch (error) {
          throw portError(error, ports) ?? error;
        }
        const started = broker;
        cleanups.push(() => started.stop());
      }
      const config = embeddedConfig(baseConfig, storage.connectionString, broker === null ? null : { broker, completions: true });
      const instruments = await startMetrics(flags, (line) => this.note(`jobq dev: ${line}`));
      const deployment = await openDeployment(config, { mapAllAccounts: true, instruments });
      // Closed before the broker stops (cleanups run last first).
      cleanups.push(() => deployment.close());

      let pool: QueueWorkerPool | null = null;
      if (workersPerQueue > 0 && signals === 0) {
        const local = await localWorkerEnvironment(true);
        cleanups.push(local.cleanup);
        const workerEnv = local.env;
        pool = new QueueWorkerPool({
          key: (spec) => deployment.locate(spec).key,
          start: async (queue) => {
            if (closing) return;
            const worker: Worker = await createWorker(deployment, {
              queue,
              numWorkers: workersPerQueue,
              maxIdleBackoffInMs: LOCAL_MAX_IDLE_BACKOFF_IN_MS,
              env: workerEnv,
              log: (line) => this.note(`[worker ${queue}] ${line}`),
              onConfigError: (error) => fail(error),
              instruments,
              // Heartbeats, so `jobq workers`, status and doctor see the local workers.
              heartbeatIntervalInMs: DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
              version: this.config.version,
            });
            if (closing) {
              // Started while jobq dev was stopping: its cleanups have already run.
              await worker.stop({ gracePeriodInMs: 0 });
              return;
            }
            cleanups.push(() => worker.stop({ gracePeriodInMs: 0 }));
            worker.run().then(
              () => fail(new Error(`the worker on ${queue} stopped`)),
              (error: unknown) => fail(new Error(`the worker on ${queue} stopped: ${errorLine(error)}`)),
            );
          },
          onError: (error, queue) => fail(new Error(`could not start a worker on ${queue}: ${errorLine(error)}`)),
        });
        for (const queue of queues) await pool.add(queue);
      }
      const autoPool = autoWorkers ? pool : null;
      const announce = (queue: string, why: string): void =>
        this.note(`jobq dev: started ${workersPerQueue} local worker(s) on ${queue} (${why}; --auto-workers)`);

      if (flags.coordinator && signals === 0) {
        // With --auto-workers the coordinator's first task for a queue starts that queue's workers
        // (in the background: the task waits in its queue until they run).
        const routed =
          autoPool === null
            ? deployment
            : {
                ...deployment,
                queue: (spec: string) => {
                  const known = autoPool.queues.length;
                  autoPool.ensure(spec);
                  if (autoPool.queues.length > known) announce(spec, 'a workflow task was routed to it');
                  return deployment.queue(spec);
                },
              };
        const coordinator = createCoordinator(routed, {
          ...coordinatorOptions(config),
          log: (line) => this.note(`[coordinator] ${line}`),
          instruments,
        });
        await coordinator.start();
        cleanups.push(() => coordinator.stop());
        coordinator.run().then(
          () => fail(new Error('the coordinator stopped')),
          (error: unknown) => fail(new Error(`the coordinator stopped: ${errorLine(error)}`)),
        );
      }

      let dashboardUrl: string | null = null;
      if (flags.dashboard && signals === 0) {
        const dashboard = await startDeploymentDashboard(deployment, { port: flags['dashboard-port'] ?? DEFAULT_DASHBOARD_PORT });
        cleanups.push(() => dashboard.close());
        dashboardUrl = dashboard.url;
      }

      if (autoPool !== null && dataDir !== null && signals === 0) {
        // A restarted stack: tasks already waiting in a queue are not routed again, so the queues of
        // unfinished workflows get their workers now.
        for (const queue of await unfinishedWorkflowQueues(deployment)) {
          if (await autoPool.add(queue)) announce(queue, 'an unfinished workflow uses it');
        }
      }

      if (signals === 0 && state.failure === null) {
        // Said once everything runs, so that a stack that could not start prints only why.
        if (dataDir === null) {
          this.note('jobq dev: everything is kept in memory and lost when it stops (keep it on disk with --data DIR)');
        } else if (serviceBus) {
          this.note(
            `jobq dev: the local Service Bus broker keeps its queues in memory: messages on it are lost when it stops (the storage is kept in ${dataDir})`,
          );
        }
        const report = devReport(storage, broker, ports, flags.coordinator, pool?.queues ?? [], workersPerQueue, dataDir, autoWorkers);
        if (dashboardUrl !== null) report.dashboard_url = dashboardUrl;
        if (flags.json) {
          this.printJson(report);
          const sb = ports.servicebus === undefined ? '' : `, Service Bus ${ports.servicebus}, its admin ${ports.servicebus_admin}`;
          this.note(
            `jobq dev: ready on 127.0.0.1 (blob ${ports.blob}, queue ${ports.queue}, table ${ports.table}${sb}); Ctrl-C or SIGTERM stops it`,
          );
        } else {
          process.stdout.write(readyText(report));
        }
        if (dashboardUrl !== null) this.note(dashboardLine(dashboardUrl));
      }
      await woken;
    } finally {
      closing = true;
      // The handlers stay while stopping: a second signal exits at once.
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          this.note(`jobq: while stopping: ${errorLine(error)}`);
        }
      }
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    if (state.failure !== null) throw state.failure;
    this.note('jobq dev: stopped');
  }
}

/** The queue specs of the workflows not finished yet (from the index), deduplicated. */
async function unfinishedWorkflowQueues(deployment: Deployment): Promise<string[]> {
  const specs = new Set<string>();
  let continuationToken: string | undefined;
  do {
    const page = await deployment.client.list({
      status: ['pending', 'running'],
      ...(continuationToken === undefined ? {} : { continuationToken }),
    });
    for (const summary of page.items) for (const spec of summary.queues) specs.add(spec);
    continuationToken = page.continuationToken ?? undefined;
  } while (continuationToken !== undefined);
  return [...specs].sort();
}

function devReport(
  storage: LocalStorage,
  broker: ServiceBusEmulator | null,
  ports: DevPorts,
  coordinator: boolean,
  queues: string[],
  numWorkers: number,
  dataDir: string | null,
  autoWorkers: boolean,
): DevReport {
  const prefix = `${EMBEDDED_ACCOUNT}/${EMBEDDED_PREFIX}`;
  // The broker's key is its fixed development key, as Azurite's account key is: printing it gives nothing away.
  const serviceBusEnv: Record<string, string> =
    broker === null
      ? {}
      : {
          JOBQ_WORKFLOW_QUEUES: 'sb://local',
          JOBQ_SERVICEBUS_CONNECTION_STRING: broker.connectionString,
          JOBQ_SERVICEBUS_ADMIN_ENDPOINT: broker.adminEndpoint ?? '',
        };
  return {
    status: 'ready',
    pid: process.pid,
    prefix,
    account_name: storage.accountName,
    connection_string: storage.connectionString,
    blob_endpoint: storage.blobEndpoint,
    queue_endpoint: storage.queueEndpoint,
    table_endpoint: storage.tableEndpoint,
    ports,
    coordinator,
    data_dir: dataDir,
    workers: numWorkers === 0 ? [] : queues.map((queue) => ({ queue, num_workers: numWorkers })),
    auto_workers: autoWorkers,
    ...(broker === null ? {} : { servicebus: { connection_string: broker.connectionString, admin_endpoint: broker.adminEndpoint ?? '' } }),
    env: { JOBQ_WORKFLOW_PREFIX: prefix, JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString, ...serviceBusEnv },
  };
}

/** The human-readable settings: endpoints, what runs, and the lines for another terminal. */
function readyText(report: DevReport): string {
  const lines = [
    report.data_dir === null
      ? 'jobq dev: a local stack is running (in memory: everything is lost when it stops)'
      : `jobq dev: a local stack is running (storage kept in ${report.data_dir})`,
    '',
    `  prefix       ${report.prefix}`,
    `  blob         ${report.blob_endpoint}`,
    `  queue        ${report.queue_endpoint}`,
    `  table        ${report.table_endpoint}`,
    ...(report.servicebus === undefined
      ? []
      : [
          `  service bus  ${report.servicebus.connection_string.replace(/;.*$/, '')} (admin ${report.servicebus.admin_endpoint}): completions and task queues, sb://local`,
        ]),
    `  coordinator  ${report.coordinator ? 'running' : 'not started (run `jobq workflow coordinator` with the settings below)'}`,
    `  workers      ${workersLine(report)}`,
    ...(report.dashboard_url === undefined ? [] : [`  dashboard    ${report.dashboard_url}`]),
    '',
    'Use it from another terminal:',
    '',
    ...Object.entries(report.env).map(([name, value]) => `  export ${name}=${shellQuote(value)}`),
    report.servicebus === undefined
      ? '  unset JOBQ_WORKFLOW_QUEUES JOBQ_WORKFLOW_BLOBS JOBQ_SERVICEBUS_CONNECTION_STRING JOBQ_SERVICEBUS_ADMIN_ENDPOINT'
      : '  unset JOBQ_WORKFLOW_BLOBS',
    '  jobq workflow submit examples/diamond.yaml',
    ...(report.coordinator ? [] : ['  jobq workflow coordinator']),
    ...(report.workers.length === 0 && !report.auto_workers ? ['  jobq worker --queue default'] : []),
    '  jobq workflow list',
    '',
    'Ctrl-C or SIGTERM stops it.',
    '',
  ];
  return `${lines.join('\n')}\n`;
}

function workersLine(report: DevReport): string {
  const running = report.workers.map((w) => `${w.num_workers} on ${w.queue}`).join(', ');
  if (report.auto_workers) {
    const auto = `${report.workers.length === 0 ? 'started' : 'and more'} on every queue a workflow routes a task to (--auto-workers)`;
    return running === '' ? auto : `${running}, ${auto}`;
  }
  return running === '' ? 'none (run `jobq worker --queue NAME` with the settings below)' : running;
}
