import { readFile, stat } from 'node:fs/promises';
import {
  JobqError,
  TASK_SOCKET_VARIABLE,
  TASK_TOKEN_VARIABLE,
  envValue,
  errorMessage,
  workflowEnvironment,
  type OutputStore,
} from '@jobq/ports';
import { TaskChannelClient, type TaskStorage } from './channel-client';

/**
 * Decides whether the workflow of the running task has been cancelled. May be sync or async.
 * Receives the workflow id (`JOBQ_WORKFLOW_ID`) and the environment the helpers read.
 */
export type CancellationChecker = (workflowId: string, env: NodeJS.ProcessEnv) => boolean | Promise<boolean>;

/** Options of {@link configureTaskHelpers}. */
export interface TaskHelpersOptions {
  /**
   * The output store to read upstream blob outputs and stashed files from (and stash files to).
   * Default: inside a worker, the worker's task channel (`JOBQ_TASK_SOCKET`); outside one, a store
   * built on first use from the environment with `@jobq/store-azure`.
   */
  outputs?: OutputStore;
  /** The environment to read the `JOBQ_*` variables from. Default: `process.env` (read at each call). */
  env?: NodeJS.ProcessEnv;
  /**
   * Replaces the default cancellation check of `isCancelled()` (which looks for the file named by
   * `JOBQ_WORKFLOW_CANCEL_FILE`), e.g. with one that reads the workflow index.
   */
  isCancelled?: CancellationChecker;
}

let settings: TaskHelpersOptions = {};
/** The store built from the environment, with the environment values it was built from. */
let defaultStore: { key: string; store: Promise<OutputStore> } | undefined;

/**
 * Configures the task helpers of this process: inject an {@link OutputStore}, an environment or a
 * cancellation check. Each call replaces the previous configuration as a whole (omitted options go
 * back to their defaults), and drops the store the helpers built from the environment, if any.
 * Call it with no argument to restore every default.
 */
export function configureTaskHelpers(options: TaskHelpersOptions = {}): void {
  settings = { ...options };
  defaultStore = undefined;
}

/** The environment the helpers read now. */
export function helperEnv(): NodeJS.ProcessEnv {
  return settings.env ?? process.env;
}

/** The injected cancellation check, if any. */
export function injectedCancellationChecker(): CancellationChecker | undefined {
  return settings.isCancelled;
}

/**
 * The value of a variable the workflow processor sets for every workflow task; when it is missing
 * the caller is not inside a workflow task: a clear `invalid-config` error naming the helper.
 */
export function requireTaskEnv(helper: string, name: string): string {
  const value = envValue(helperEnv(), name);
  if (value === null) {
    throw new JobqError('invalid-config', `${helper}() can only be called inside a jobq workflow task (${name} is not set)`);
  }
  return value;
}

/** `JOBQ_WORKFLOW_ID` and `JOBQ_WORKFLOW_TASK` of the running task (clear errors when unset). */
export function taskIdentity(helper: string): { workflowId: string; taskName: string } {
  return { workflowId: requireTaskEnv(helper, 'JOBQ_WORKFLOW_ID'), taskName: requireTaskEnv(helper, 'JOBQ_WORKFLOW_TASK') };
}

/** Reads and parses a JSON file the workflow processor wrote; `corrupt` when it cannot. */
export async function readJsonFile(path: string, variable: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new JobqError('invalid-config', `cannot read ${variable} file "${path}": ${errorMessage(error)}`, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new JobqError('corrupt', `${variable} file "${path}" is not valid JSON: ${errorMessage(error)}`, { cause: error });
  }
}

/** True when a file exists at `path` (false for ENOENT/ENOTDIR; other errors are thrown). */
export async function fileExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw new JobqError('internal', `cannot check "${path}": ${errorMessage(error)}`, { cause: error });
  }
}

/**
 * Opens the output store of the environment's deployment. `@jobq/store-azure` (and the Azure SDK
 * under it) is loaded only here, on first use: inside a worker the helpers never need it.
 */
async function buildDefaultStore(env: NodeJS.ProcessEnv): Promise<OutputStore> {
  const workflow = workflowEnvironment(env);
  const storeAzure = await import('@jobq/store-azure');
  const blobs = workflow.blobs === null ? null : storeAzure.parseWorkflowBlobs(workflow.blobs);
  return storeAzure.openOutputStore({
    connection: storeAzure.storageConnectionFor(workflow.prefix.account, env),
    prefix: workflow.prefix.prefix,
    ...(blobs ? { outputs: { connection: storeAzure.storageConnectionFor(blobs.account, env), container: blobs.container } } : {}),
  });
}

/** The client of the worker's task channel at `socket` (the token comes from the same environment). */
function taskChannel(env: NodeJS.ProcessEnv, socket: string): TaskStorage {
  const token = envValue(env, TASK_TOKEN_VARIABLE);
  if (token === null)
    throw new JobqError('invalid-config', `${TASK_SOCKET_VARIABLE} is set but ${TASK_TOKEN_VARIABLE} is not: the task channel needs both`);
  return new TaskChannelClient(socket, token);
}

/**
 * Where the helpers read upstream outputs and stashed files and stash files: the injected store;
 * else, inside a worker, its task channel (the task holds no storage credential); else a store
 * built (once per distinct environment) from `JOBQ_WORKFLOW_PREFIX`, `JOBQ_WORKFLOW_BLOBS` and the
 * storage connection variables.
 */
export function outputStore(): Promise<TaskStorage> {
  if (settings.outputs) return Promise.resolve(settings.outputs);
  const env = helperEnv();
  const socket = envValue(env, TASK_SOCKET_VARIABLE);
  if (socket !== null) return Promise.resolve().then(() => taskChannel(env, socket));
  const key = JSON.stringify(
    ['JOBQ_WORKFLOW_PREFIX', 'JOBQ_WORKFLOW_BLOBS', 'JOBQ_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_CONNECTION_STRING'].map((name) =>
      envValue(env, name),
    ),
  );
  if (defaultStore?.key === key) return defaultStore.store;
  const store = buildDefaultStore(env);
  const entry = { key, store };
  defaultStore = entry;
  // A failed build is not cached: the next call tries again (and reports its own error).
  void store.catch(() => {
    if (defaultStore === entry) defaultStore = undefined;
  });
  return store;
}
