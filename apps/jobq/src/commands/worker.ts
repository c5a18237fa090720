import { Flags } from '@oclif/core';
import { JobqError, type Instruments } from '@jobq/ports';
import {
  DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
  ShellProcessor,
  Worker,
  killTimeoutFromEnv,
  maxDeliveriesFromEnv,
  type Processor,
  type ProcessOutcome,
  type TaskContext,
  type TaskLogMode,
} from '@jobq/worker';
import { JobqCommand } from '../base';
import { storageConfigured, type CliConfig } from '../config';
import { openDeployment } from '../deployment';
import { UsageError } from '../errors';
import { localWorkerEnvironment } from '../embedded';
import { durationMs } from '../duration-flags';
import { configFlags, configFromFlags } from '../flags';
import { openPlainQueue, plainQueueLocation } from '../plain-queue';
import { checkServiceBusLockDuration } from '../queues';
import { metricsFlags, startMetrics, storageRequestPolicies } from '../metrics';
import { createWorker } from '../services';
import { healthFlags, LIVENESS_STALE_AFTER_IN_MS, startHealth, type HealthSource } from '../health';

/** Defaults of the drain (docs/operations.md#draining-a-worker). */
const DEFAULT_SHUTDOWN_GRACE = '30s';
const DEFAULT_SHUTDOWN_KILL_TIMEOUT = '10s';

/** What the worker's /livez and /readyz say (docs/operations.md#health-endpoints). */
export function workerHealth(worker: Worker | null, now: () => number = Date.now): HealthSource {
  return {
    live() {
      if (worker === null) return { ok: true, details: { role: 'worker', phase: 'starting' } };
      const h = worker.health();
      const sinceTick = Math.max(0, now() - h.lastTickAt);
      // A loop waiting for busy slots does not go round: that is not a stuck loop.
      const ok = h.busy >= h.slots || sinceTick <= LIVENESS_STALE_AFTER_IN_MS;
      return { ok, details: { role: 'worker', stopping: h.stopping, last_tick_ms_ago: sinceTick, busy: h.busy, slots: h.slots } };
    },
    ready() {
      if (worker === null) return { ok: false, details: { role: 'worker', phase: 'starting' } };
      const h = worker.health();
      const receiveOk = h.lastReceiveAt !== null && h.lastReceiveError === null;
      return {
        ok: !h.stopping && receiveOk,
        details: {
          role: 'worker',
          stopping: h.stopping,
          last_receive_at: h.lastReceiveAt,
          last_receive_error: h.lastReceiveError,
          busy: h.busy,
          slots: h.slots,
        },
      };
    },
  };
}

/** Default cap of the empty-queue back-off (docs/design.md#the-worker-loop). */
const DEFAULT_MAX_IDLE_BACKOFF = '30s';

/** A duration flag (docs/design.md#the-worker-loop: a bare number is seconds; `ms`, `s`, `m`, `h`) in ms, or a usage error. */
function duration(text: string | undefined, name: string): number | undefined {
  return text === undefined ? undefined : durationMs(text, name);
}

/**
 * Workflow tasks reaching a worker with no workflow prefix: the message is left for a worker that
 * has one, and this worker stops with a clear error (docs/design.md#the-workflow-processor).
 */
class MissingWorkflowConfig implements Processor {
  readonly name = 'workflow (not configured)';
  constructor(private readonly onError: (error: JobqError) => void) {}

  accepts(kwargs: Readonly<Record<string, unknown>>): boolean {
    return Object.hasOwn(kwargs, '__workflow_id') && Object.hasOwn(kwargs, '__workflow_task');
  }

  process(context: TaskContext): Promise<ProcessOutcome> {
    const error = new JobqError(
      'invalid-config',
      'a workflow task arrived but no workflow prefix is configured: set JOBQ_WORKFLOW_PREFIX=ACCOUNT/PREFIX (or --prefix, or connection.prefix in jobq.yaml)',
    );
    context.log(error.message);
    this.onError(error);
    return Promise.resolve({ kind: 'leave', reason: error.message });
  }
}

export default class WorkerCommand extends JobqCommand {
  static override traced = true;

  static override summary = 'Pull tasks from one queue and run them';
  static override description =
    'Pulls the queue given by --queue NAME|ACCOUNT/NAME|sb://NAMESPACE/NAME (or the shorthand: jobq ACCOUNT/QUEUE worker, jobq sb://NAMESPACE/QUEUE worker) and runs plain tasks ' +
    'as shell commands; workflow tasks run too when a workflow prefix is configured (--prefix, JOBQ_WORKFLOW_PREFIX or a config file). ' +
    'Its tasks find this jobq on their PATH (and in $JOBQ_CLI), so a script can call `jobq task set-output` without installing the CLI. ' +
    'Durations: a bare number is seconds; suffixes ms, s, m, h. SIGINT/SIGTERM stop it gracefully (a second SIGINT aborts running tasks). ' +
    "A message delivered more than JOBQ_MAX_DELIVERIES times (default 20) goes to the dead-letter queue ({queue}-failed; on Service Bus the queue's own) with its reason. " +
    'On Service Bus, --visibility-timeout must be 5s–5m and is the LockDuration of a queue the worker creates (an existing queue keeps its own).';
  static override examples = [
    '<%= config.bin %> myaccount/gpu worker --num-workers 4',
    '<%= config.bin %> sb://my-namespace/gpu worker --visibility-timeout 2m',
    'JOBQ_WORKFLOW_PREFIX=myaccount/Prod <%= config.bin %> worker --queue myaccount/cpu --idle-timeout 10m',
  ];
  static override flags = {
    ...configFlags,
    queue: Flags.string({
      char: 'q',
      description:
        'The queue: NAME (on the default account, or the namespace of --queues sb://NAMESPACE), ACCOUNT/NAME or sb://NAMESPACE/NAME',
      required: true,
    }),
    'num-workers': Flags.integer({ description: 'Tasks run at once', default: 1, min: 1, max: 1024 }),
    'idle-timeout': Flags.string({ description: 'Exit after this long without a message (default: never)' }),
    'max-idle-backoff': Flags.string({
      description: `Cap of the empty-queue back-off (default ${DEFAULT_MAX_IDLE_BACKOFF})`,
      env: 'JOBQ_MAX_IDLE_BACKOFF',
    }),
    'visibility-timeout': Flags.string({
      description: 'Lock (visibility) duration of a received message, renewed while the task runs (default 30s)',
    }),
    'task-logs': Flags.string({
      description:
        'Which workflow task attempts leave a log blob (workflow-logs/{wf}/{task}/{attempt}.log, read with `jobq workflow logs`): always, failed or off (default: JOBQ_TASK_LOGS, else always)',
      options: ['always', 'failed', 'off'],
    }),
    ...metricsFlags,
    'shutdown-grace': Flags.string({
      description: `On SIGTERM/SIGINT: stop receiving, then let running tasks finish for this long (default ${DEFAULT_SHUTDOWN_GRACE})`,
      env: 'JOBQ_SHUTDOWN_GRACE',
    }),
    'shutdown-kill-timeout': Flags.string({
      description: `After the grace: SIGTERM to each task's process group, SIGKILL this long after; the message is abandoned for redelivery (default ${DEFAULT_SHUTDOWN_KILL_TIMEOUT}; a cancel keeps JOBQ_KILL_TIMEOUT)`,
      env: 'JOBQ_SHUTDOWN_KILL_TIMEOUT',
    }),
    ...healthFlags,
    'heartbeat-interval': Flags.string({
      description:
        "Write this worker's heartbeat row ({PREFIX}Workers, read by `jobq workers`, status and doctor) at start and this often; 0 = off (default 30s; needs a workflow prefix)",
      env: 'JOBQ_HEARTBEAT_INTERVAL',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkerCommand);
    const idleTimeoutInMs = duration(flags['idle-timeout'], '--idle-timeout');
    const backoffText = flags['max-idle-backoff']?.trim();
    const maxIdleBackoffInMs = duration(
      backoffText === undefined || backoffText === '' ? DEFAULT_MAX_IDLE_BACKOFF : backoffText,
      '--max-idle-backoff',
    )!;
    const lockDurationInMs = duration(flags['visibility-timeout'], '--visibility-timeout');
    if (lockDurationInMs !== undefined && (lockDurationInMs < 1_000 || lockDurationInMs > 7 * 24 * 3600 * 1000)) {
      throw new UsageError(`--visibility-timeout must be between 1s and 7 days, got ${flags['visibility-timeout']}`);
    }
    if (maxIdleBackoffInMs < 1) throw new UsageError('--max-idle-backoff must be above 0');
    const heartbeatText = flags['heartbeat-interval']?.trim();
    const heartbeatIntervalInMs =
      heartbeatText === undefined || heartbeatText === ''
        ? DEFAULT_HEARTBEAT_INTERVAL_IN_MS
        : durationMs(heartbeatText, '--heartbeat-interval');
    const graceText = flags['shutdown-grace']?.trim();
    const gracePeriodInMs = durationMs(
      graceText === undefined || graceText === '' ? DEFAULT_SHUTDOWN_GRACE : graceText,
      '--shutdown-grace',
    );
    const killText = flags['shutdown-kill-timeout']?.trim();
    const shutdownKillTimeoutInMs = durationMs(
      killText === undefined || killText === '' ? DEFAULT_SHUTDOWN_KILL_TIMEOUT : killText,
      '--shutdown-kill-timeout',
    );
    const maxDeliveries = maxDeliveriesFromEnv(process.env);
    const config = configFromFlags(flags);
    // A bad queue spec, or sb://local with no local broker configured, is a usage error before anything is opened.
    const location = plainQueueLocation(config, flags.queue);
    if (location.backend === 'servicebus' && lockDurationInMs !== undefined)
      checkServiceBusLockDuration(lockDurationInMs, '--visibility-timeout');

    const instruments = await startMetrics(flags, (line) => this.note(line));
    const health: { worker: Worker | null } = { worker: null };
    await startHealth(
      flags,
      {
        live: () => workerHealth(health.worker).live(),
        ready: () => workerHealth(health.worker).ready(),
      },
      (line) => this.note(line),
    );
    // Tasks find this `jobq` on their PATH (`jobq task set-output …`), installed or not.
    const cli = await localWorkerEnvironment(false);
    try {
      await this.work(flags, {
        config,
        lockDurationInMs,
        maxIdleBackoffInMs,
        idleTimeoutInMs,
        maxDeliveries,
        heartbeatIntervalInMs,
        env: cli.env,
        instruments,
        gracePeriodInMs,
        shutdownKillTimeoutInMs,
        onWorker: (worker) => (health.worker = worker),
      });
    } finally {
      await cli.cleanup();
    }
  }

  private async work(
    flags: { queue: string; 'num-workers': number; 'task-logs'?: string | undefined },
    o: {
      config: CliConfig;
      lockDurationInMs: number | undefined;
      maxIdleBackoffInMs: number;
      idleTimeoutInMs: number | undefined;
      maxDeliveries: number;
      heartbeatIntervalInMs: number;
      env: NodeJS.ProcessEnv;
      instruments: Instruments;
      gracePeriodInMs: number;
      shutdownKillTimeoutInMs: number;
      onWorker: (worker: Worker) => void;
    },
  ): Promise<void> {
    const {
      config,
      lockDurationInMs,
      maxIdleBackoffInMs,
      idleTimeoutInMs,
      maxDeliveries,
      heartbeatIntervalInMs,
      env,
      instruments,
      gracePeriodInMs,
      shutdownKillTimeoutInMs,
    } = o;
    const state: { configError: JobqError | null } = { configError: null };
    let worker: Worker;
    const onConfigError = (error: Error): void => {
      state.configError ??= error instanceof JobqError ? error : new JobqError('invalid-config', error.message);
      worker.stop({ gracePeriodInMs: 0 }).catch(() => undefined);
    };
    if (storageConfigured(config)) {
      const deployment = await openDeployment(config, { ...(lockDurationInMs !== undefined ? { lockDurationInMs } : {}), instruments });
      worker = await createWorker(deployment, {
        queue: flags.queue,
        numWorkers: flags['num-workers'],
        maxIdleBackoffInMs,
        idleTimeoutInMs: idleTimeoutInMs ?? null,
        maxDeliveries,
        onConfigError,
        env,
        instruments,
        ...(flags['task-logs'] !== undefined ? { taskLogs: flags['task-logs'] as TaskLogMode } : {}),
        heartbeatIntervalInMs,
        version: this.config.version,
        gracePeriodInMs,
        shutdownKillTimeoutInMs,
      });
      this.note(
        `worker: ${flags['num-workers']} slot(s) on ${flags.queue}, workflow prefix ${deployment.target}` +
          (worker.workerId === null
            ? ', no heartbeats'
            : `, heartbeat ${worker.workerId} every ${Math.round(heartbeatIntervalInMs / 100) / 10}s`),
      );
    } else {
      const queue = await openPlainQueue(config, flags.queue, {
        ...(lockDurationInMs !== undefined ? { lockDurationInMs } : {}),
        policies: storageRequestPolicies(instruments).queue,
        instruments,
      });
      worker = new Worker({
        queue,
        numWorkers: flags['num-workers'],
        maxIdleBackoffInMs,
        idleTimeoutInMs: idleTimeoutInMs ?? null,
        maxDeliveries,
        instruments,
        queueLabel: flags.queue,
        gracePeriodInMs,
        processors: [
          new MissingWorkflowConfig(onConfigError),
          new ShellProcessor({ killTimeoutInMs: killTimeoutFromEnv(process.env), shutdownKillTimeoutInMs, baseEnv: env }),
        ],
      });
      this.note(`worker: ${flags['num-workers']} slot(s) on ${flags.queue} (plain tasks; no workflow prefix configured)`);
    }
    o.onWorker(worker);
    const removeHandlers = worker.installSignalHandlers();
    try {
      const summary = await worker.run();
      this.note(
        `worker stopped: ${summary.processed} processed, ${summary.succeeded} succeeded, ${summary.failed} failed, ${summary.deadLettered} dead-lettered`,
      );
    } finally {
      removeHandlers();
    }
    if (state.configError !== null) throw state.configError;
  }
}
