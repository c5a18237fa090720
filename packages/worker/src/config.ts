import { JobqError } from '@jobq/ports';

/** `ACCOUNT/PREFIX` of a deployment (docs/design.md#names). */
export interface WorkflowPrefix {
  account: string;
  prefix: string;
}

/** What the workflow processor and the task helpers read from the environment (docs/design.md#the-workflow-processor, docs/design.md#queues-and-backends). */
export interface WorkflowEnvironment {
  prefix: WorkflowPrefix;
  /** `JOBQ_WORKFLOW_QUEUES`: `ACCOUNT` or `sb://NAMESPACE`; null when unset. */
  queues: string | null;
  /** `JOBQ_WORKFLOW_BLOBS`: `ACCOUNT/CONTAINER`; null when unset. */
  blobs: string | null;
}

/** An environment variable, with empty counting as unset (docs/design.md#names). */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = env[name];
  return value === undefined || value.trim() === '' ? null : value.trim();
}

/** Parses `ACCOUNT/PREFIX`; a clear `invalid-config` error otherwise. */
export function parseWorkflowPrefix(text: string, source = 'JOBQ_WORKFLOW_PREFIX'): WorkflowPrefix {
  const match = /^([a-z0-9]{3,24})\/([A-Za-z][A-Za-z0-9]{0,31})$/.exec(text);
  if (!match) {
    throw new JobqError(
      'invalid-config',
      `${source} must be ACCOUNT/PREFIX (a storage account name, "/", then a letter and up to 31 letters or digits), got "${text}"`,
    );
  }
  return { account: match[1]!, prefix: match[2]! };
}

/**
 * Reads the workflow settings a workflow task needs. Without `JOBQ_WORKFLOW_PREFIX` this is a clear
 * `invalid-config` error (the worker then exits and leaves the message).
 */
export function workflowEnvironment(env: NodeJS.ProcessEnv): WorkflowEnvironment {
  const prefix = envValue(env, 'JOBQ_WORKFLOW_PREFIX');
  if (prefix === null) {
    throw new JobqError('invalid-config', 'JOBQ_WORKFLOW_PREFIX is not set: a worker that runs workflow tasks needs ACCOUNT/PREFIX of the deployment');
  }
  return { prefix: parseWorkflowPrefix(prefix), queues: envValue(env, 'JOBQ_WORKFLOW_QUEUES'), blobs: envValue(env, 'JOBQ_WORKFLOW_BLOBS') };
}

/** The environment variables a storage connection string is read from, in this order. */
export const CONNECTION_STRING_VARIABLES = ['JOBQ_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_CONNECTION_STRING'] as const;

/** The account Azurite serves (`UseDevelopmentStorage=true`). */
const DEVELOPMENT_ACCOUNT = 'devstoreaccount1';

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

function connectionStringFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of text.split(';')) {
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
  if (/^\s*UseDevelopmentStorage\s*=\s*true\s*;?\s*$/i.test(text)) return { account: DEVELOPMENT_ACCOUNT, credential: 'account key' };
  const fields = connectionStringFields(text);
  const credential: ConnectionStringCredential = fields.get('accountkey') ? 'account key' : fields.get('sharedaccesssignature') ? 'SAS' : 'none';
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
      return { connection: { connectionString: candidate.value }, source: { kind: 'connection-string', from: candidate.from, credential: info.credential } };
    }
    passedOver.push({ from: candidate.from, account: info.account });
  }
  if (wanted === DEVELOPMENT_ACCOUNT) return { connection: { connectionString: 'UseDevelopmentStorage=true' }, source: { kind: 'development-storage' } };
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
