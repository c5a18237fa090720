import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type LocalStorage } from '@jobq/local';
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
export async function startEmbeddedStorage(base: CliConfig): Promise<EmbeddedStorage> {
  const storage = await startAzurite();
  const config: CliConfig = {
    ...base,
    prefix: { value: { account: EMBEDDED_ACCOUNT, prefix: EMBEDDED_PREFIX }, source: 'default', from: null },
    queues: { value: null, source: 'default', from: null },
    blobs: { value: null, source: 'default', from: null },
    connectionString: { value: storage.connectionString, source: 'default', from: null, secret: true },
  };
  return { storage, config };
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
