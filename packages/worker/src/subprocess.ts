import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { errorMessage, type Clock } from '@jobq/ports';
import { type LongTimer, setLongTimeout } from './long-timer';

/** Options of {@link runShell}. */
export interface RunShellOptions {
  /** Run with `bash -c`. */
  command: string;
  /** The complete environment of the child (the caller merges the worker's and the task's). */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run the child as this user and group (the caller must be root). Default: the worker's own. */
  uid?: number;
  gid?: number;
  /** Stops the child: SIGTERM to its process group, then SIGKILL after `killTimeoutInMs`. */
  signal?: AbortSignal;
  killTimeoutInMs: number;
  /**
   * The SIGTERM → SIGKILL delay instead of `killTimeoutInMs` when `signal` fired with reason
   * `'shutdown'` (the worker's drain, `--shutdown-kill-timeout`; docs/operations.md#draining-a-worker).
   */
  shutdownKillTimeoutInMs?: number;
  /** Local time limit: stops the child the same way and reports `timedOut`. */
  timeoutInMs?: number | null;
  /** Each line of stdout and stderr, as it comes. */
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
  /** The clock of `timeoutInMs` and `killTimeoutInMs` (default the real one). */
  clock?: Clock;
}

/** How a child ended. */
export interface ShellResult {
  /** The exit code, or null when the child was ended by a signal. */
  exitCode: number | null;
  /** The signal that ended the child, if any. */
  exitSignal: NodeJS.Signals | null;
  /** We stopped it because `signal` fired. */
  stopped: boolean;
  /** We stopped it because `timeoutInMs` passed. */
  timedOut: boolean;
  /** We had to SIGKILL it after the SIGTERM grace. */
  killed: boolean;
  /** The child could not be started (e.g. no bash); the message says why. */
  spawnError: string | null;
}

function splitLines(onLine: ((line: string) => void) | undefined) {
  let rest = '';
  return {
    push(chunk: Buffer) {
      rest += chunk.toString('utf8');
      const lines = rest.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onLine?.(line);
    },
    flush() {
      if (rest !== '') onLine?.(rest);
      rest = '';
    },
  };
}

/**
 * Runs a shell command in its own process group, so stopping it reaches every process it started
 * and nothing else the worker runs. Never rejects: every ending is described in the result.
 */
export function runShell(options: RunShellOptions): Promise<ShellResult> {
  return new Promise((resolve) => {
    const result: ShellResult = { exitCode: null, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
    if (options.signal?.aborted) {
      result.stopped = true;
      resolve(result);
      return;
    }
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn('bash', ['-c', options.command], {
        env: options.env,
        cwd: options.cwd,
        ...(options.uid !== undefined ? { uid: options.uid } : {}),
        ...(options.gid !== undefined ? { gid: options.gid } : {}),
        detached: true, // its own process group: kill(-pid) reaches the whole tree
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      // Node checks the arguments before starting anything and throws (e.g. a NUL byte in the
      // command, the cwd or the environment): that is a start failure like any other.
      result.spawnError = `could not start bash: ${errorMessage(error)}`;
      resolve(result);
      return;
    }
    const out = splitLines((line) => options.onLine?.('stdout', line));
    const err = splitLines((line) => options.onLine?.('stderr', line));
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));

    let killTimer: LongTimer | undefined;
    const stop = (why: 'stopped' | 'timedOut') => {
      if (result.stopped || result.timedOut || child.pid === undefined) return;
      result[why] = true;
      signalGroup(child.pid, 'SIGTERM');
      const shutdown = why === 'stopped' && options.signal?.reason === 'shutdown' && options.shutdownKillTimeoutInMs !== undefined;
      killTimer = setLongTimeout(
        () => {
          if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
            result.killed = true;
            signalGroup(child.pid, 'SIGKILL');
          }
        },
        shutdown ? options.shutdownKillTimeoutInMs! : options.killTimeoutInMs,
        options.clock,
      );
    };
    const onAbort = () => stop('stopped');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timeout = options.timeoutInMs != null ? setLongTimeout(() => stop('timedOut'), options.timeoutInMs, options.clock) : undefined;

    const finish = () => {
      options.signal?.removeEventListener('abort', onAbort);
      timeout?.clear();
      killTimer?.clear();
      out.flush();
      err.flush();
      resolve(result);
    };
    child.on('error', (error) => {
      result.spawnError = `could not start bash: ${error.message}`;
      finish();
    });
    child.on('close', (code, signal) => {
      result.exitCode = code;
      result.exitSignal = signal;
      // The shell is gone; make sure nothing it started in the background lingers after a stop.
      if ((result.stopped || result.timedOut) && child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      finish();
    });
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/** One line describing how a shell command ended, for errors and logs. */
export function describeShellResult(result: ShellResult, timeoutInMs?: number | null): string {
  if (result.spawnError) return result.spawnError;
  if (result.timedOut) return `timed out after ${Math.round((timeoutInMs ?? 0) / 1000)}s${result.killed ? ' (killed)' : ''}`;
  if (result.stopped) return `stopped${result.killed ? ' (killed after the grace period)' : ''}`;
  if (result.exitSignal) return `ended by ${result.exitSignal}`;
  return `exit code ${result.exitCode ?? 'unknown'}`;
}
