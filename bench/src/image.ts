/**
 * The container processes (deploy/README.md#images), with Azurite in a child process and the
 * built CLI (apps/jobq/bin/run.js) as the images run it (`NODE_ENV=production`):
 *   - cold start: `jobq --version` and `jobq worker --help`, median of N runs, ms;
 *   - idle RSS (VmRSS) of a worker and of a coordinator, once ready (/readyz 200) and idle 3 s;
 *   - SIGTERM to exit, ms: an idle worker, a busy worker (one `sleep 300` task; grace 2 s, kill
 *     timeout 1 s), a coordinator;
 *   - takeover by a standby coordinator (`--wait-for-lease`): from the holder's SIGTERM (it
 *     releases the lease) and from its SIGKILL (the 60 s lease must expire) to the standby's
 *     /readyz saying it holds the lease.
 * Plain text on stdout, progress on stderr. The labelled lines are listed in bench/README.md.
 *
 * Usage: node dist/image.js [--runs=5]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { startAzuriteProcess, type AzuriteProcess } from '@jobq/local';
import { failureText, median } from './report';

const CLI = join(__dirname, '..', '..', 'apps', 'jobq', 'bin', 'run.js');
let runs = 5;
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--runs' && value && Number(value) >= 1) runs = Math.floor(Number(value));
  else {
    process.stderr.write(`image bench: unknown argument "${arg}" (known: --runs=N)\n`);
    process.exit(2);
  }
}

const progress = (message: string) => process.stderr.write(`[image bench] ${message}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

function baseEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('JOBQ_') && k !== 'AZURE_STORAGE_CONNECTION_STRING') env[k] = v;
  return { ...env, NODE_ENV: 'production', ...extra };
}

function coldMs(args: string[]): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [CLI, ...args], { env: baseEnv({}), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`jobq ${args.join(' ')} failed: ${r.stderr}`);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

interface Proc {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number>;
  url: Promise<string>;
}

function start(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [CLI, ...args, '--health-port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let resolveUrl!: (url: string) => void;
  const url = new Promise<string>((resolve) => (resolveUrl = resolve));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    const m = /health: serving http:\/\/[^:]+:(\d+)\/livez/.exec(stderr);
    if (m) resolveUrl(`http://127.0.0.1:${m[1]}`);
  });
  const exited = new Promise<number>((resolve) => child.on('close', () => resolve(performance.now())));
  return { child, stderr: () => stderr, exited, url };
}

async function readyz(url: string): Promise<Record<string, unknown> | null> {
  try {
    const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
    return r.status === 200 ? ((await r.json()) as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

async function until(what: string, check: () => Promise<boolean>, deadlineInMs = 120_000): Promise<void> {
  const end = Date.now() + deadlineInMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function stopMs(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<number> {
  const at = performance.now();
  p.child.kill(signal);
  return (await p.exited) - at;
}

async function main(): Promise<void> {
  const loadAtStart = load();
  progress(`cold starts (${runs} runs each)`);
  const version = coldMs(['--version']);
  const workerHelp = coldMs(['worker', '--help']);

  progress('starting Azurite');
  const storage: AzuriteProcess = await startAzuriteProcess();
  const results: string[] = [];
  try {
    const env = (prefix: string) =>
      baseEnv({ JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString, JOBQ_WORKFLOW_PREFIX: `${storage.accountName}/${prefix}` });
    const drain = ['--shutdown-grace', '2s', '--shutdown-kill-timeout', '1s'];

    progress('idle worker: RSS and SIGTERM to exit');
    const worker = start(['worker', '--queue', 'benchidle', ...drain], env('BenchImgW'));
    const wurl = await worker.url;
    await until('the worker ready', async () => (await readyz(wurl)) !== null);
    await sleep(3_000);
    const workerRss = rssMb(worker.child.pid!);
    const idleWorkerStop = await stopMs(worker);

    progress('busy worker: SIGTERM to exit with one sleep 300 task');
    const busy = start(['worker', '--queue', 'benchbusy', ...drain], env('BenchImgB'));
    const burl = await busy.url;
    await until('the busy worker ready', async () => (await readyz(burl)) !== null);
    const push = spawnSync(process.execPath, [CLI, 'push', '-q', 'benchbusy', '-c', 'sleep 300'], {
      env: env('BenchImgB'),
      encoding: 'utf8',
    });
    if (push.status !== 0) throw new Error(`push failed: ${push.stderr}`);
    await until('the task to start', () => Promise.resolve(/started \(shell/.test(busy.stderr())));
    const busyWorkerStop = await stopMs(busy);

    progress('coordinator: RSS, SIGTERM to exit');
    const coordinator = start(['workflow', 'coordinator'], env('BenchImgC'));
    const curl = await coordinator.url;
    await until('the coordinator ready', async () => (await readyz(curl))?.holds === 'lease');
    await sleep(3_000);
    const coordinatorRss = rssMb(coordinator.child.pid!);
    const coordinatorStop = await stopMs(coordinator);

    const takeover = async (signal: NodeJS.Signals): Promise<number> => {
      const prefix = `BenchImgT${signal === 'SIGKILL' ? 'K' : 'T'}`;
      const holder = start(['workflow', 'coordinator', '--wait-for-lease'], env(prefix));
      const hurl = await holder.url;
      await until('the holder ready', async () => (await readyz(hurl))?.holds === 'lease');
      const standby = start(['workflow', 'coordinator', '--wait-for-lease'], env(prefix));
      const surl = await standby.url;
      await until('the standby waiting', async () => (await readyz(surl))?.phase === 'waiting');
      const at = performance.now();
      holder.child.kill(signal);
      await until('the standby to take over', async () => (await readyz(surl))?.holds === 'lease', 180_000);
      const ms = performance.now() - at;
      await stopMs(standby);
      await holder.exited;
      return ms;
    };
    progress('takeover after SIGTERM (lease released)');
    const takeoverTerm = await takeover('SIGTERM');
    progress('takeover after SIGKILL (the lease must expire: up to 60 s)');
    const takeoverKill = await takeover('SIGKILL');

    results.push(
      `cold jobq --version ms (median of ${runs}): ${f(version)}`,
      `cold jobq worker --help ms (median of ${runs}): ${f(workerHelp)}`,
      `idle RSS MB, worker: ${f(workerRss, 1)}`,
      `idle RSS MB, coordinator: ${f(coordinatorRss, 1)}`,
      `SIGTERM to exit ms, idle worker: ${f(idleWorkerStop)}`,
      `SIGTERM to exit ms, busy worker (grace 2 s, kill timeout 1 s): ${f(busyWorkerStop)}`,
      `SIGTERM to exit ms, coordinator: ${f(coordinatorStop)}`,
      `standby takeover ms after SIGTERM (lease released): ${f(takeoverTerm)}`,
      `standby takeover ms after SIGKILL (lease expiry, 60 s lease): ${f(takeoverKill)}`,
    );
  } finally {
    await storage.stop();
  }
  process.stdout.write('jobq image benchmark: the CLI as the containers run it (NODE_ENV=production), Azurite in a child process\n');
  process.stdout.write(`node ${process.version}; load average (1/5/15 min) at start: ${loadAtStart}\n`);
  for (const line of results) process.stdout.write(`${line}\n`);
  process.stdout.write(`load average (1/5/15 min) at end: ${load()}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`image bench failed: ${failureText(error)}\n`);
  process.exit(1);
});
