import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isMergeNode } from '@jobq/dag-core';
import {
  decodeWorkflowTask,
  encodeCompletion,
  INLINE_OUTPUT_MAX_BYTES,
  messageByteLength,
  utf8ByteLength,
  type Completion,
  type WorkflowTaskInfo,
} from '@jobq/dag-core/wire';
import {
  errorMessage,
  JobqError,
  envValue,
  isJobqError,
  parseDurationInMs,
  realClock,
  workflowEnvironment,
  type Clock,
  type CompletionRoute,
  type OutputStore,
  type TaskQueue,
  type WorkflowEnvironment,
} from '@jobq/ports';
import { AttemptFiles } from './attempt-files';
import { CancelFlagCache, DEFAULT_CANCEL_POLL_INTERVAL_IN_MS, jittered } from './cancel-flag';
import {
  type BackoffSettings,
  DEFAULT_COMPLETION_BACKOFF,
  DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS,
  publishCompletion,
} from './completion-publisher';
import { DEFAULT_KILL_TIMEOUT_IN_MS } from './duration';
import type { ProcessOutcome, Processor, TaskContext } from './processor';
import { describeShellResult, runShell, type RunShellOptions, type ShellResult } from './subprocess';
import { type LongTimer, setLongTimeout } from './long-timer';
import { SecretMasker } from './secrets';
import { prepareTaskEnvironment } from './task-environment';
import { setTraceEnvironment } from './tracing';
import { storeTaskOutput } from './task-outputs';
import { AttemptLog, defaultWorkerName, taskLogSettingsFromEnv, type TaskLogCounters, type TaskLogSettings } from './task-log-writer';
import { SlotDirs } from './slot-dirs';
import { checkTaskUser, type TaskUser } from './task-user';
import { resolveUpstreamRefs } from './upstream-refs-file';

/** Error text of a task that was not started, or stopped, because its workflow was cancelled. */
export const WORKFLOW_CANCELLED = 'workflow cancelled';

/** Options of {@link WorkflowProcessor}; the app injects the adapters. */
export interface WorkflowProcessorOptions {
  outputs: OutputStore;
  /** The completion queue `{p}-workflow-completions` (shard 0's; every completion's without `completionRoute`). */
  completions: TaskQueue;
  /**
   * Routes each completion to its workflow's shard's queue (docs/sharding.md#routing), e.g. a
   * `ShardRouter` on the deployment's manifest. Default: every completion to `completions`.
   */
  completionRoute?: CompletionRoute;
  /** Reads a workflow's cancel flag (e.g. `cancelCheckFromStore(store)`); cached here per workflow. */
  isCancelled: (workflowId: string) => Promise<boolean>;
  /** The worker's environment, the base of each task's (default `process.env`; never mutated). */
  env?: NodeJS.ProcessEnv;
  /** SIGTERM → SIGKILL grace (default `JOBQ_KILL_TIMEOUT` from `env`, else 600 s). */
  killTimeoutInMs?: number;
  /** SIGTERM → SIGKILL grace when the worker's drain stops the task (default: `killTimeoutInMs`). */
  shutdownKillTimeoutInMs?: number;
  /** Completion send attempts (default `JOBQ_COMPLETION_SEND_MAX_ATTEMPTS` from `env`, else 5). */
  completionSendMaxAttempts?: number;
  /** Back-off between completion sends (default 1 s doubling to 60 s). */
  completionBackoff?: BackoffSettings;
  /** Cancel-flag cache lifetime and poll interval (default `JOBQ_CANCEL_POLL_INTERVAL` from `env`, else 30 s). */
  cancelPollIntervalInMs?: number;
  /** ± spread of the poll interval and cache lifetime (default 0.25). */
  cancelPollJitter?: number;
  /** Randomness for the jitter (default `Math.random`). */
  random?: () => number;
  /**
   * Where the tasks' working directories go (default `os.tmpdir()`): one per slot, made at its first
   * use and reused by its next attempts, emptied between them; removed by {@link WorkflowProcessor.close}.
   */
  tempDir?: string;
  /** Worker-level log lines (cancel-flag read errors, a working directory that could not be removed). Default: none. */
  log?: (line: string) => void;
  /**
   * Called with the `invalid-config` error when a workflow task arrives and the workflow settings
   * are missing or invalid (docs/design.md#the-workflow-processor): the app should then stop the worker. The message is left.
   */
  onConfigError?: (error: JobqError) => void;
  /**
   * Runs the task's command (default {@link runShell}: `bash -c` in its own process group). An app
   * that runs tasks in-process (or a benchmark measuring the engine without process start-up)
   * hands in its own; it gets the same options and must honour `signal` and `timeoutInMs`. Its
   * `env` names the same files and channel, each made when the variable is first read: a command
   * that reads none of `JOBQ_OUTPUT_FILE`, `JOBQ_WORKFLOW_UPSTREAM_REFS`,
   * `JOBQ_WORKFLOW_CANCEL_FILE`, `JOBQ_TASK_SOCKET`, `JOBQ_TASK_TOKEN` costs no file-system call
   * (and has no output). Passing `env` on to a child process reads them all.
   */
  runCommand?: (options: RunShellOptions) => Promise<ShellResult>;
  /**
   * Whether a workflow belongs to this worker's deployment (e.g. `workflowExistsInStore(store)`).
   * Queue names are per storage account, not per prefix: two deployments on one account that both
   * use a queue such as `default` share it. A task of a workflow this deployment does not know is
   * left for the workers of its own deployment instead of being run and reported to the wrong
   * coordinator (which would drop the completion and leave the task running forever). Known ids are
   * remembered; a failed look-up counts as known. Default: every workflow is accepted.
   */
  isKnownWorkflow?: (workflowId: string) => Promise<boolean>;
  /**
   * Run tasks as this OS user instead of the worker's own (e.g. `taskUserFromEnv(env)`), so they
   * cannot read the worker's files or signal its processes. Needs a worker running as root
   * (`invalid-config` otherwise); `tempDir` and the tasks' `cwd` must be usable by that user.
   */
  taskUser?: TaskUser | null;
  /** The clock of the completions' `startedAt` (default: the time of `clock`). */
  now?: () => Date;
  /**
   * The time of the processor: the cancel-flag poll and cache, the completion back-off, and the
   * task's time limit and kill delay (handed to `runCommand`). Default the real clock.
   */
  clock?: Clock;
  /**
   * Task logs (docs/observability.md#task-logs): which attempts leave a log blob, how much of
   * the output is kept, how often a running task's log is rewritten. Default: `JOBQ_TASK_LOGS`,
   * `JOBQ_TASK_LOG_TAIL_BYTES`, `JOBQ_TASK_LOG_FLUSH_INTERVAL` from `env` (always, 1 MiB, 30 s).
   */
  taskLogs?: Partial<TaskLogSettings>;
  /** The worker's name in task-log metadata (default `{host}-{pid}`). */
  workerName?: string;
}

/** What one attempt carries from start to end. */
interface AttemptState {
  /** Masks the secret values resolved into the task's environment. */
  readonly masker: SecretMasker;
  /** When the task's process was started (ISO-8601); unset while it has not been. */
  startedAt?: string;
  /** The attempt's log, from the start of its command (cleared once finished). */
  log?: AttemptLog | undefined;
  /** The command's exit code, once it ended. */
  exitCode?: number | null;
}

/** Publishes an attempt's completion (see {@link WorkflowProcessor}); `cancelled` when a cancel the worker saw caused the failure. */
type Finish = (success: boolean, outputRef: string | null, error: string | null, cancelled?: boolean) => Promise<ProcessOutcome>;

/** What an attempt runs: its command, environment (secrets resolved), working directory and parents' output refs. */
interface PreparedAttempt {
  cmd: string;
  env: NodeJS.ProcessEnv;
  cwd: string | undefined;
  upstreamRefs: Record<string, string | null>;
}

/** The attempt prepared, or how it ended before its command ran. */
type Prepared = ({ ok: true } & PreparedAttempt) | { ok: false; outcome: ProcessOutcome };

/** How the command ended: its result, whether a cancel stopped it, and its time limit. */
interface RanCommand {
  result: ShellResult;
  cancelled: boolean;
  timeoutInMs: number | null;
}

/** The command ran, or how the attempt ended before it could. */
type Ran = ({ ok: true } & RanCommand) | { ok: false; outcome: ProcessOutcome };

/** Why `path` cannot be a task's working directory (one line), or null when it can. */
async function directoryProblem(path: string): Promise<string | null> {
  const quoted = JSON.stringify(path);
  if (path.includes('\0')) return `kwargs.cwd ${quoted} contains a NUL byte, which no path can hold`;
  try {
    if (!(await stat(path)).isDirectory()) return `kwargs.cwd ${quoted} is not a directory`;
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `kwargs.cwd ${quoted} does not exist`;
    if (code === 'ENOTDIR') return `kwargs.cwd ${quoted} is not a directory`;
    return `kwargs.cwd ${quoted} cannot be used: ${errorMessage(error)}`;
  }
}

/** Known workflow ids remembered by a {@link WorkflowProcessor} (a workflow never leaves its deployment). */
const MAX_KNOWN_WORKFLOWS = 10_000;

/** The settings of the workflow processor that come from the environment (docs/design.md#the-workflow-processor, docs/design.md#cancellation-on-the-worker, docs/design.md#queues-and-backends). */
export interface WorkflowProcessorEnvSettings {
  killTimeoutInMs: number;
  completionSendMaxAttempts: number;
  cancelPollIntervalInMs: number;
}

/** Reads `JOBQ_KILL_TIMEOUT`, `JOBQ_COMPLETION_SEND_MAX_ATTEMPTS`, `JOBQ_CANCEL_POLL_INTERVAL`; bad values are `invalid-config`. */
export function workflowProcessorSettingsFromEnv(env: NodeJS.ProcessEnv): WorkflowProcessorEnvSettings {
  const kill = envValue(env, 'JOBQ_KILL_TIMEOUT');
  const attempts = envValue(env, 'JOBQ_COMPLETION_SEND_MAX_ATTEMPTS');
  const poll = envValue(env, 'JOBQ_CANCEL_POLL_INTERVAL');
  let completionSendMaxAttempts = DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS;
  if (attempts !== null) {
    if (!/^[1-9]\d*$/.test(attempts)) {
      throw new JobqError('invalid-config', `JOBQ_COMPLETION_SEND_MAX_ATTEMPTS must be an integer ≥ 1, got "${attempts}"`);
    }
    completionSendMaxAttempts = Number(attempts);
  }
  const cancelPollIntervalInMs = poll === null ? DEFAULT_CANCEL_POLL_INTERVAL_IN_MS : parseDurationInMs(poll, 'JOBQ_CANCEL_POLL_INTERVAL');
  if (cancelPollIntervalInMs < 1) throw new JobqError('invalid-config', `JOBQ_CANCEL_POLL_INTERVAL must be above 0, got "${poll}"`);
  return {
    killTimeoutInMs: kill === null ? DEFAULT_KILL_TIMEOUT_IN_MS : parseDurationInMs(kill, 'JOBQ_KILL_TIMEOUT'),
    completionSendMaxAttempts,
    cancelPollIntervalInMs,
  };
}

/**
 * Runs workflow tasks (docs/design.md#the-workflow-processor, docs/design.md#cancellation-on-the-worker): the task's `cmd` with the workflow variables, its output
 * stored (docs/design.md#outputs), then its completion published with back-off; the message is acked (`done`) only
 * after the completion was sent, and left for redelivery otherwise.
 */
export class WorkflowProcessor implements Processor {
  readonly name = 'workflow';
  private readonly env: NodeJS.ProcessEnv;
  private readonly cancelFlags: CancelFlagCache;
  private readonly known = new Set<string>();
  private readonly killTimeoutInMs: number;
  private readonly completionSendMaxAttempts: number;
  private readonly completionBackoff: BackoffSettings;
  private readonly cancelPollIntervalInMs: number;
  private readonly cancelPollJitter: number;
  private readonly random: () => number;
  private readonly taskUser: TaskUser | null;
  private readonly clock: Clock;
  private readonly slots: SlotDirs;
  private lastConfigError: JobqError | null = null;
  private readonly taskLogSettings: TaskLogSettings;
  private readonly workerName: string;
  /** Task-log uploads of this processor: written, of them live snapshots, failed (only warned about). */
  readonly taskLogCounters: TaskLogCounters = { uploads: 0, snapshots: 0, failures: 0 };
  /** Deliveries whose completion was sent: a throw after that must not send a second one. */
  private readonly reported = new WeakSet<TaskContext>();

  constructor(private readonly options: WorkflowProcessorOptions) {
    this.env = options.env ?? process.env;
    const fromEnv = workflowProcessorSettingsFromEnv(this.env);
    this.killTimeoutInMs = options.killTimeoutInMs ?? fromEnv.killTimeoutInMs;
    this.completionSendMaxAttempts = options.completionSendMaxAttempts ?? fromEnv.completionSendMaxAttempts;
    this.completionBackoff = options.completionBackoff ?? DEFAULT_COMPLETION_BACKOFF;
    this.cancelPollIntervalInMs = options.cancelPollIntervalInMs ?? fromEnv.cancelPollIntervalInMs;
    this.cancelPollJitter = options.cancelPollJitter ?? 0.25;
    this.random = options.random ?? Math.random;
    this.taskUser = options.taskUser ?? null;
    if (this.taskUser !== null) checkTaskUser(this.taskUser);
    this.clock = options.clock ?? realClock;
    this.taskLogSettings = { ...taskLogSettingsFromEnv(this.env), ...options.taskLogs };
    this.workerName = options.workerName ?? defaultWorkerName();
    this.slots = new SlotDirs({ root: options.tempDir ?? tmpdir(), taskUser: this.taskUser, log: (line) => options.log?.(line) });
    const clock = this.clock;
    this.cancelFlags = new CancelFlagCache(options.isCancelled, {
      ttlInMs: this.cancelPollIntervalInMs,
      jitter: this.cancelPollJitter,
      random: this.random,
      now: () => clock.now(),
      log: (line) => options.log?.(line),
    });
  }

  private async knows(workflowId: string, context: TaskContext): Promise<boolean> {
    const check = this.options.isKnownWorkflow;
    if (check === undefined || this.known.has(workflowId)) return true;
    let known: boolean;
    try {
      known = await check(workflowId);
    } catch (error) {
      context.log(`could not check that workflow "${workflowId}" belongs to this deployment (running it): ${errorMessage(error)}`);
      return true;
    }
    if (known) {
      if (this.known.size >= MAX_KNOWN_WORKFLOWS) this.known.clear();
      this.known.add(workflowId);
    }
    return known;
  }

  /** The configuration error met by the last workflow task, or null. */
  get configError(): JobqError | null {
    return this.lastConfigError;
  }

  /**
   * Removes the tasks' working directories (the worker calls it when it stops). The processor stays
   * usable: a later task makes a new one.
   */
  close(): Promise<void> {
    return this.slots.close();
  }

  /** Checks the workflow settings of the environment; throws the `invalid-config` error (call it at start-up). */
  checkConfig(): WorkflowEnvironment {
    return workflowEnvironment(this.env);
  }

  accepts(kwargs: Readonly<Record<string, unknown>>): boolean {
    return Object.hasOwn(kwargs, '__workflow_id') && Object.hasOwn(kwargs, '__workflow_task');
  }

  async process(context: TaskContext): Promise<ProcessOutcome> {
    let config: WorkflowEnvironment;
    try {
      config = this.checkConfig();
    } catch (error) {
      const failure = isJobqError(error) ? error : new JobqError('invalid-config', errorMessage(error));
      this.lastConfigError = failure;
      context.log(`configuration error: ${failure.message}`);
      this.options.onConfigError?.(failure);
      return { kind: 'leave', reason: `configuration error: ${failure.message}` };
    }
    const decoded = decodeWorkflowTask(context.envelope.kwargs);
    if (!decoded.ok) return { kind: 'failed', error: decoded.error };
    const info = decoded.value;
    if (info === null) return { kind: 'failed', error: 'not a workflow task (no __workflow_id / __workflow_task)' };

    if (!(await this.knows(info.workflowId, context))) {
      const reason = `workflow "${info.workflowId}" is not in this worker's deployment (${config.prefix.account}/${config.prefix.prefix}); left for the workers of its own deployment (do two deployments share this queue?)`;
      context.log(reason);
      return { kind: 'leave', reason };
    }

    // Secret values resolved into the task's environment never leave the worker: every log line
    // and error text of this attempt goes through the masker.
    const state: AttemptState = { masker: new SecretMasker() };
    const { masker } = state;
    const masked: TaskContext = {
      ...context,
      log: (line) => context.log(masker.mask(line)),
      output: (stream, line) => (context.output ? context.output(stream, masker.mask(line)) : context.log(masker.mask(line))),
    };
    // Whatever goes wrong from here on, the coordinator hears of this attempt (or the message is
    // left for another delivery): a task is never left running with no completion on the way.
    try {
      const outcome = await this.attempt(masked, info, config, state);
      if (outcome.kind === 'leave') return { kind: 'leave', reason: masker.mask(outcome.reason) };
      return outcome.kind === 'failed' ? { kind: 'failed', error: masker.mask(outcome.error) } : outcome;
    } catch (error) {
      if (this.reported.has(masked)) return { kind: 'done' };
      const reason = masker.mask(`the worker failed while running the task: ${errorMessage(error)}`);
      masked.log(reason);
      if (context.signal.aborted) return { kind: 'leave', reason: `${reason} (stopped: ${String(context.signal.reason)})` };
      await state.log?.finish(false, state.exitCode ?? null);
      return this.publish(masked, {
        workflowId: info.workflowId,
        taskName: info.taskName,
        attemptNo: info.attemptNo,
        success: false,
        outputRef: null,
        error: reason,
        ...(state.startedAt !== undefined ? { startedAt: state.startedAt } : {}),
      });
    }
  }

  /**
   * One attempt of a decoded workflow task, everything after the checks that may leave the message
   * unseen: {@link prepare} (what to run), {@link run} (the command in a slot), {@link conclude}
   * (its output and completion).
   */
  private async attempt(
    context: TaskContext,
    info: WorkflowTaskInfo,
    config: WorkflowEnvironment,
    state: AttemptState,
  ): Promise<ProcessOutcome> {
    const finish = this.finisher(context, info, state);
    const prepared = await this.prepare(context, info, state, finish);
    if (!prepared.ok) return prepared.outcome;

    // The slot's directory (see slot-dirs.ts) holds the task's files and the socket of its channel,
    // the task's only way to storage: its parents' outputs and its own files, through the worker.
    const slot = this.slots.acquire();
    const files = new AttemptFiles({
      slot,
      workflowId: info.workflowId,
      taskName: info.taskName,
      attemptNo: info.attemptNo,
      upstreamRefs: prepared.upstreamRefs,
      outputs: this.options.outputs,
      taskUser: this.taskUser,
      log: (line) => context.log(line),
    });
    try {
      const ran = await this.run(context, info, config, state, prepared, files, finish);
      if (!ran.ok) return ran.outcome;
      return await this.conclude(context, info, state, ran, files, finish);
    } finally {
      state.log?.stop();
      await files.end().catch((error: unknown) => context.log(`could not clean the task's directory: ${errorMessage(error)}`));
      await this.slots.release(slot);
    }
  }

  /** Publishes this attempt's completion; `cancelled` when a cancel the worker saw caused the failure. */
  private finisher(context: TaskContext, info: WorkflowTaskInfo, state: AttemptState): Finish {
    return async (success, outputRef, error, cancelled = false) => {
      // The log goes before the completion: whoever sees the task ended can read it.
      const log = state.log;
      state.log = undefined;
      await log?.finish(success, state.exitCode ?? null);
      return this.publish(context, {
        workflowId: info.workflowId,
        taskName: info.taskName,
        attemptNo: info.attemptNo,
        success,
        outputRef,
        error: error === null ? null : state.masker.mask(error),
        ...(state.startedAt !== undefined ? { startedAt: state.startedAt } : {}),
        ...(cancelled ? { cancelled } : {}),
      });
    };
  }

  /**
   * What the attempt runs, or how it ends without running anything: a merge node completes, a
   * cancelled workflow's task is not started, a bad `cmd`, `env` or `cwd` fails it, and the parents'
   * output refs are read (an outage leaves the message for another delivery).
   */
  private async prepare(context: TaskContext, info: WorkflowTaskInfo, state: AttemptState, finish: Finish): Promise<Prepared> {
    const kwargs = context.envelope.kwargs;
    const end = async (outcome: Promise<ProcessOutcome> | ProcessOutcome): Promise<Prepared> => ({ ok: false, outcome: await outcome });
    if (isMergeNode(info.taskName, kwargs)) {
      context.log(`merge node "${info.taskName}": completed without running anything`);
      return end(finish(true, null, null));
    }
    if (await this.cancelFlags.isCancelled(info.workflowId)) {
      context.log(`workflow "${info.workflowId}" is cancelled: task "${info.taskName}" is not started`);
      return end(finish(false, null, WORKFLOW_CANCELLED, true));
    }
    if (context.signal.aborted) return end({ kind: 'leave', reason: `not started: ${String(context.signal.reason)}` });

    const cmd = info.userKwargs.cmd;
    if (typeof cmd !== 'string' || cmd.trim() === '') return end(finish(false, null, 'kwargs.cmd is missing: nothing to run'));
    if (cmd.includes('\0')) return end(finish(false, null, 'kwargs.cmd contains a NUL byte, which no command line can hold'));
    let env: NodeJS.ProcessEnv;
    try {
      const prepared = prepareTaskEnvironment(this.env, info.userKwargs.env);
      env = prepared.env;
      state.masker.add(prepared.secrets);
    } catch (error) {
      context.log(`task "${info.taskName}" failed: ${errorMessage(error)}`);
      return end(finish(false, null, errorMessage(error)));
    }
    const cwd = info.userKwargs.cwd;
    if (cwd !== undefined && cwd !== null && typeof cwd !== 'string') return end(finish(false, null, 'kwargs.cwd must be a string'));
    const cwdProblem = typeof cwd === 'string' && cwd !== '' ? await directoryProblem(cwd) : null;
    if (cwdProblem !== null) {
      context.log(`task "${info.taskName}" failed: ${cwdProblem}`);
      return end(finish(false, null, cwdProblem));
    }

    let upstreamRefs: Record<string, string | null>;
    try {
      upstreamRefs = await resolveUpstreamRefs(info, this.options.outputs, { abortSignal: context.signal });
    } catch (error) {
      const message = `could not read the upstream refs${info.upstreamBlob ? ` from ${info.upstreamBlob}` : ''}: ${errorMessage(error)}`;
      context.log(message);
      if (context.signal.aborted || !isJobqError(error) || error.retryable) return end({ kind: 'leave', reason: message });
      return end(finish(false, null, message));
    }
    return { ok: true, cmd, env, cwd: typeof cwd === 'string' && cwd !== '' ? cwd : undefined, upstreamRefs };
  }

  /** Runs the prepared command in its slot with the workflow variables, its log kept, until it ends, times out or is stopped. */
  private async run(
    context: TaskContext,
    info: WorkflowTaskInfo,
    config: WorkflowEnvironment,
    state: AttemptState,
    prepared: PreparedAttempt,
    files: AttemptFiles,
    finish: Finish,
  ): Promise<Ran> {
    if (this.options.runCommand === undefined) {
      // A subprocess reads every variable as it starts: make the files now, and fail clearly.
      try {
        files.prepareAll();
      } catch (error) {
        context.log(errorMessage(error));
        return { ok: false, outcome: await finish(false, null, errorMessage(error)) };
      }
    }
    const env: NodeJS.ProcessEnv = {
      ...prepared.env,
      JOBQ_WORKFLOW_ID: info.workflowId,
      JOBQ_WORKFLOW_TASK: info.taskName,
      JOBQ_WORKFLOW_ATTEMPT: String(info.attemptNo),
      JOBQ_WORKFLOW_PREFIX: `${config.prefix.account}/${config.prefix.prefix}`,
    };
    // JOBQ_OUTPUT_FILE, JOBQ_WORKFLOW_UPSTREAM_REFS, JOBQ_WORKFLOW_CANCEL_FILE (made when the
    // cancel flag is seen, so `isCancelled()` in the task needs no network) and the channel's
    // JOBQ_TASK_SOCKET and JOBQ_TASK_TOKEN: over whatever `kwargs.env` says.
    files.defineIn(env);
    setTraceEnvironment(env, context.trace);
    if (config.queues !== null) env.JOBQ_WORKFLOW_QUEUES = config.queues;
    else delete env.JOBQ_WORKFLOW_QUEUES;
    if (config.blobs !== null) env.JOBQ_WORKFLOW_BLOBS = config.blobs;
    else delete env.JOBQ_WORKFLOW_BLOBS;

    const timeoutInMs = info.timeoutS === null ? null : info.timeoutS * 1000;
    state.startedAt = (this.options.now ?? (() => new Date(this.clock.now())))().toISOString();
    const attemptLog = new AttemptLog({
      outputs: this.options.outputs,
      workflowId: info.workflowId,
      taskName: info.taskName,
      attemptNo: info.attemptNo,
      settings: this.taskLogSettings,
      clock: this.clock,
      worker: this.workerName,
      started: state.startedAt,
      counters: this.taskLogCounters,
      onUploadFailure: () =>
        context.instruments?.inc('jobq_worker_task_log_upload_failures_total', { queue: context.queueLabel ?? 'unknown' }),
      log: (line) => context.log(line),
    });
    state.log = attemptLog;
    const { result, cancelled } = await this.runWithCancel(context, info, prepared.cmd, env, files, prepared.cwd, timeoutInMs, (line) =>
      attemptLog.line(state.masker.mask(line)),
    );
    state.exitCode = result.exitCode;
    await files.commandEnded(); // the attempt's process is gone: nothing may use the channel any more
    return { ok: true, result, cancelled, timeoutInMs };
  }

  /** How the command ended becomes the attempt's completion: stopped, failed, or its output stored and the task completed. */
  private async conclude(
    context: TaskContext,
    info: WorkflowTaskInfo,
    state: AttemptState,
    ran: RanCommand,
    files: AttemptFiles,
    finish: Finish,
  ): Promise<ProcessOutcome> {
    const { result, cancelled, timeoutInMs } = ran;
    if (result.stopped && !result.timedOut) {
      if (cancelled)
        return finish(false, null, `stopped: ${WORKFLOW_CANCELLED}${result.killed ? ' (killed after the grace period)' : ''}`, true);
      // The worker's drain: this attempt did not finish; the worker abandons the message (no
      // retry spent), so another worker takes it at once rather than when the lock ends.
      if (context.signal.reason === 'shutdown') return { kind: 'failed', error: 'stopped: shutdown' };
      // Lock lost: this attempt did not finish; leave the message for another delivery.
      return { kind: 'leave', reason: `stopped: ${String(context.signal.reason)}` };
    }
    if (result.spawnError !== null || result.timedOut || result.exitCode !== 0) {
      const error = describeShellResult(result, timeoutInMs);
      context.log(`task "${info.taskName}" failed: ${error}`);
      return finish(false, null, error);
    }
    // Inline only when the completion carrying the output fits the completion queue as it is
    // really sent (the output is escaped twice more on the way, and the queue escapes more):
    // any valid JSON output then succeeds, inline or in the attempt's blob.
    const success: Completion = {
      workflowId: info.workflowId,
      taskName: info.taskName,
      attemptNo: info.attemptNo,
      success: true,
      outputRef: null,
      error: null,
      startedAt: state.startedAt ?? null,
    };
    const fitsInline = (json: string): boolean =>
      utf8ByteLength(json) <= INLINE_OUTPUT_MAX_BYTES &&
      messageByteLength(encodeCompletion({ ...success, outputRef: json }, context.trace)) <= this.options.completions.maxMessageBytes;
    // A command that was never given the output file has written no output.
    const outputFile = files.givenOutputFile;
    const stored =
      outputFile === null
        ? ({ ok: true, result: { ref: null, placement: 'none', bytes: 0 } } as const)
        : await storeTaskOutput(
            this.options.outputs,
            info.workflowId,
            info.taskName,
            info.attemptNo,
            outputFile,
            context.log.bind(context),
            {
              abortSignal: context.signal,
              ...(this.taskUser !== null ? { ownerUid: this.taskUser.uid } : {}),
              fitsInline,
            },
          );
    if (!stored.ok) {
      if (stored.aborted) return { kind: 'leave', reason: `stopped while storing the output: ${String(context.signal.reason)}` };
      context.log(`task "${info.taskName}" failed: ${stored.error}`);
      return finish(false, null, stored.error);
    }
    return finish(true, stored.result.ref, null);
  }

  /**
   * The worker gives up on this message (the delivery bound): the attempt is reported failed with
   * `reason`, so the workflow does not wait for it forever. Not for a workflow this deployment does
   * not know (its coordinator is elsewhere), nor for a message that is not a workflow task.
   */
  async giveUp(context: TaskContext, reason: string): Promise<void> {
    const decoded = decodeWorkflowTask(context.envelope.kwargs);
    if (!decoded.ok || decoded.value === null) return;
    const info = decoded.value;
    if (!(await this.knows(info.workflowId, context))) {
      context.log(`workflow "${info.workflowId}" is not in this worker's deployment: no completion is sent`);
      return;
    }
    const outcome = await this.publish(context, {
      workflowId: info.workflowId,
      taskName: info.taskName,
      attemptNo: info.attemptNo,
      success: false,
      outputRef: null,
      error: reason,
    });
    if (outcome.kind === 'leave') context.log(`could not report that the worker gave up: ${outcome.reason}`);
  }

  /** Runs the command, polling the cancel flag; a set flag or the context signal stops it. */
  private async runWithCancel(
    context: TaskContext,
    info: WorkflowTaskInfo,
    command: string,
    env: NodeJS.ProcessEnv,
    files: AttemptFiles,
    cwd: string | undefined,
    timeoutInMs: number | null,
    capture: (line: string) => void,
  ) {
    const stop = new AbortController();
    const onContextAbort = () => stop.abort(context.signal.reason);
    if (context.signal.aborted) onContextAbort();
    else context.signal.addEventListener('abort', onContextAbort, { once: true });
    let cancelled = false;
    let finished = false;
    let timer: LongTimer | undefined;
    const schedule = () => {
      timer = setLongTimeout(() => void poll(), jittered(this.cancelPollIntervalInMs, this.cancelPollJitter, this.random), this.clock);
    };
    const poll = async () => {
      const isCancelled = await this.cancelFlags.isCancelled(info.workflowId).catch(() => false);
      if (finished) return;
      if (isCancelled) {
        cancelled = true;
        files.markCancelled();
        context.log(
          `workflow "${info.workflowId}" was cancelled: stopping task "${info.taskName}" (SIGTERM, SIGKILL after ${this.killTimeoutInMs} ms)`,
        );
        stop.abort(new Error(WORKFLOW_CANCELLED));
      } else {
        schedule();
      }
    };
    schedule();
    try {
      const result = await (this.options.runCommand ?? runShell)({
        command,
        env,
        ...(cwd !== undefined ? { cwd } : {}),
        signal: stop.signal,
        ...(this.taskUser !== null ? { uid: this.taskUser.uid, gid: this.taskUser.gid } : {}),
        killTimeoutInMs: this.killTimeoutInMs,
        ...(this.options.shutdownKillTimeoutInMs !== undefined ? { shutdownKillTimeoutInMs: this.options.shutdownKillTimeoutInMs } : {}),
        clock: this.clock,
        timeoutInMs,
        onLine: (stream, line) => {
          capture(line);
          if (context.output) context.output(stream, line);
          else context.log(line);
        },
      });
      return { result, cancelled };
    } finally {
      finished = true;
      timer?.clear();
      context.signal.removeEventListener('abort', onContextAbort);
    }
  }

  /** Publishes the completion; `done` once sent, `leave` when the attempts ran out. */
  private async publish(context: TaskContext, completion: Completion): Promise<ProcessOutcome> {
    const options = {
      maxAttempts: this.completionSendMaxAttempts,
      backoff: this.completionBackoff,
      log: (line: string) => context.log(line),
      clock: this.clock,
      ...(context.trace === undefined ? {} : { trace: context.trace }),
    };
    let sending = completion;
    const route = this.options.completionRoute;
    // Shard 0's queue is always right, if not the shortest way: its coordinator forwards.
    const queue = route ? await route.queueFor(completion.workflowId).catch(() => this.options.completions) : this.options.completions;
    let sent = await publishCompletion(queue, sending, options);
    if (!sent.sent && sent.tooLarge && completion.outputRef !== null) {
      // The output made the completion too large for the queue: fail the attempt with a clear error.
      const error = `the completion carrying the output does not fit in the completion queue: ${sent.error}`;
      context.log(error);
      sending = { ...completion, success: false, outputRef: null, error };
      sent = await publishCompletion(queue, sending, options);
    }
    if (sent.sent) {
      this.reported.add(context);
      context.log(
        `completion sent: task "${sending.taskName}" attempt ${sending.attemptNo ?? 'current'} ${sending.success ? 'succeeded' : `failed (${sending.error ?? ''})`}`,
      );
      return sending.success ? { kind: 'done' } : { kind: 'done', failed: true };
    }
    if (sent.permanent) {
      // Refused, not lost (e.g. an expired SAS): a later delivery may succeed once that is fixed;
      // the worker's delivery bound ends it otherwise.
      return {
        kind: 'leave',
        reason: `the completion of task "${completion.taskName}" was refused by the completion queue: ${sent.error}; the message is left for redelivery (it may go through once that is fixed)`,
      };
    }
    return {
      kind: 'leave',
      reason: `the completion of task "${completion.taskName}" could not be sent after ${sent.attempts} attempt(s): ${sent.error}; the message is left for redelivery`,
    };
  }
}
