/**
 * Observability benchmark (bench/README.md): what task logs and metrics cost a worker and the
 * Prometheus endpoint.
 *   output:  a real worker in a child process runs one task writing 100 MB to stdout (and a silent
 *            one for comparison): the worker's CPU time and peak RSS, and the stored log's size —
 *            the log buffers stay bounded (first 64 KiB + last 1 MiB).
 *   metrics: 100 workflows (the diamond, 4 tasks each) end to end against Azurite in a child
 *            process, coordinator and worker recording through the CLI's Prometheus instruments
 *            and request policies; then the median time of a `GET /metrics` on the CLI's endpoint.
 * Usage: node dist/obs.js [--parts=output,metrics] [--bytes=N] [--workflows=N] [--scrapes=N]
 */
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startAzuriteProcess } from '@jobq/local';
import { serveMetrics } from '@jobq/cli/dist/prometheus';
import { storageRequestPolicies } from '@jobq/cli/dist/metrics';
import { endToEnd } from './e2e-run';
import { failureText, median, percentile } from './report';

const run = promisify(execFile);

function arg(name: string, fallback: string): string {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : found.slice(name.length + 3);
}

function log(line: string): void {
  process.stderr.write(`[obs bench] ${line}\n`);
}

const f = (n: number, digits = 2) => n.toFixed(digits);
const loadAverage = () =>
  loadavg()
    .map((x) => f(x))
    .join(' / ');

interface OutputRun {
  bytes: number;
  seconds: number;
  cpuSeconds: number;
  maxRssMiB: number;
  logStoredBytes: number;
  logPrintedBytes: number;
  completions: number;
}

async function outputChild(bytes: number): Promise<OutputRun> {
  const { stdout } = await run(process.execPath, [join(__dirname, 'obs-output-child.js'), `--bytes=${bytes}`], { maxBuffer: 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as OutputRun;
}

async function output(bytes: number): Promise<void> {
  log(`output: a silent task, then one writing ${bytes} bytes, each through a worker in a child process`);
  const silent = await outputChild(0);
  const loud = await outputChild(bytes);
  console.log(
    `Task output through a real worker (child process; CPU and peak RSS of the worker process only, from process.resourceUsage())`,
  );
  console.log(`  silent task:       ${f(silent.cpuSeconds)} s CPU, ${f(silent.maxRssMiB, 0)} MiB max RSS, ${f(silent.seconds)} s`);
  console.log(
    `  ${f(bytes / 1e6, 0)} MB of output:  ${f(loud.cpuSeconds)} s CPU, ${f(loud.maxRssMiB, 0)} MiB max RSS, ${f(loud.seconds)} s; log stored ${loud.logStoredBytes} bytes of ${loud.logPrintedBytes} printed`,
  );
  console.log(
    `worker CPU and RSS for 100 MB of output: ${f(loud.cpuSeconds)} s CPU, ${f(loud.maxRssMiB, 0)} MiB max RSS ` +
      `(silent task: ${f(silent.cpuSeconds)} s, ${f(silent.maxRssMiB, 0)} MiB; ${f((loud.cpuSeconds * 1e9) / Math.max(1, bytes), 1)} ns CPU per byte)`,
  );
  if (loud.completions !== 1 || silent.completions !== 1)
    console.log(`  (warning: completions sent: ${silent.completions} and ${loud.completions}, expected 1 each)`);
}

/** The diamond of the examples: a → b, c → d. */
function diamond(i: number): object {
  return {
    name: `diamond-${i}`,
    tasks: [
      { name: 'a', kwargs: { cmd: ':' } },
      { name: 'b', depends_on: ['a'], kwargs: { cmd: ':' } },
      { name: 'c', depends_on: ['a'], kwargs: { cmd: ':' } },
      { name: 'd', depends_on: ['b', 'c'], kwargs: { cmd: ':' } },
    ],
  };
}

async function metrics(workflows: number, scrapes: number): Promise<void> {
  const azurite = await startAzuriteProcess();
  const endpoint = await serveMetrics(0, '127.0.0.1', (line) => log(`metrics: ${line}`));
  try {
    log(`metrics: ${workflows} diamond workflows end to end, recording on ${endpoint.url}`);
    const result = await endToEnd({
      connectionString: azurite.connectionString,
      prefix: 'ObsMetrics',
      source: Array.from({ length: workflows }, (_, i) => diamond(i)),
      slots: 32,
      timeoutInMs: 600_000,
      log: (line) => log(`metrics: ${line}`),
      instruments: endpoint.instruments,
      metricsPolicies: storageRequestPolicies(endpoint.instruments),
    });
    log(`metrics: run ${result.status} in ${f(result.seconds)} s; scraping ${scrapes} times`);
    const times: number[] = [];
    let body = '';
    for (let i = 0; i < scrapes + 3; i++) {
      const t0 = performance.now();
      const response = await fetch(endpoint.url);
      body = await response.text();
      if (i >= 3) times.push(performance.now() - t0); // the first scrapes warm up
    }
    const series = body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    const jobq = series.filter((l) => l.startsWith('jobq_'));
    console.log(
      `\nPrometheus endpoint after ${workflows} workflows (${workflows * 4} tasks, run ${result.status}): ${series.length} samples (${jobq.length} jobq_*), ${body.length} bytes per scrape`,
    );
    console.log(
      `/metrics ms: ${f(median(times))} (median of ${scrapes} scrapes; p90 ${f(percentile(times, 90))}, max ${f(Math.max(...times))})`,
    );
  } finally {
    await endpoint.close();
    await azurite.stop();
  }
}

async function main(): Promise<void> {
  const parts = arg('parts', 'output,metrics').split(',');
  const bytes = Number(arg('bytes', String(100_000_000)));
  console.log(`jobq observability benchmark; node ${process.version}; load average (1/5/15 min) at start: ${loadAverage()}`);
  if (parts.includes('output')) await output(bytes);
  if (parts.includes('metrics')) await metrics(Number(arg('workflows', '100')), Number(arg('scrapes', '50')));
  console.log(`load average (1/5/15 min) at end: ${loadAverage()}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`obs bench failed: ${failureText(error)}\n`);
  process.exitCode = 1;
});
