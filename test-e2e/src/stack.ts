import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowRuntime } from '@jobq/dag-core';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { openWorkflowStore, type AzureWorkflowStore } from '@jobq/store-azure';
import { cleanEnv, runCli, startCli, type CliProcess, type CliResult, type StartOptions } from './cli';

/**
 * The storage behind the process tests: Azurite in the test process (`startAzurite`), reached by
 * the CLI processes through `JOBQ_STORAGE_CONNECTION_STRING`. Started at most once per test file,
 * on first use, so tests that run concurrently share it.
 */
export class SharedStorage {
  private started: Promise<LocalStorage> | undefined;

  get(): Promise<LocalStorage> {
    return (this.started ??= startAzurite());
  }

  async stop(): Promise<void> {
    if (this.started === undefined) return;
    const storage = await this.started.catch(() => null);
    await storage?.stop();
  }
}

/** A fresh deployment prefix (docs/design.md#names: a letter, then up to 31 letters and digits). */
export function uniquePrefix(tag: string): string {
  const clean = tag.replace(/[^A-Za-z0-9]/g, '').slice(0, 12);
  return `E${clean}${randomBytes(6).toString('hex')}`;
}

/** One prefix on the shared storage: the environment of its CLI processes and an in-process view of its state. */
export interface Deployment {
  storage: LocalStorage;
  /** `devstoreaccount1/PREFIX` */
  target: string;
  prefix: string;
  /**
   * The task queue of this deployment's workflows (their `default_queue`). Task queues are named
   * per account, not per prefix: two deployments on one account sharing a queue would run each
   * other's tasks and send the completions to the wrong coordinator.
   */
  queue: string;
  /** A clean environment pointing at this deployment, plus `extra`. */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** The workflow store of the prefix, opened in this process (read-only use). */
  store(): Promise<AzureWorkflowStore>;
}

export async function deployment(shared: SharedStorage, tag: string): Promise<Deployment> {
  const storage = await shared.get();
  const prefix = uniquePrefix(tag);
  const target = `${storage.accountName}/${prefix}`;
  let store: Promise<AzureWorkflowStore> | undefined;
  return {
    storage,
    prefix,
    target,
    queue: `${prefix.toLowerCase()}-tasks`,
    env: (extra = {}) => cleanEnv({ JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString, JOBQ_WORKFLOW_PREFIX: target, ...extra }),
    store: () => (store ??= openWorkflowStore({ connection: { connectionString: storage.connectionString }, prefix })),
  };
}

/** Every process a test file starts, so that `afterAll` can kill what a failing test left behind. */
export class ProcessGroup {
  private readonly running = new Set<CliProcess>();

  start(args: readonly string[], options: StartOptions = {}): CliProcess {
    const proc = startCli(args, options);
    this.running.add(proc);
    void proc.done.then(
      () => this.running.delete(proc),
      () => this.running.delete(proc),
    );
    return proc;
  }

  /** SIGKILL everything still running and wait for it to exit. */
  async killAll(): Promise<void> {
    const procs = [...this.running];
    for (const proc of procs) proc.child.kill('SIGKILL');
    await Promise.allSettled(procs.map((p) => p.done));
  }
}

/** `jobq workflow coordinator` with short sleeps (the completion visibility timeout short too, so redeliveries come soon). */
export function coordinatorArgs(extra: readonly string[] = []): string[] {
  return ['workflow', 'coordinator', '--idle-sleep', '200ms', '--visibility-timeout', '5s', ...extra];
}

/** `jobq worker` on `queue` with a short empty-queue back-off. */
export function workerArgs(queue: string, extra: readonly string[] = []): string[] {
  return ['worker', '--queue', queue, '--max-idle-backoff', '1s', ...extra];
}

/** Asks a process to stop (SIGTERM) and waits; SIGKILL when it takes longer than `graceInMs`. */
export async function stopProcess(proc: CliProcess, graceInMs = 20_000): Promise<CliResult> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceInMs);
  try {
    return await proc.done;
  } finally {
    clearTimeout(timer);
  }
}

/** SIGKILL, as a crash would, and wait for the exit. */
export async function crash(proc: CliProcess): Promise<CliResult> {
  proc.child.kill('SIGKILL');
  return proc.done;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` until it returns a value other than undefined; rejects after `timeoutInMs` (a
 * safety net, never a measurement) with the last value `describe` gives.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutInMs = 90_000,
  describe?: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutInMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
      lastError = null;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = describe ? `\n${describe()}` : '';
      const cause = lastError === null ? '' : `\nlast error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`;
      throw new Error(`timed out waiting for ${what}${cause}${detail}`);
    }
    await sleep(250);
  }
}

/** Waits until the runtime of `workflowId` satisfies `predicate` and returns it. */
export function waitForRuntime(
  store: AzureWorkflowStore,
  workflowId: string,
  what: string,
  predicate: (runtime: WorkflowRuntime) => boolean,
  timeoutInMs = 90_000,
  describe?: () => string,
): Promise<WorkflowRuntime> {
  let last: WorkflowRuntime | null = null;
  return eventually(
    `workflow ${workflowId}: ${what}`,
    async () => {
      const loaded = await store.load(workflowId);
      last = loaded?.runtime ?? null;
      return last !== null && predicate(last) ? last : undefined;
    },
    timeoutInMs,
    () => `last runtime: ${last === null ? 'none' : summary(last)}${describe ? `\n${describe()}` : ''}`,
  );
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Waits until the workflow is completed, failed or cancelled. */
export function waitForEnd(
  store: AzureWorkflowStore,
  workflowId: string,
  timeoutInMs = 120_000,
  describe?: () => string,
): Promise<WorkflowRuntime> {
  return waitForRuntime(store, workflowId, 'a terminal status', (r) => TERMINAL.has(r.status), timeoutInMs, describe);
}

/** `status; task=status@attempt …` for failure messages. */
export function summary(runtime: WorkflowRuntime): string {
  const tasks = Object.entries(runtime.tasks).map(
    ([name, t]) => `${name}=${t.status}@${t.attemptNo}${t.error !== null ? `(${t.error})` : ''}`,
  );
  return `${runtime.status}; ${tasks.join(' ')}`;
}

/** The output of the processes, for failure messages. */
export function logsOf(procs: Record<string, CliProcess | undefined>): string {
  return Object.entries(procs)
    .filter((e): e is [string, CliProcess] => e[1] !== undefined)
    .map(([name, p]) => `--- ${name} stderr:\n${p.stderr.slice(-4000)}`)
    .join('\n');
}

/** A temporary directory removed by the returned function. */
export async function tempDir(tag: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `jobq-e2e-${tag}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** `jobq …ARGS --json`, parsed; throws with the output when the exit code is not 0. */
export async function cliJson<T>(args: readonly string[], options: StartOptions): Promise<T> {
  const result = await runCli([...args, '--json'], options);
  if (result.code !== 0)
    throw new Error(`jobq ${args.join(' ')} exited ${String(result.code)}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** True while any process of the process group `pgid` exists. */
export function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
