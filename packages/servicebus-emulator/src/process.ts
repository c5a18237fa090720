/**
 * `startServiceBusProcess`: the broker in a child process (`jobq-servicebus-emulator
 * --ready-line`), so a benchmark or a test measures clients without the broker sharing their
 * event loop. The child exits when this process does (it watches its stdin).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlAnswer } from './control';
import type { ServiceBusOptions, ServiceBusStats } from './emulator';

export interface ServiceBusProcess {
  connectionString: string;
  port: number;
  adminEndpoint: string | null;
  pid: number;
  /** The broker's counters, as `stats()` of the in-process broker (asked over the child's stdin). */
  stats(): Promise<ServiceBusStats>;
  /** SIGTERM, then SIGKILL after 5 s; idempotent. */
  stop(): Promise<void>;
}

export interface StartServiceBusProcessOptions extends Omit<ServiceBusOptions, 'now'> {
  /** How long to wait for the child to listen (default 20 000 ms). */
  startTimeoutMs?: number;
}

const KILL_GRACE_MS = 5_000;

/** The compiled bin: beside this file in `dist/`, or in `dist/` when this runs from `src/` (tests). */
function binPath(): string {
  for (const candidate of [join(__dirname, 'bin.js'), join(__dirname, '..', 'dist', 'bin.js')]) if (existsSync(candidate)) return candidate;
  throw new Error('the Service Bus emulator is not built (no dist/bin.js): run `pnpm --filter @jobq/servicebus-emulator build`');
}

export async function startServiceBusProcess(options: StartServiceBusProcessOptions = {}): Promise<ServiceBusProcess> {
  const { startTimeoutMs = 20_000, ...broker } = options;
  const args = [binPath(), '--ready-line', '--port', String(broker.port ?? 0), '--admin-port', String(broker.adminPort ?? 0)];
  const config = { ...broker };
  delete config.port;
  delete config.adminPort;
  const env = {
    ...process.env,
    JOBQ_SERVICEBUS_EMULATOR_CONFIG: JSON.stringify(config, (_key, value: unknown) => (value === Infinity ? 'Infinity' : value)),
  };
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  child.stdin.on('error', () => undefined);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4_000);
  });
  const closed = new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(`could not start: ${error.message}`));
    child.once('close', (code, signal) => resolve(signal === null ? `exit code ${String(code)}` : `signal ${signal}`));
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  // stdout is line by line: the ready line first, then one answer per request written to stdin.
  const answers: { resolve(answer: ControlAnswer): void; reject(error: Error): void }[] = [];
  let onReadyLine: ((line: string) => void) | undefined;
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    for (let newline = out.indexOf('\n'); newline >= 0; newline = out.indexOf('\n')) {
      const line = out.slice(0, newline);
      out = out.slice(newline + 1);
      if (onReadyLine) {
        const handle = onReadyLine;
        onReadyLine = undefined;
        handle(line);
        continue;
      }
      const waiter = answers.shift();
      if (!waiter) continue;
      try {
        waiter.resolve(JSON.parse(line) as ControlAnswer);
      } catch {
        waiter.reject(new Error(`the Service Bus emulator process answered ${JSON.stringify(line.slice(0, 200))}, not JSON`));
      }
    }
  });
  void closed.then((status) => {
    for (const waiter of answers.splice(0)) waiter.reject(new Error(`the Service Bus emulator process has ended (${status})`));
  });

  const waiting = new Promise<{ port: number; adminEndpoint: string | null; connectionString: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the Service Bus emulator process did not listen within ${startTimeoutMs} ms${stderr ? `: ${stderr.trim()}` : ''}`));
    }, startTimeoutMs);
    onReadyLine = (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line) as { port: number; adminEndpoint: string | null; connectionString: string });
      } catch {
        reject(
          new Error(`the Service Bus emulator process printed ${JSON.stringify(`${line}\n`.slice(0, 200))} instead of its ready line`),
        );
      }
    };
    void closed.then((status) => {
      clearTimeout(timer);
      reject(new Error(`the Service Bus emulator process ended before it listened (${status})${stderr ? `: ${stderr.trim()}` : ''}`));
    });
  });
  let ready: { port: number; adminEndpoint: string | null; connectionString: string };
  try {
    ready = await waiting;
  } catch (error) {
    // Whatever went wrong, no child and no exit listener outlive the failed start.
    process.removeListener('exit', killOnExit);
    child.kill('SIGKILL');
    throw error;
  }

  let stopping: Promise<void> | undefined;
  return {
    ...ready,
    pid: child.pid!,
    async stats() {
      if (stopping || child.exitCode !== null || child.signalCode !== null) throw new Error('the Service Bus emulator process is stopped');
      const answer = await new Promise<ControlAnswer>((resolve, reject) => {
        answers.push({ resolve, reject });
        child.stdin.write('stats\n');
      });
      if ('error' in answer) throw new Error(`the Service Bus emulator process refused a stats request: ${answer.error}`);
      return answer.stats;
    },
    stop() {
      stopping ??= (async () => {
        process.removeListener('exit', killOnExit);
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
        await closed;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
