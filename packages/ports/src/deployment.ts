import { JobqError } from './errors';

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
    throw new JobqError(
      'invalid-config',
      'JOBQ_WORKFLOW_PREFIX is not set: a worker that runs workflow tasks needs ACCOUNT/PREFIX of the deployment',
    );
  }
  return {
    prefix: parseWorkflowPrefix(prefix),
    queues: envValue(env, 'JOBQ_WORKFLOW_QUEUES'),
    blobs: envValue(env, 'JOBQ_WORKFLOW_BLOBS'),
  };
}
