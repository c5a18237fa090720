import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type ServerBase from 'azurite/dist/src/common/ServerBase';
import { canConnect, findFreePorts, LOOPBACK } from './net';

/** The account Azurite serves by default. */
export const AZURITE_ACCOUNT_NAME = 'devstoreaccount1';

/** The well-known key of {@link AZURITE_ACCOUNT_NAME} (public; it only works against Azurite). */
export const AZURITE_ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/**
 * The default cap, in MiB, on the bytes Azurite keeps for blob contents and queue message bodies
 * (together). Without a cap Azurite allows half of the machine's RAM.
 */
export const DEFAULT_EXTENT_MEMORY_LIMIT_MB = 1024;

/** How long {@link startAzuriteProcess} waits for the three ports by default. */
export const DEFAULT_PROCESS_START_TIMEOUT_MS = 20_000;

/**
 * A running local Azure Storage (Blob, Queue and Table on 127.0.0.1), as returned by
 * {@link startAzurite} and {@link startAzuriteProcess}.
 */
export interface LocalStorage {
  /** Always {@link AZURITE_ACCOUNT_NAME}. */
  readonly accountName: string;
  /** Always {@link AZURITE_ACCOUNT_KEY}. */
  readonly accountKey: string;
  /** `http://127.0.0.1:<port>/devstoreaccount1` */
  readonly blobEndpoint: string;
  /** `http://127.0.0.1:<port>/devstoreaccount1` */
  readonly queueEndpoint: string;
  /** `http://127.0.0.1:<port>/devstoreaccount1` (data-tables needs `allowInsecureConnection: true`). */
  readonly tableEndpoint: string;
  /** A storage connection string with explicit `BlobEndpoint`, `QueueEndpoint` and `TableEndpoint`. */
  readonly connectionString: string;
  /**
   * Closes all three services and releases their memory. Idempotent: later calls return the same
   * promise. Once it resolves the ports refuse connections.
   */
  stop(): Promise<void>;
}

/** {@link LocalStorage} served by a child process (see {@link startAzuriteProcess}). */
export interface AzuriteProcess extends LocalStorage {
  /** The child's process id. */
  readonly pid: number;
}

/** Options of {@link startAzurite}. */
export interface StartAzuriteOptions {
  /** Port of the Blob service; 0 or absent picks a free one. */
  blobPort?: number;
  /** Port of the Queue service; 0 or absent picks a free one. */
  queuePort?: number;
  /** Port of the Table service; 0 or absent picks a free one. */
  tablePort?: number;
  /**
   * Cap in MiB on stored blob contents and queue message bodies, shared by the Blob and Queue
   * services of this instance; a write beyond it fails with 409 `MemoryExtentStoreAtSizeLimit`.
   * Default {@link DEFAULT_EXTENT_MEMORY_LIMIT_MB}. Not used with {@link location}.
   */
  extentMemoryLimitMb?: number;
  /**
   * Keep the data on disk in this directory (created when missing) instead of in memory, with
   * Azurite's own persistence and file layout (the same as `azurite --location DIR`): a later start
   * on the same directory serves the same containers, blobs, queues, messages and tables. Azurite
   * writes its metadata every 5 s and on `stop()`. One instance per directory at a time.
   * {@link startAzurite} only.
   */
  location?: string;
}

/** Options of {@link startAzuriteProcess}. */
export interface StartAzuriteProcessOptions extends Omit<StartAzuriteOptions, 'location'> {
  /** How long to wait until all three ports accept connections. Default {@link DEFAULT_PROCESS_START_TIMEOUT_MS}. */
  startTimeoutMs?: number;
}

interface Ports {
  blob: number;
  queue: number;
  table: number;
}

/** After Azurite's own close(), how long open connections get before they are cut. */
const HTTP_CLOSE_GRACE_MS = 2_000;
/** How long a child gets to exit after SIGTERM before SIGKILL. */
const PROCESS_KILL_GRACE_MS = 5_000;
/** How many times a child on random ports is started when it exits before listening. */
const PROCESS_START_ATTEMPTS = 3;
const OUTPUT_TAIL_CHARS = 4_000;

function validatePort(name: string, port: number | undefined): number {
  const value = port ?? 0;
  if (!Number.isInteger(value) || value < 0 || value > 65_535) {
    throw new RangeError(`${name} must be an integer from 0 to 65535, got ${String(port)}`);
  }
  return value;
}

function requestedPorts(options: StartAzuriteOptions): Ports {
  return {
    blob: validatePort('blobPort', options.blobPort),
    queue: validatePort('queuePort', options.queuePort),
    table: validatePort('tablePort', options.tablePort),
  };
}

function extentMemoryLimitMb(options: StartAzuriteOptions): number {
  const mb = options.extentMemoryLimitMb ?? DEFAULT_EXTENT_MEMORY_LIMIT_MB;
  if (!Number.isFinite(mb) || mb <= 0) {
    throw new RangeError(`extentMemoryLimitMb must be a positive number, got ${String(options.extentMemoryLimitMb)}`);
  }
  return mb;
}

function describe(ports: Ports): Omit<LocalStorage, 'stop'> {
  const endpoint = (port: number): string => `http://${LOOPBACK}:${port}/${AZURITE_ACCOUNT_NAME}`;
  const blobEndpoint = endpoint(ports.blob);
  const queueEndpoint = endpoint(ports.queue);
  const tableEndpoint = endpoint(ports.table);
  return {
    accountName: AZURITE_ACCOUNT_NAME,
    accountKey: AZURITE_ACCOUNT_KEY,
    blobEndpoint,
    queueEndpoint,
    tableEndpoint,
    connectionString:
      `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT_NAME};AccountKey=${AZURITE_ACCOUNT_KEY};` +
      `BlobEndpoint=${blobEndpoint};QueueEndpoint=${queueEndpoint};TableEndpoint=${tableEndpoint};`,
  };
}

function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= fn());
}

// ---------------------------------------------------------------------------------------------
// In-process

/**
 * Starts Azurite's Blob, Queue and Table services inside this process, on 127.0.0.1, with in-memory
 * persistence (or on disk in `options.location`), loose mode, no API version check, no access or debug log and no telemetry.
 *
 * Each call gets its own stores (instances are isolated from each other) and its own extent
 * memory cap. Start-up takes a few tens of milliseconds after the first call, which loads Azurite
 * (under a second). The services share this process's event loop: fine for tests, but use
 * {@link startAzuriteProcess} for throughput measurements.
 *
 * @example
 * ```ts
 * const storage = await startAzurite();
 * const blobs = BlobServiceClient.fromConnectionString(storage.connectionString);
 * // …
 * await storage.stop();
 * ```
 */
export async function startAzurite(options: StartAzuriteOptions = {}): Promise<LocalStorage> {
  const ports = requestedPorts(options);
  const limitBytes = Math.round(extentMemoryLimitMb(options) * 1024 * 1024);

  // Loaded on first use: Azurite takes most of a second to load, and the child-process mode and
  // the rest of the package do not need it in this process.
  // CommonJS requires, as an import() would load these modules as ECMAScript (and fail on the paths).
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { default: BlobServer } = require('azurite/dist/src/blob/BlobServer') as typeof import('azurite/dist/src/blob/BlobServer');
  const { default: BlobConfiguration } =
    require('azurite/dist/src/blob/BlobConfiguration') as typeof import('azurite/dist/src/blob/BlobConfiguration');
  const { default: QueueServer } = require('azurite/dist/src/queue/QueueServer') as typeof import('azurite/dist/src/queue/QueueServer');
  const { default: QueueConfiguration } =
    require('azurite/dist/src/queue/QueueConfiguration') as typeof import('azurite/dist/src/queue/QueueConfiguration');
  const { default: TableServer } = require('azurite/dist/src/table/TableServer') as typeof import('azurite/dist/src/table/TableServer');
  const { default: TableConfiguration } =
    require('azurite/dist/src/table/TableConfiguration') as typeof import('azurite/dist/src/table/TableConfiguration');
  const { MemoryExtentChunkStore } =
    require('azurite/dist/src/common/persistence/MemoryExtentStore') as typeof import('azurite/dist/src/common/persistence/MemoryExtentStore');
  const { AzuriteTelemetryClient } = require('azurite/dist/src/common/Telemetry') as typeof import('azurite/dist/src/common/Telemetry');
  /* eslint-enable @typescript-eslint/no-require-imports */
  // Only Azurite's command line creates the Application Insights clients, so nothing is sent
  // anyway; this also turns the per-request hook into a no-op.
  AzuriteTelemetryClient.enableTelemetry = false;

  // The command line caps the process-wide SharedChunkStore (--extentMemoryLimit); in-process we
  // hand each instance its own store instead, so instances neither share nor fight over the cap.
  const memoryStore = new MemoryExtentChunkStore(limitBytes);
  const location = options.location;
  const inMemory = location === undefined;
  // With in-memory persistence the LokiJS "paths" are only names, but Azurite stat()s them and
  // would load an existing file: use names of a directory that is never created. On disk, the
  // names and layout are those of Azurite's command line (`azurite --location DIR`).
  const dbDir = location ?? join(tmpdir(), `jobq-local-azurite-${randomUUID()}`);
  if (location !== undefined) await mkdir(location, { recursive: true });
  const extentsAt = (path: string, maxConcurrency: number) =>
    inMemory ? undefined : [{ locationId: 'Default', locationPath: join(dbDir, path), maxConcurrency }];
  const loose = true;
  const skipApiVersionCheck = true;
  const keepAlive = undefined; // Azurite's default, 5 s
  const blobServer = new BlobServer(
    new BlobConfiguration(
      LOOPBACK,
      ports.blob,
      keepAlive,
      join(dbDir, '__azurite_db_blob__.json'),
      join(dbDir, '__azurite_db_blob_extent__.json'),
      extentsAt('__blobstorage__', 10),
      false,
      undefined,
      false,
      undefined,
      loose,
      skipApiVersionCheck,
      '',
      '',
      '',
      undefined,
      false,
      inMemory,
      memoryStore,
    ),
  );
  const queueServer = new QueueServer(
    new QueueConfiguration(
      LOOPBACK,
      ports.queue,
      keepAlive,
      join(dbDir, '__azurite_db_queue__.json'),
      join(dbDir, '__azurite_db_queue_extent__.json'),
      extentsAt('__queuestorage__', 1),
      false,
      undefined,
      false,
      undefined,
      loose,
      skipApiVersionCheck,
      '',
      '',
      '',
      undefined,
      false,
      inMemory,
      memoryStore,
    ),
  );
  const tableServer = new TableServer(
    new TableConfiguration(
      LOOPBACK,
      ports.table,
      keepAlive,
      join(dbDir, '__azurite_db_table__.json'),
      false,
      false,
      undefined,
      undefined,
      loose,
      skipApiVersionCheck,
      '',
      '',
      '',
      undefined,
      false,
      inMemory,
    ),
  );
  const servers: ServerBase[] = [blobServer, queueServer, tableServer];
  const release = (): void => {
    memoryStore.clear('blob');
    memoryStore.clear('queue');
  };

  const started = await Promise.allSettled(servers.map((server) => server.start()));
  const failure = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure !== undefined) {
    await Promise.allSettled(
      servers.map((server, i) => (started[i]?.status === 'fulfilled' ? closeAzuriteServer(server) : server.afterClose())),
    );
    release();
    throw failure.reason;
  }

  return {
    ...describe({
      blob: boundPort(blobServer.httpServer),
      queue: boundPort(queueServer.httpServer),
      table: boundPort(tableServer.httpServer),
    }),
    stop: once(async () => {
      await Promise.all(servers.map((server) => closeAzuriteServer(server)));
      release();
    }),
  };
}

function boundPort(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error(`Azurite server is not bound to a TCP port (${String(address)})`);
  }
  return address.port;
}

/**
 * Closes an Azurite server and waits until its http server has really closed. Azurite's close()
 * stops its stores but only *starts* closing the http server (stoppable ends the open sockets on
 * the next tick) and does not wait for it.
 */
async function closeAzuriteServer(server: ServerBase): Promise<void> {
  if (server.getStatus() !== 'Running') {
    return;
  }
  const http = server.httpServer;
  const closed = new Promise<void>((resolve) => http.once('close', () => resolve()));
  await server.close();
  const timer = setTimeout(() => http.closeAllConnections(), HTTP_CLOSE_GRACE_MS);
  try {
    await closed;
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Child process

/** Names the child's private working directory, which the watchdog removes if the parent dies. */
const LOCATION_ENV = 'JOBQ_LOCAL_AZURITE_DIR';

/**
 * Runs in the child before Azurite's command line (`node -e WATCHDOG -- azurite.js flags…`, so
 * process.argv is what Azurite expects). The child exits when its stdin pipe closes, that is when
 * the parent dies, even by SIGKILL, and then removes its private directory. On SIGTERM/SIGINT
 * Azurite closes its servers; dropping stdin then lets the process exit by itself.
 */
const WATCHDOG = [
  "'use strict';",
  'const orphaned = () => {',
  `  const dir = process.env.${LOCATION_ENV};`,
  "  if (dir) { try { require('fs').rmSync(dir, { recursive: true, force: true }); } catch {} }",
  '  process.exit(0);',
  '};',
  "process.stdin.on('end', orphaned);",
  "process.stdin.on('error', orphaned);",
  'process.stdin.resume();',
  "for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.stdin.destroy());",
  'require(process.argv[1]);',
].join('\n');

interface LiveChild {
  kill(): void;
  location: string;
}

/** Children still running; killed synchronously when this process exits. */
const liveChildren = new Set<LiveChild>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) {
    return;
  }
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill();
        rmSync(child.location, { recursive: true, force: true });
      } catch {
        // Exiting anyway; the child's watchdog removes the directory too.
      }
    }
  });
}

class OutputTail {
  private text = '';

  push(chunk: Buffer | string): void {
    this.text = (this.text + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  }

  toString(): string {
    return this.text.trim() === '' ? '(empty)' : this.text.trimEnd();
  }
}

/** The child exited before all ports accepted connections (worth retrying on other ports). */
class ChildExitedError extends Error {}

function azuriteCli(): string {
  return require.resolve('azurite/dist/src/azurite.js');
}

/**
 * Starts Azurite (Blob, Queue and Table) as a child process of this one (`node azurite.js
 * --inMemoryPersistence --silent --loose --skipApiVersionCheck --disableTelemetry
 * --extentMemoryLimit 1024`, hosts 127.0.0.1) and resolves once all three ports accept TCP
 * connections.
 *
 * Ports not given are chosen free beforehand; if the child then exits before listening (another
 * process took a port), it is started again on new ports, up to 3 times. Start-up fails after
 * `startTimeoutMs` (default 20 s) with the child's output in the error. The child never outlives
 * this process: it is killed when this process exits, and it exits by itself when its stdin pipe
 * from this process closes.
 *
 * @example
 * ```ts
 * const storage = await startAzuriteProcess();
 * const queues = QueueServiceClient.fromConnectionString(storage.connectionString);
 * // …
 * await storage.stop(); // SIGTERM, SIGKILL after 5 s, resolves once the child has exited
 * ```
 */
export async function startAzuriteProcess(options: StartAzuriteProcessOptions = {}): Promise<AzuriteProcess> {
  const requested = requestedPorts(options);
  const limitMb = extentMemoryLimitMb(options);
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_PROCESS_START_TIMEOUT_MS;
  const anyRandom = requested.blob === 0 || requested.queue === 0 || requested.table === 0;
  const attempts = anyRandom ? PROCESS_START_ATTEMPTS : 1;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const free = anyRandom ? await findFreePorts(3) : [];
    const ports: Ports = {
      blob: requested.blob || (free[0] ?? 0),
      queue: requested.queue || (free[1] ?? 0),
      table: requested.table || (free[2] ?? 0),
    };
    try {
      return await launchAzuriteProcess(ports, limitMb, timeoutMs);
    } catch (err) {
      lastError = err;
      if (!(err instanceof ChildExitedError)) {
        throw err;
      }
    }
  }
  throw lastError;
}

async function launchAzuriteProcess(ports: Ports, limitMb: number, timeoutMs: number): Promise<AzuriteProcess> {
  // Nothing is written with in-memory persistence, but Azurite still uses its location (the
  // working directory; it refuses --location together with --inMemoryPersistence) for LokiJS file
  // names it stat()s and would load. An empty private directory as cwd keeps it away from ours.
  const location = await mkdtemp(join(tmpdir(), 'jobq-local-azurite-'));
  const args = [
    '-e',
    WATCHDOG,
    '--',
    azuriteCli(),
    '--inMemoryPersistence',
    '--silent',
    '--loose',
    '--skipApiVersionCheck',
    '--disableTelemetry',
    '--extentMemoryLimit',
    String(limitMb),
    '--blobHost',
    LOOPBACK,
    '--queueHost',
    LOOPBACK,
    '--tableHost',
    LOOPBACK,
    '--blobPort',
    String(ports.blob),
    '--queuePort',
    String(ports.queue),
    '--tablePort',
    String(ports.table),
  ];
  const env = { ...process.env };
  delete env['AZURITE_ACCOUNTS']; // would replace the devstoreaccount1 credentials returned here
  env[LOCATION_ENV] = location;
  const child = spawn(process.execPath, args, { cwd: location, env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });

  const stdout = new OutputTail();
  const stderr = new OutputTail();
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  // EPIPE when the child is gone is expected; nothing is ever written to its stdin.
  child.stdin.on('error', () => undefined);
  let spawnError: Error | undefined;
  let exitStatus: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('error', (err) => {
      spawnError = err;
      // 'close' does not follow when the process could not be spawned at all.
      if (child.pid === undefined) {
        exitStatus = `spawn failed: ${err.message}`;
        resolve();
      }
    });
    child.once('close', (code, signal) => {
      exitStatus = signal === null ? `exit code ${String(code)}` : `signal ${signal}`;
      resolve();
    });
  });

  const entry: LiveChild = {
    kill: () => {
      if (exitStatus === undefined) {
        child.kill('SIGKILL');
      }
    },
    location,
  };
  liveChildren.add(entry);
  installExitHook();

  const kill = async (): Promise<void> => {
    if (exitStatus === undefined) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), PROCESS_KILL_GRACE_MS);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    }
    liveChildren.delete(entry);
    await rm(location, { recursive: true, force: true });
  };

  const details = (): string =>
    `ports blob ${ports.blob}, queue ${ports.queue}, table ${ports.table}\n` +
    `--- stderr (tail) ---\n${stderr.toString()}\n--- stdout (tail) ---\n${stdout.toString()}`;

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exitStatus !== undefined) {
      await kill();
      const cause = spawnError === undefined ? '' : ` (${spawnError.message})`;
      throw new ChildExitedError(`Azurite child process exited before listening: ${exitStatus}${cause}; ${details()}`);
    }
    const open = await Promise.all([ports.blob, ports.queue, ports.table].map((port) => canConnect(port)));
    if (open.every(Boolean) && exitStatus === undefined) {
      break;
    }
    if (Date.now() >= deadline) {
      await kill();
      throw new Error(`Azurite child process did not accept connections within ${timeoutMs} ms; ${details()}`);
    }
    await Promise.race([delay(50), exited]);
  }

  const pid = child.pid;
  if (pid === undefined) {
    await kill();
    throw new Error(`Azurite child process has no pid; ${details()}`);
  }
  return { ...describe(ports), pid, stop: once(kill) };
}
