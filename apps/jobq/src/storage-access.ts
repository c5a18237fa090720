import {
  chooseStorageConnection,
  describeConnectionString,
  type ConnectionStringCandidate,
  type StorageConnectionChoice,
} from '@jobq/azure-pipeline';
import type { CliConfig } from './config';

/** How the commands reach one storage account, as `config show` and `workflow doctor` report it. Never holds a secret. */
export interface StorageAccess {
  account: string;
  /** `connection string` (its key, SAS or, with endpoints only, DefaultAzureCredential), the local emulator, or DefaultAzureCredential. */
  uses: 'connection string' | 'local emulator' | 'DefaultAzureCredential';
  /** Where the connection string came from (a variable, a config file key); null otherwise. */
  from: string | null;
  /** What the requests are signed with. */
  credential: 'account key' | 'SAS' | 'DefaultAzureCredential';
  /** Why a configured connection string is not used for this account; null when there is nothing to say. */
  note: string | null;
}

/** Where the configured connection string came from, in words. */
function connectionStringOrigin(config: CliConfig): string {
  const { source, from } = config.connectionString;
  if (from === null) return 'the local stack';
  return source === 'file' ? `config file ${from}` : from;
}

/** The configured connection string as the one candidate of {@link chooseStorageConnection}. */
export function connectionCandidates(config: CliConfig): ConnectionStringCandidate[] {
  const value = config.connectionString.value;
  return value === null ? [] : [{ from: connectionStringOrigin(config), value }];
}

/** How the commands reach `account`: the same choice the adapters are built with. */
export function storageChoice(config: CliConfig, account: string): StorageConnectionChoice {
  return chooseStorageConnection(account, connectionCandidates(config));
}

/** The storage accounts the configuration uses: the prefix's, the queues' and the blobs' (else the connection string's own). */
export function configuredAccounts(config: CliConfig): string[] {
  const accounts: string[] = [];
  if (config.prefix.value !== null) accounts.push(config.prefix.value.account);
  const queues = config.queues.value;
  if (queues !== null && !queues.startsWith('sb://')) accounts.push(queues);
  const blobs = config.blobs.value;
  if (blobs !== null) accounts.push(blobs.split('/')[0] ?? blobs);
  if (accounts.length === 0 && config.connectionString.value !== null) {
    const own = describeConnectionString(config.connectionString.value).account;
    if (own !== null) accounts.push(own);
  }
  return [...new Set(accounts)];
}

/** What is really used for each account of the configuration. */
export function storageAccess(config: CliConfig): StorageAccess[] {
  return configuredAccounts(config).map((account) => {
    const { source } = storageChoice(config, account);
    switch (source.kind) {
      case 'connection-string':
        return {
          account,
          uses: 'connection string',
          from: source.from,
          credential: source.credential === 'none' ? 'DefaultAzureCredential' : source.credential,
          note: null,
        };
      case 'development-storage':
        return { account, uses: 'local emulator', from: null, credential: 'account key', note: null };
      case 'default-credential': {
        const notes = source.passedOver.map((p) =>
          p.account === null
            ? `the connection string from ${p.from} names no account (no AccountName, no account in its endpoints): not used`
            : `the connection string from ${p.from} is for account ${p.account}: not used for ${account}`,
        );
        return {
          account,
          uses: 'DefaultAzureCredential',
          from: null,
          credential: 'DefaultAzureCredential',
          note: notes.length > 0 ? notes.join('; ') : null,
        };
      }
    }
  });
}

/** One line for an account, e.g. `myacct: connection string from JOBQ_STORAGE_CONNECTION_STRING (SAS)`. */
export function storageAccessLine(access: StorageAccess): string {
  switch (access.uses) {
    case 'connection string':
      return `${access.account}: connection string from ${access.from ?? '?'} (${access.credential === 'DefaultAzureCredential' ? 'endpoints only: DefaultAzureCredential' : access.credential})`;
    case 'local emulator':
      return `${access.account}: the local storage emulator on its default ports (UseDevelopmentStorage=true)`;
    case 'DefaultAzureCredential':
      return `${access.account}: DefaultAzureCredential${access.note === null ? '' : ` (${access.note})`}`;
  }
}
