import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startAzurite, type LocalStorage, type StartAzuriteOptions } from '@jobq/local';
import type { CliConfig } from './config';

/** The prefix of the embedded stack. */
export const EMBEDDED_ACCOUNT = 'devstoreaccount1';
export const EMBEDDED_PREFIX = 'Local';

/** The built CLI entry point, handed to task scripts as `$JOBQ_CLI`. */
export const CLI_ENTRY = join(__dirname, '..', 'bin', 'run.js');

/** An in-memory Azurite on loopback and the configuration that points at it. */
export interface EmbeddedStorage {
  storage: LocalStorage;
  /** The caller's configuration with the prefix and connection string of the embedded stack. */
  config: CliConfig;
}

/**
 * Starts the embedded storage (in-memory Azurite on 127.0.0.1, random ports) and returns a
 * configuration for `devstoreaccount1/Local` on it. Queues and blobs settings of the caller's
 * configuration are dropped: everything lives on the local stack.
 */
export async function startEmbeddedStorage(base: CliConfig, options: StartAzuriteOptions = {}): Promise<EmbeddedStorage> {
  const storage = await startAzurite(options);
  return { storage, config: embeddedConfig(base, storage.connectionString) };
}

/** `base` pointed at `devstoreaccount1/Local` on a local Azurite; its queues and blobs settings dropped. */
export function embeddedConfig(base: CliConfig, connectionString: string): CliConfig {
  return {
    ...base,
    prefix: { value: { account: EMBEDDED_ACCOUNT, prefix: EMBEDDED_PREFIX }, source: 'default', from: null },
    queues: { value: null, source: 'default', from: null },
    blobs: { value: null, source: 'default', from: null },
    connectionString: { value: connectionString, source: 'default', from: null, secret: true },
    serviceBusConnectionString: { value: null, source: 'default', from: null, secret: true },
    serviceBusAdminEndpoint: { value: null, source: 'default', from: null },
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
  const env: NodeJS.ProcessEnv = { ...process.env, JOBQ_CLI: CLI_ENTRY, PATH: [shim.dir, process.env.PATH].filter(Boolean).join(delimiter) };
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
