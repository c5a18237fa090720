import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { LocalStorage, ServiceBusEmulator, ServiceBusOptions, StartAzuriteOptions } from '@jobq/local';
import type { CliConfig } from './config';

/** What `workflow run` and `jobq dev` say when `@jobq/local` is not installed. */
export const EMBEDDED_STACK_MISSING = 'the embedded stack is not installed in this image';

/**
 * `@jobq/local` (Azurite and the local Service Bus broker), loaded only by the commands that start
 * an embedded stack: it is an optional dependency of the CLI, left out of production images
 * (`pnpm deploy --no-optional`, see deploy/README.md). Absent: a one-line error, exit 1.
 */
export async function loadLocalStack(): Promise<typeof import('@jobq/local')> {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS require keeps the load lazy (an import() would load it as ECMAScript)
    return await Promise.resolve().then(() => require('@jobq/local') as typeof import('@jobq/local'));
  } catch (error) {
    if (isMissingLocalStack(error))
      throw new Error(`${EMBEDDED_STACK_MISSING} (@jobq/local, an optional dependency of @jobq/cli, is absent)`);
    throw error;
  }
}

function isMissingLocalStack(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes("'@jobq/local'");
}

/** The prefix of the embedded stack. */
export const EMBEDDED_ACCOUNT = 'devstoreaccount1';
export const EMBEDDED_PREFIX = 'Local';

/** The built CLI entry point, handed to task scripts as `$JOBQ_CLI`. */
export const CLI_ENTRY = join(__dirname, '..', 'bin', 'run.js');

/** An in-memory Azurite on loopback (and a local Service Bus broker when asked) and the configuration that points at them. */
export interface EmbeddedStorage {
  storage: LocalStorage;
  /** Null unless a broker was asked for. */
  serviceBus: ServiceBusEmulator | null;
  /** The caller's configuration with the prefix and connection strings of the embedded stack. */
  config: CliConfig;
  /** Stops the broker and Azurite; idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedStorage}. */
export interface EmbeddedStorageOptions {
  storage?: StartAzuriteOptions;
  /**
   * Start a local Service Bus broker too (`sb://local`): every `sb://…` queue lives on it, and with
   * `completions` the completion queue and bare queue names too (`--queues sb://local`).
   */
  serviceBus?: { completions: boolean; port?: number; adminPort?: number } | null;
}

/**
 * jobq's queue settings (see packages/queue-servicebus/README.md) as the local broker's defaults,
 * so a queue a client creates by attaching to it (one without the admin endpoint) gets them too.
 */
export const LOCAL_BROKER_QUEUE_DEFAULTS = {
  lockDurationMs: 30_000,
  maxDeliveryCount: 1_000,
  requiresDuplicateDetection: true,
  duplicateDetectionHistoryTimeWindowMs: 600_000,
  defaultMessageTimeToLiveMs: Number.POSITIVE_INFINITY,
};

/** A local Service Bus broker on 127.0.0.1 (random ports by default), with its admin endpoint. Nothing is kept on disk. */
export async function startLocalServiceBus(options: { port?: number; adminPort?: number } = {}): Promise<ServiceBusEmulator> {
  const { startServiceBus } = await loadLocalStack();
  return startServiceBus(localServiceBusOptions(options));
}

function localServiceBusOptions(options: { port?: number; adminPort?: number }): ServiceBusOptions {
  return { port: options.port ?? 0, adminPort: options.adminPort ?? 0, defaults: LOCAL_BROKER_QUEUE_DEFAULTS };
}

/**
 * Starts the embedded storage (in-memory Azurite on 127.0.0.1, random ports) and, when asked, a
 * local Service Bus broker, and returns a configuration for `devstoreaccount1/Local` on them.
 * Queues and blobs settings of the caller's configuration are dropped: everything lives on the
 * local stack.
 */
export async function startEmbeddedStorage(base: CliConfig, options: EmbeddedStorageOptions = {}): Promise<EmbeddedStorage> {
  const sb = options.serviceBus;
  const { startLocalStack } = await loadLocalStack();
  const stack = await startLocalStack({
    storage: options.storage ?? {},
    ...(sb ? { serviceBus: localServiceBusOptions(sb) } : {}),
  });
  const serviceBus = stack.serviceBus;
  return {
    storage: stack.storage,
    serviceBus,
    config: embeddedConfig(
      base,
      stack.storageConnectionString,
      serviceBus === null ? null : { broker: serviceBus, completions: sb?.completions ?? false },
    ),
    stop: () => stack.stop(),
  };
}

/**
 * `base` pointed at `devstoreaccount1/Local` on a local Azurite and, with `serviceBus`, its broker
 * (`sb://local`; with `completions`, `--queues sb://local`); its queues and blobs settings dropped.
 */
export function embeddedConfig(
  base: CliConfig,
  connectionString: string,
  serviceBus: { broker: Pick<ServiceBusEmulator, 'connectionString' | 'adminEndpoint'>; completions: boolean } | null = null,
): CliConfig {
  return {
    ...base,
    prefix: { value: { account: EMBEDDED_ACCOUNT, prefix: EMBEDDED_PREFIX }, source: 'default', from: null },
    queues: serviceBus?.completions
      ? { value: 'sb://local', source: 'default', from: null }
      : { value: null, source: 'default', from: null },
    blobs: { value: null, source: 'default', from: null },
    connectionString: { value: connectionString, source: 'default', from: null, secret: true },
    serviceBusConnectionString: { value: serviceBus?.broker.connectionString ?? null, source: 'default', from: null, secret: true },
    serviceBusAdminEndpoint: { value: serviceBus?.broker.adminEndpoint ?? null, source: 'default', from: null },
  };
}

/** The empty-queue back-off cap of local workers (`workflow run`, `jobq dev`). */
export const LOCAL_MAX_IDLE_BACKOFF_IN_MS = 1_000;

/** Settings that point task scripts at another deployment; a local stack sets its own. */
const FOREIGN_SETTINGS = [
  'JOBQ_WORKFLOW_PREFIX',
  'JOBQ_WORKFLOW_QUEUES',
  'JOBQ_WORKFLOW_BLOBS',
  'JOBQ_STORAGE_CONNECTION_STRING',
  'AZURE_STORAGE_CONNECTION_STRING',
  'JOBQ_SERVICEBUS_CONNECTION_STRING',
  'JOBQ_SERVICEBUS_ADMIN_ENDPOINT',
];

/**
 * The environment of workers started by the CLI itself: `jobq` on the tasks' PATH (and `$JOBQ_CLI`).
 * With `local` (an embedded or dev stack) other deployments' settings are removed, a cancel is seen
 * within a second and a stopped task gets 10 s before SIGKILL (unless the environment says otherwise).
 */
export async function localWorkerEnvironment(local: boolean): Promise<{ env: NodeJS.ProcessEnv; cleanup: () => Promise<void> }> {
  const shim = await createCliShim();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    JOBQ_CLI: CLI_ENTRY,
    PATH: [shim.dir, process.env.PATH].filter(Boolean).join(delimiter),
  };
  if (local) {
    for (const name of FOREIGN_SETTINGS) delete env[name];
    if ((env.JOBQ_CANCEL_POLL_INTERVAL ?? '').trim() === '') env.JOBQ_CANCEL_POLL_INTERVAL = '1';
    if ((env.JOBQ_KILL_TIMEOUT ?? '').trim() === '') env.JOBQ_KILL_TIMEOUT = '10';
  }
  return { env, cleanup: shim.cleanup };
}

/**
 * A directory holding a `jobq` executable that runs this CLI with this Node, for the PATH of tasks
 * run by local workers: task scripts can call `jobq task get-upstream …` whether or not the CLI is
 * installed. Removed by `cleanup`.
 */
export async function createCliShim(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'jobq-bin-'));
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  await writeFile(join(dir, 'jobq'), `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(CLI_ENTRY)} "$@"\n`, { mode: 0o755 });
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
