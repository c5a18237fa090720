import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AZURITE_ACCOUNT_KEY, startAzurite, type LocalStorage } from '@jobq/local';
import { cleanEnv } from './cli';

/** An in-process Azurite and a scratch folder for one test file. */
export interface TestStorage {
  azurite: LocalStorage;
  dir: string;
  /** A child environment pointing at Azurite, with `JOBQ_WORKFLOW_PREFIX=devstoreaccount1/{prefix}` unless prefix is null. */
  env(prefix: string | null): NodeJS.ProcessEnv;
  /** Writes a file into the scratch folder and returns its path. */
  file(name: string, text: string): Promise<string>;
  stop(): Promise<void>;
}

let counter = 0;

/** A prefix no other test uses: letters and digits, starting with a letter. */
export function uniquePrefix(base: string): string {
  counter++;
  return `${base}${process.pid}x${counter}`.replace(/[^A-Za-z0-9]/g, '').slice(0, 32);
}

export async function startTestStorage(): Promise<TestStorage> {
  const azurite = await startAzurite();
  const dir = await mkdtemp(join(tmpdir(), 'jobq-cli-'));
  return {
    azurite,
    dir,
    env: (prefix) =>
      cleanEnv({
        JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString,
        ...(prefix === null ? {} : { JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${prefix}` }),
      }),
    file: async (name, text) => {
      const path = join(dir, name);
      await writeFile(path, text);
      return path;
    },
    stop: async () => {
      await rm(dir, { recursive: true, force: true });
      await azurite.stop();
    },
  };
}

/** A workflow of `a` then `b` (echo commands). */
export const TWO_TASKS =
  'name: two\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: echo b}\n';

/** A root and three tasks of one layer (`fan-001` … `fan-003`). */
export const FAN_OUT =
  'name: fan\ntasks:\n  - name: root\n    kwargs: {cmd: echo r}\n' +
  [1, 2, 3].map((i) => `  - name: fan-00${i}\n    depends_on: [root]\n    kwargs: {cmd: echo ${i}}\n`).join('');

/** The few parts of `@azure/storage-blob` that sign an account SAS (the CLI does not depend on the SDK itself). */
interface SasSdk {
  generateAccountSASQueryParameters(
    values: { expiresOn: Date; permissions: unknown; services: string; resourceTypes: string; protocol: string },
    credential: unknown,
  ): { toString(): string; signature: string };
  AccountSASPermissions: { parse(text: string): unknown };
  AccountSASServices: { parse(text: string): { toString(): string } };
  AccountSASResourceTypes: { parse(text: string): { toString(): string } };
  StorageSharedKeyCredential: new (account: string, key: string) => unknown;
}

/**
 * A SAS connection string for Azurite (`BlobEndpoint=…;QueueEndpoint=…;TableEndpoint=…;SharedAccessSignature=…`, no
 * AccountName): an account SAS for blobs, queues and tables, valid for an hour; and its signature, which must never be printed.
 */
export function sasConnectionString(azurite: LocalStorage): { connectionString: string; signature: string } {
  // The SDK as a dependency of @jobq/store-azure.
  const sdk = createRequire(join(__dirname, '..', '..', '..', '..', 'packages', 'store-azure', 'package.json'))(
    '@azure/storage-blob',
  ) as SasSdk;
  const sas = sdk.generateAccountSASQueryParameters(
    {
      expiresOn: new Date(Date.now() + 3_600_000),
      permissions: sdk.AccountSASPermissions.parse('rwdlacup'),
      services: sdk.AccountSASServices.parse('bqt').toString(),
      resourceTypes: sdk.AccountSASResourceTypes.parse('sco').toString(),
      protocol: 'https,http',
    },
    new sdk.StorageSharedKeyCredential(azurite.accountName, AZURITE_ACCOUNT_KEY),
  );
  return {
    connectionString: `BlobEndpoint=${azurite.blobEndpoint};QueueEndpoint=${azurite.queueEndpoint};TableEndpoint=${azurite.tableEndpoint};SharedAccessSignature=${sas.toString()}`,
    signature: sas.signature,
  };
}
