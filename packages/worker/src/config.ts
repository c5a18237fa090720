import { JobqError } from '@jobq/ports';

/** `ACCOUNT/PREFIX` of a deployment (SPEC §1). */
export interface WorkflowPrefix {
  account: string;
  prefix: string;
}

/** What the workflow processor and the task helpers read from the environment (SPEC §8.3, §10). */
export interface WorkflowEnvironment {
  prefix: WorkflowPrefix;
  /** `JOBQ_WORKFLOW_QUEUES`: `ACCOUNT` or `sb://NAMESPACE`; null when unset. */
  queues: string | null;
  /** `JOBQ_WORKFLOW_BLOBS`: `ACCOUNT/CONTAINER`; null when unset. */
  blobs: string | null;
}

/** An environment variable, with empty counting as unset (SPEC §1). */
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

/**
 * How to reach a storage account from the environment (SPEC §10): `devstoreaccount1` is Azurite
 * (`JOBQ_STORAGE_CONNECTION_STRING` when set, else the default local ports); an account whose name
 * matches the `AccountName` of `JOBQ_STORAGE_CONNECTION_STRING` or `AZURE_STORAGE_CONNECTION_STRING`
 * uses that string; any other account its name and `DefaultAzureCredential`.
 */
export function storageConnectionFor(account: string, env: NodeJS.ProcessEnv): { connectionString: string } | { accountName: string } {
  for (const name of ['JOBQ_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_CONNECTION_STRING']) {
    const value = envValue(env, name);
    if (value === null) continue;
    const accountName = /(?:^|;)\s*AccountName\s*=\s*([^;]+)/i.exec(value)?.[1]?.trim();
    if (accountName === account || (accountName === undefined && /UseDevelopmentStorage\s*=\s*true/i.test(value) && account === 'devstoreaccount1')) {
      return { connectionString: value };
    }
  }
  if (account === 'devstoreaccount1') return { connectionString: 'UseDevelopmentStorage=true' };
  return { accountName: account };
}
