import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** The repository root and the built CLI (`pnpm build` / turbo builds it before these tests). */
export const REPO = join(__dirname, '..', '..');
export const CLI = join(REPO, 'apps', 'jobq', 'bin', 'run.js');
export const EXAMPLES = join(REPO, 'examples');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** This process's environment minus every jobq and Azure storage setting, plus `extra`. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('JOBQ_') || key === 'AZURE_STORAGE_CONNECTION_STRING') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** A running `jobq …` process with its output collected so far. */
export interface CliProcess {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves when the process has exited and its pipes are closed. */
  done: Promise<CliResult>;
  /** Resolves when `pattern` appears in stdout or stderr (rejects if the process ends first or after `timeoutInMs`). */
  waitFor(pattern: RegExp, timeoutInMs?: number): Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  input?: string;
  /** Safety net only, never an assertion (default 240 s). */
  killAfterInMs?: number;
}

/** Starts `node apps/jobq/bin/run.js ARGS…`. */
export function startCli(args: readonly string[], options: StartOptions = {}): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: options.env ?? cleanEnv(),
    cwd: options.cwd ?? REPO,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    for (const l of listeners) l();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const l of listeners) l();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.killAfterInMs ?? 240_000);
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      for (const l of listeners) l();
      resolve({ code, signal, stdout, stderr });
    });
  });
  child.stdin.end(options.input ?? '');
  let exited = false;
  void done.then(
    () => (exited = true),
    () => (exited = true),
  );
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    done,
    waitFor(pattern, timeoutInMs = 120_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) {
            cleanup();
            resolve();
          } else if (exited) {
            cleanup();
            reject(new Error(`process ended before ${String(pattern)} appeared\nstdout: ${stdout}\nstderr: ${stderr}`));
          }
        };
        const timeout = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${String(pattern)}\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, timeoutInMs);
        const cleanup = () => {
          clearTimeout(timeout);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs `jobq ARGS…` to the end. */
export function runCli(args: readonly string[], options: StartOptions = {}): Promise<CliResult> {
  return startCli(args, options).done;
}
