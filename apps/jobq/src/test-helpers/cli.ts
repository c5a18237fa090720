import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

/** The built CLI entry point (the package's `test` script builds before jest runs). */
export const CLI = join(__dirname, '..', '..', 'bin', 'run.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunCliOptions {
  /** Environment of the child (default: this process's, without JOBQ_* and connection strings). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Written to the child's stdin, which is then closed. */
  input?: string;
  /** Kill the child after this long (a safety net, not an assertion; default 120 s). */
  killAfterInMs?: number;
}

/** The environment of this process minus every jobq, Azure storage and OpenTelemetry setting, so tests start clean. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('JOBQ_') || key === 'AZURE_STORAGE_CONNECTION_STRING') continue;
    // Nor tracing settings (docs/observability.md#tracing): a test that wants them passes them.
    if (key.startsWith('OTEL_') || key === 'TRACEPARENT' || key === 'TRACESTATE') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** Runs `node bin/run.js ARGS…` as a real process and collects its exit code and output. */
export function runCli(args: readonly string[], options: RunCliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: options.env ?? cleanEnv(),
      cwd: options.cwd ?? process.cwd(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.killAfterInMs ?? 120_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** A CLI process left running, with its output so far. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts the built CLI with `args` and `env`, collecting its stderr; stdout is drained. */
export function startCli(args: string[], env: NodeJS.ProcessEnv): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

/** Polls `check` until it is true; fails after a generous deadline. */
export async function pollUntil(what: string, check: () => boolean | Promise<boolean>, deadlineInMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineInMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The exit code of a running CLI; SIGKILLs it after `deadlineInMs`. */
export async function exitOf(running: RunningCli, deadlineInMs = 60_000): Promise<number | null> {
  const timer = setTimeout(() => running.child.kill('SIGKILL'), deadlineInMs);
  try {
    return await running.exited;
  } finally {
    clearTimeout(timer);
  }
}
