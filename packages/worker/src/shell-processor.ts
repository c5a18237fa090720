import { stat } from 'node:fs/promises';
import { errorMessage, parseDurationInMs, type Clock } from '@jobq/ports';
import { DEFAULT_KILL_TIMEOUT_IN_MS } from './duration';
import { startDirsync, type DirsyncSession, type DirsyncUploader } from './dirsync';
import type { ProcessOutcome, Processor, TaskContext } from './processor';
import { SecretMasker } from './secrets';
import { describeShellResult, runShell } from './subprocess';
import { prepareTaskEnvironment } from './task-environment';
import { setTraceEnvironment } from './tracing';

/**
 * Reads `JOBQ_KILL_TIMEOUT` (seconds; a bare number, or with `ms`/`s`/`m`/`h`); unset or empty →
 * 600 s. Anything else is an `invalid-config` error.
 */
export function killTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.JOBQ_KILL_TIMEOUT?.trim();
  return text === undefined || text === '' ? DEFAULT_KILL_TIMEOUT_IN_MS : parseDurationInMs(text, 'JOBQ_KILL_TIMEOUT');
}

/** Options of {@link ShellProcessor}. */
export interface ShellProcessorOptions {
  /** Processor name in logs (default `shell`). */
  name?: string;
  /**
   * The worker environment the task's `kwargs.env` is layered on: an object (copied per task) or a
   * function called per task. Default: `process.env` as it is when the task starts (read, never written).
   */
  baseEnv?: NodeJS.ProcessEnv | (() => NodeJS.ProcessEnv);
  /** SIGTERM → SIGKILL delay when the task is stopped. Default: `JOBQ_KILL_TIMEOUT` (seconds) or 600 s. */
  killTimeoutInMs?: number;
  /** SIGTERM → SIGKILL delay when the worker's drain stops the task (default: `killTimeoutInMs`). */
  shutdownKillTimeoutInMs?: number;
  /** Which kwargs this processor takes. Default: any without `__workflow_id` (those are workflow tasks). */
  accepts?: (kwargs: Readonly<Record<string, unknown>>) => boolean;
  /** `bg_dirsync_to` settings. */
  dirsync?: {
    /** Default 60 s. */
    intervalInMs?: number;
    /** Needed for `ACCOUNT/CONTAINER/PATH` destinations; without it such tasks fail at start. */
    uploader?: DirsyncUploader;
    /** Where the temporary directories are made (default the OS temp dir). */
    tmpRoot?: string;
  };
  /** The clock of the task's kill delay and of the dirsync interval (default the real one). */
  clock?: Clock;
}

function failed(error: string): ProcessOutcome {
  return { kind: 'failed', error };
}

/**
 * Runs plain jobq tasks (docs/design.md#the-shell-processor): `kwargs.cmd` with `bash -c` in its own process group, env =
 * worker env without its credentials + `kwargs.env` (secret references resolved, see
 * {@link prepareTaskEnvironment}), cwd = `kwargs.cwd`; resolved secret values are masked in the
 * log lines and the error; exit 0 is `done`, anything else `failed`. Output
 * lines go to `context.output` (the worker sends them to `taskLines`, or to its log prefixed with the task id). The context
 * signal stops the child: SIGTERM to its group, SIGKILL after `killTimeoutInMs`.
 */
export class ShellProcessor implements Processor {
  readonly name: string;
  private readonly killTimeoutInMs: number;

  constructor(private readonly options: ShellProcessorOptions = {}) {
    this.name = options.name ?? 'shell';
    this.killTimeoutInMs = options.killTimeoutInMs ?? killTimeoutFromEnv(process.env);
  }

  accepts(kwargs: Readonly<Record<string, unknown>>): boolean {
    if (this.options.accepts) return this.options.accepts(kwargs);
    return !Object.prototype.hasOwnProperty.call(kwargs, '__workflow_id');
  }

  private baseEnv(): NodeJS.ProcessEnv {
    const base = this.options.baseEnv;
    if (typeof base === 'function') return base();
    return base ?? process.env;
  }

  async process(context: TaskContext): Promise<ProcessOutcome> {
    const masker = new SecretMasker();
    const outcome = await this.run(
      {
        ...context,
        log: (line) => context.log(masker.mask(line)),
        output: (stream, line) => (context.output ? context.output(stream, masker.mask(line)) : context.log(masker.mask(line))),
      },
      masker,
    );
    return outcome.kind === 'failed' ? failed(masker.mask(outcome.error)) : outcome;
  }

  private async run(context: TaskContext, masker: SecretMasker): Promise<ProcessOutcome> {
    const { kwargs } = context.envelope;
    const cmd = kwargs.cmd;
    if (cmd === undefined || cmd === null) return failed('kwargs.cmd is missing');
    if (typeof cmd !== 'string' || cmd.trim() === '')
      return failed(`kwargs.cmd must be a non-empty string, got ${typeof cmd === 'string' ? 'an empty string' : typeof cmd}`);

    let env: NodeJS.ProcessEnv;
    try {
      const prepared = prepareTaskEnvironment(this.baseEnv(), kwargs.env);
      env = prepared.env;
      masker.add(prepared.secrets);
      setTraceEnvironment(env, context.trace);
    } catch (error) {
      return failed(errorMessage(error));
    }

    const cwd = kwargs.cwd;
    if (cwd !== undefined && cwd !== null) {
      if (typeof cwd !== 'string' || cwd === '') return failed(`kwargs.cwd must be a non-empty string, got ${typeof cwd}`);
      const info = await stat(cwd).catch(() => null);
      if (!info?.isDirectory()) return failed(`kwargs.cwd "${cwd}" is not a directory`);
    }

    let dirsync: DirsyncSession | undefined;
    const dirsyncTo = kwargs.bg_dirsync_to;
    if (dirsyncTo !== undefined && dirsyncTo !== null) {
      if (typeof dirsyncTo !== 'string') return failed(`kwargs.bg_dirsync_to must be a string, got ${typeof dirsyncTo}`);
      try {
        dirsync = await startDirsync({
          destination: dirsyncTo,
          ...(this.options.dirsync?.intervalInMs !== undefined ? { intervalInMs: this.options.dirsync.intervalInMs } : {}),
          ...(this.options.dirsync?.uploader !== undefined ? { uploader: this.options.dirsync.uploader } : {}),
          ...(this.options.dirsync?.tmpRoot !== undefined ? { tmpRoot: this.options.dirsync.tmpRoot } : {}),
          cwd: typeof cwd === 'string' ? cwd : process.cwd(),
          log: (line) => context.log(line),
          ...(this.options.clock ? { clock: this.options.clock } : {}),
        });
      } catch (error) {
        return failed(errorMessage(error));
      }
      env.JOBQ_DIRSYNC_DIR = dirsync.dir;
    }

    const result = await runShell({
      command: cmd,
      env,
      ...(typeof cwd === 'string' ? { cwd } : {}),
      signal: context.signal,
      killTimeoutInMs: this.killTimeoutInMs,
      ...(this.options.shutdownKillTimeoutInMs !== undefined ? { shutdownKillTimeoutInMs: this.options.shutdownKillTimeoutInMs } : {}),
      onLine: (stream, line) => (context.output ? context.output(stream, line) : context.log(line)),
      ...(this.options.clock ? { clock: this.options.clock } : {}),
    });

    let syncError: string | null = null;
    if (dirsync) {
      try {
        await dirsync.finish();
      } catch (error) {
        syncError = errorMessage(error);
        context.log(syncError);
      }
    }

    const ok = result.exitCode === 0 && !result.stopped && !result.timedOut && result.spawnError === null;
    if (ok) return syncError === null ? { kind: 'done' } : failed(syncError);
    let error = describeShellResult(result);
    if (result.stopped && context.signal.aborted)
      error += ` (${typeof context.signal.reason === 'string' ? context.signal.reason : errorMessage(context.signal.reason)})`;
    if (syncError !== null) error += `; ${syncError}`;
    return failed(error);
  }
}
