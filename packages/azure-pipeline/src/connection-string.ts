import { envValue } from '@jobq/ports';

// Storage connection strings, read in one place for every adapter (`@jobq/store-azure`,
// `@jobq/queue-storage`), and how an account is reached (see this package's README).

/** The environment variables a storage connection string is read from, in this order. */
export const CONNECTION_STRING_VARIABLES = ['JOBQ_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_CONNECTION_STRING'] as const;

/** The account Azurite serves (`UseDevelopmentStorage=true`). */
const DEVELOPMENT_ACCOUNT = 'devstoreaccount1';

/** What `UseDevelopmentStorage=true` stands for: Azurite's well-known development account (public, documented by Microsoft). */
const DEVELOPMENT_STORAGE =
  'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;' +
  'BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;';

/** True for Azurite's shorthand `UseDevelopmentStorage=true`. */
function isDevelopmentStorage(text: string): boolean {
  return /^\s*UseDevelopmentStorage\s*=\s*true\s*;?\s*$/i.test(text);
}

/** What a connection string authenticates with: an account key, a SAS, or nothing (endpoints only: a token credential). */
export type ConnectionStringCredential = 'account key' | 'SAS' | 'none';

/** What a connection string says, read without keeping or quoting its secret. */
export interface ConnectionStringInfo {
  /**
   * The account it is for, lowercased: its `AccountName`, else the account of its endpoints
   * (`https://ACCOUNT.blob.core.windows.net`, or the first path segment of an emulator endpoint
   * such as `http://127.0.0.1:10000/devstoreaccount1`); null when it names none.
   */
  account: string | null;
  credential: ConnectionStringCredential;
}

/**
 * The `Key=Value` fields of a connection string, keys lowercased (`accountname`, `blobendpoint`,
 * `sharedaccesssignature`, …), values trimmed; `UseDevelopmentStorage=true` reads as Azurite's
 * development account with its default endpoints. Never throws; errors built from the fields must
 * not quote them.
 */
export function connectionStringFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of (isDevelopmentStorage(text) ? DEVELOPMENT_STORAGE : text).split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return fields;
}

/** The account of a service endpoint URL: the host's first label on Azure, else the first path segment. */
function endpointAccount(endpoint: string): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return null;
  }
  const host = /^([a-z0-9]{3,24})\.(?:blob|queue|table|file|dfs)\./.exec(url.hostname.toLowerCase());
  if (host) return host[1]!;
  const segment = url.pathname.split('/').find((s) => s !== '');
  return segment === undefined ? null : decodeURIComponent(segment).toLowerCase();
}

/** Reads the account and the kind of credential of a connection string. Never throws, never keeps the secret. */
export function describeConnectionString(text: string): ConnectionStringInfo {
  if (isDevelopmentStorage(text)) return { account: DEVELOPMENT_ACCOUNT, credential: 'account key' };
  const fields = connectionStringFields(text);
  const credential: ConnectionStringCredential = fields.get('accountkey')
    ? 'account key'
    : fields.get('sharedaccesssignature')
      ? 'SAS'
      : 'none';
  const named = fields.get('accountname');
  if (named) return { account: named.toLowerCase(), credential };
  for (const service of ['blob', 'queue', 'table']) {
    const endpoint = fields.get(`${service}endpoint`);
    const account = endpoint ? endpointAccount(endpoint) : null;
    if (account !== null) return { account, credential };
  }
  return { account: null, credential };
}

/** A connection string offered by the configuration, and where it came from (a variable name, or a config file key). */
export interface ConnectionStringCandidate {
  from: string;
  value: string;
}

/** How an account is reached, and why. */
export type StorageConnectionSource =
  | { kind: 'connection-string'; from: string; credential: ConnectionStringCredential }
  /** Azurite on its default local ports (`UseDevelopmentStorage=true`), for `devstoreaccount1` without a string for it. */
  | { kind: 'development-storage' }
  /** The account name with `DefaultAzureCredential`; `passedOver` lists the strings that are for other accounts. */
  | { kind: 'default-credential'; passedOver: Array<{ from: string; account: string | null }> };

/** The connection chosen for an account by {@link chooseStorageConnection}. */
export interface StorageConnectionChoice {
  connection: { connectionString: string } | { accountName: string };
  source: StorageConnectionSource;
}

/**
 * Chooses how to reach a storage account: the first candidate connection string that is for it
 * (see {@link describeConnectionString}; names compare case-insensitively) — with an account key,
 * a SAS, or only endpoints (then `DefaultAzureCredential` on those endpoints); else Azurite's
 * default ports for `devstoreaccount1`; else the account name with `DefaultAzureCredential`.
 */
export function chooseStorageConnection(account: string, candidates: readonly ConnectionStringCandidate[]): StorageConnectionChoice {
  const wanted = account.toLowerCase();
  const passedOver: Array<{ from: string; account: string | null }> = [];
  for (const candidate of candidates) {
    const info = describeConnectionString(candidate.value);
    if (info.account === wanted) {
      return {
        connection: { connectionString: candidate.value },
        source: { kind: 'connection-string', from: candidate.from, credential: info.credential },
      };
    }
    passedOver.push({ from: candidate.from, account: info.account });
  }
  if (wanted === DEVELOPMENT_ACCOUNT)
    return { connection: { connectionString: 'UseDevelopmentStorage=true' }, source: { kind: 'development-storage' } };
  return { connection: { accountName: account }, source: { kind: 'default-credential', passedOver } };
}

/** The connection strings of the environment ({@link CONNECTION_STRING_VARIABLES}), in order. */
export function connectionStringCandidates(env: NodeJS.ProcessEnv): ConnectionStringCandidate[] {
  const out: ConnectionStringCandidate[] = [];
  for (const name of CONNECTION_STRING_VARIABLES) {
    const value = envValue(env, name);
    if (value !== null) out.push({ from: name, value });
  }
  return out;
}

/**
 * How to reach a storage account from the environment (see {@link chooseStorageConnection}):
 * `JOBQ_STORAGE_CONNECTION_STRING`, then `AZURE_STORAGE_CONNECTION_STRING`, when it is for that
 * account; Azurite's default ports for `devstoreaccount1`; else `DefaultAzureCredential`.
 */
export function storageConnectionFor(account: string, env: NodeJS.ProcessEnv): { connectionString: string } | { accountName: string } {
  return chooseStorageConnection(account, connectionStringCandidates(env)).connection;
}
