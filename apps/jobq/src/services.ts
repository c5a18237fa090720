import { Coordinator, type CoordinatorOptions } from '@jobq/coordinator';
import {
  ShellProcessor,
  Worker,
  WorkflowProcessor,
  cancelCheckFromStore,
  maxDeliveriesFromEnv,
  newWorkerId,
  taskUserFromEnv,
  workflowExistsInStore,
  workflowProcessorSettingsFromEnv,
  type LogLine,
  type TaskLineSink,
  type TaskLogMode,
} from '@jobq/worker';
import type { Instruments } from '@jobq/ports';
import type { CliConfig } from './config';
import type { Deployment } from './deployment';

/** The coordinator options of the resolved configuration (docs/azure.md#configuration), in the library's units. */
export function coordinatorOptions(config: CliConfig): CoordinatorOptions {
  const c = config.coordinator;
  return {
    batchSize: c.batchSize.value,
    pipelineDepth: c.pipelineDepth.value,
    idleSleepInMs: Math.round(c.idleSleepS.value * 1000),
    cancelPollIntervalInMs: Math.round(c.cancelPollIntervalS.value * 1000),
    flushRetryLimit: c.flushRetryLimit.value,
    readySweepIntervalInMs: Math.round(c.readySweepIntervalS.value * 1000),
    readyRepairThresholdInMs: Math.round(c.readyRepairThresholdS.value * 1000),
    timeoutSweepIntervalInMs: Math.round(c.timeoutSweepIntervalS.value * 1000),
    taskMessageTtlInMs: c.taskMessageTtlS.value === 0 ? Number.POSITIVE_INFINITY : Math.round(c.taskMessageTtlS.value * 1000),
    maxDeliveries: c.maxDeliveries.value,
    retentionInMs: Math.round(c.retentionS.value * 1000),
  };
}

/** A coordinator over a deployment (not started). */
export function createCoordinator(deployment: Deployment, options: CoordinatorOptions): Coordinator {
  return new Coordinator({
    store: deployment.store,
    completions: deployment.completions,
    outputs: deployment.outputs,
    workers: deployment.workers,
    queues: (spec) => deployment.queue(spec),
    options,
  });
}

/** Options of {@link createWorker}. */
export interface LocalWorkerOptions {
  /** Queue spec the worker pulls from. */
  queue: string;
  numWorkers: number;
  maxIdleBackoffInMs?: number;
  idleTimeoutInMs?: number | null;
  gracePeriodInMs?: number;
  /** SIGTERM → SIGKILL delay of a task the drain stops (default: the kill timeout, `JOBQ_KILL_TIMEOUT`). */
  shutdownKillTimeoutInMs?: number;
  receiveWaitInMs?: number;
  /** The delivery bound (default `JOBQ_MAX_DELIVERIES` from `env`, else 20). */
  maxDeliveries?: number;
  log?: LogLine;
  /** Lines about one task, with its name and attempt (default: `log`, prefixed with the task id). */
  taskLines?: TaskLineSink;
  /** The worker's own environment (default `process.env`); the deployment's settings are added for its tasks. */
  env?: NodeJS.ProcessEnv;
  /** Called when a workflow task arrives without usable workflow settings (the app should stop). */
  onConfigError?: (error: Error) => void;
  /** Where the worker records its metrics (default nowhere). */
  instruments?: Instruments;
  /** Which attempts leave a task log (default `JOBQ_TASK_LOGS` from `env`, else always; docs/observability.md#task-logs). */
  taskLogs?: TaskLogMode;
  /** Heartbeats into the deployment's `{PREFIX}Workers` every this many ms (default: none; 0 = none). */
  heartbeatIntervalInMs?: number;
  /** The jobq version the heartbeat row names. */
  version?: string;
}

/**
 * A worker over one queue of a deployment with both processors (docs/design.md#workers): workflow tasks get the
 * deployment's settings in their environment (so `jobq task …` finds it), plain tasks run as shell
 * commands.
 */
export async function createWorker(deployment: Deployment, options: LocalWorkerOptions): Promise<Worker> {
  const queue = await deployment.queue(options.queue);
  const base = options.env ?? process.env;
  // Workflow tasks get the deployment's settings (for `jobq task …`); plain shell tasks only the worker's own.
  const env = { ...base, ...deployment.taskEnvironment };
  const settings = workflowProcessorSettingsFromEnv(env);
  // JOBQ_TASK_UID/JOBQ_TASK_GID: run workflow tasks as another OS user (the worker must be root).
  const taskUser = taskUserFromEnv(env);
  // One name for the worker: its heartbeat row and the `worker` of the task logs it writes.
  const workerId = newWorkerId();
  // Completions go to their workflow's shard's queue: the manifest is read now, then every 60 s.
  await deployment.route.refresh();
  return new Worker({
    queue,
    numWorkers: options.numWorkers,
    maxDeliveries: options.maxDeliveries ?? maxDeliveriesFromEnv(base),
    ...(options.maxIdleBackoffInMs !== undefined ? { maxIdleBackoffInMs: options.maxIdleBackoffInMs } : {}),
    ...(options.idleTimeoutInMs !== undefined ? { idleTimeoutInMs: options.idleTimeoutInMs } : {}),
    ...(options.gracePeriodInMs !== undefined ? { gracePeriodInMs: options.gracePeriodInMs } : {}),
    ...(options.receiveWaitInMs !== undefined ? { receiveWaitInMs: options.receiveWaitInMs } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.taskLines ? { taskLines: options.taskLines } : {}),
    // The queue spec labels its metrics and names its backend in the spans (`sb://` → Service Bus).
    queueLabel: options.queue,
    ...(options.instruments ? { instruments: options.instruments } : {}),
    ...(options.heartbeatIntervalInMs !== undefined && options.heartbeatIntervalInMs > 0
      ? {
          heartbeat: {
            registry: deployment.workers,
            intervalInMs: options.heartbeatIntervalInMs,
            queueSpec: options.queue,
            version: options.version ?? 'unknown',
            workerId,
          },
        }
      : {}),
    processors: [
      new WorkflowProcessor({
        outputs: deployment.outputs,
        completions: deployment.completions,
        completionRoute: deployment.route,
        isCancelled: cancelCheckFromStore(deployment.store),
        isKnownWorkflow: workflowExistsInStore(deployment.store),
        env,
        ...settings,
        ...(options.shutdownKillTimeoutInMs !== undefined ? { shutdownKillTimeoutInMs: options.shutdownKillTimeoutInMs } : {}),
        taskUser,
        workerName: workerId,
        ...(options.taskLogs !== undefined ? { taskLogs: { mode: options.taskLogs } } : {}),
        ...(options.log ? { log: options.log } : {}),
        ...(options.onConfigError ? { onConfigError: options.onConfigError } : {}),
      }),
      new ShellProcessor({
        killTimeoutInMs: settings.killTimeoutInMs,
        ...(options.shutdownKillTimeoutInMs !== undefined ? { shutdownKillTimeoutInMs: options.shutdownKillTimeoutInMs } : {}),
        baseEnv: base,
      }),
    ],
  });
}
