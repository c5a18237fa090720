import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { METRICS, metricsMarkdownTable, type MetricDefinition } from '@jobq/ports';
import { openWorkflowStore } from '@jobq/store-azure';
import { UsageError } from './errors';
import { parseMetricsPort } from './metrics';
import { PrometheusInstruments, serveMetrics } from './prometheus';
import { CLI, cleanEnv, runCli } from './test-helpers/cli';

const ROOT = join(__dirname, '..', '..', '..');
const DEFINITIONS = Object.values(METRICS) as MetricDefinition[];

/** One sample of the exposition text: metric (histogram suffixes removed), labels (without `le`), value. */
interface Sample {
  metric: string;
  labels: Record<string, string>;
  value: number;
}

function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)) if (pair[1] !== 'le') labels[pair[1]!] = pair[2]!;
    const metric = m[1]!.replace(/_(bucket|sum|count)$/, (suffix, _s, offset: number, whole: string) =>
      DEFINITIONS.some((d) => d.name === whole.slice(0, offset) && d.type === 'histogram') ? '' : suffix,
    );
    out.push({ metric, labels, value: Number(m[3]) });
  }
  return out;
}

/** Problems of an exposition against METRICS: a missing metric, a wrong type, a sample with other labels. */
function mismatches(text: string): string[] {
  const problems: string[] = [];
  for (const d of DEFINITIONS) {
    if (!text.includes(`# TYPE ${d.name} ${d.type}\n`)) problems.push(`${d.name}: no "# TYPE ${d.name} ${d.type}"`);
  }
  for (const s of samples(text)) {
    const d = DEFINITIONS.find((x) => x.name === s.metric);
    if (!s.metric.startsWith('jobq_')) continue;
    if (!d) problems.push(`${s.metric}: not in METRICS`);
    else if (JSON.stringify(Object.keys(s.labels).sort()) !== JSON.stringify([...d.labels].sort()))
      problems.push(`${s.metric}: labels ${JSON.stringify(s.labels)}`);
  }
  return problems;
}

function sum(text: string, metric: string, labels: Record<string, string> = {}): number {
  return samples(text)
    .filter((s) => s.metric === metric && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

const servers: Server[] = [];
const closers: Array<() => Promise<void>> = [];
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
});

/** A port something else listens on. */
async function takenPort(): Promise<number> {
  const server = createServer();
  servers.push(server);
  return listen(server);
}

async function freePorts(count: number): Promise<number[]> {
  const opened = Array.from({ length: count }, () => createServer());
  const ports: number[] = [];
  for (const server of opened) ports.push(await listen(server));
  await Promise.all(opened.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}

describe('metrics docs', () => {
  it('docs/metrics.md holds the table generated from METRICS, and the README names every metric', () => {
    const docs = readFileSync(join(ROOT, 'docs', 'metrics.md'), 'utf8');
    expect(docs).toContain(`${metricsMarkdownTable()}\n`);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    // The README keeps the first three columns of each row.
    for (const row of metricsMarkdownTable().split('\n').slice(2))
      expect(readme).toContain(`${row.split(' | ').slice(0, 3).join(' | ')} |\n`);
  });
});

describe('--metrics-port', () => {
  it('takes 0 to 65535; anything else is a usage error', () => {
    expect([parseMetricsPort('0'), parseMetricsPort('9464'), parseMetricsPort('65535')]).toEqual([0, 9464, 65_535]);
    for (const bad of ['', '-1', '65536', '12a', '1.5']) expect(() => parseMetricsPort(bad)).toThrow(UsageError);
  });
});

describe('serveMetrics', () => {
  it('serves every metric of METRICS with its type, and the process metrics, on GET /metrics only', async () => {
    const endpoint = await serveMetrics(0, '127.0.0.1');
    closers.push(() => endpoint.close());
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    endpoint.instruments.inc('jobq_coordinator_completions_total', { result: 'applied' }, 3);
    endpoint.instruments.observe('jobq_worker_task_duration_seconds', { queue: 'cpu', outcome: 'done' }, 2);
    const response = await fetch(endpoint.url);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(mismatches(text)).toEqual([]);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(sum(text, 'jobq_coordinator_completions_total', { result: 'applied' })).toBe(3);
    expect((await fetch(endpoint.url.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('a port in use is a failure (exit 1) with one line', async () => {
    const port = await takenPort();
    const error = await serveMetrics(port, '127.0.0.1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`metrics endpoint 127.0.0.1:${port}: the port is in use`);
  });

  it('keeps at most 100 queue label values, then "other"; a bad recording never throws', async () => {
    const instruments = new PrometheusInstruments();
    for (let i = 0; i < 150; i++) instruments.inc('jobq_coordinator_dispatches_total', { queue: `q${i}`, result: 'ok' });
    const text = await instruments.scrape();
    const queues = new Set(
      samples(text)
        .filter((s) => s.metric === 'jobq_coordinator_dispatches_total')
        .map((s) => s.labels.queue),
    );
    expect(queues.size).toBe(101);
    expect(sum(text, 'jobq_coordinator_dispatches_total', { queue: 'other' })).toBe(50);
    expect(() => instruments.inc('jobq_coordinator_completions_total', { result: 'applied', extra: 'x' })).not.toThrow();
    expect(() => instruments.set('jobq_worker_slots', { queue: 'cpu' }, Number.NaN)).not.toThrow();
  });
});

describe('metrics flags (subprocess)', () => {
  it('a bad --metrics-port exits 2 with one line', async () => {
    const result = await runCli(['worker', '--queue', 'jobs', '--metrics-port', 'x1']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--metrics-port expects a port from 0 to 65535, got "x1"');
  });

  it('a --metrics-port in use exits 1 with one line', async () => {
    const port = await takenPort();
    const result = await runCli(['worker', '--queue', 'jobs', '--metrics-port', String(port)]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([`jobq: metrics endpoint 127.0.0.1:${port}: the port is in use`]);
  });

  it('after the diamond example on jobq dev, a scrape matches METRICS and its completion counters equal the stats document', async () => {
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const child = spawn(
      process.execPath,
      [
        CLI,
        'dev',
        '--json',
        '--workers',
        '2',
        '--metrics-port',
        '0',
        '--blob-port',
        String(blob),
        '--queue-port',
        String(queue),
        '--table-port',
        String(table),
      ],
      {
        env: cleanEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    child.stdin.end();
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const deadline = Date.now() + 60_000;
    while (!/^\{[\s\S]*\n\}\n/.test(out)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`jobq dev did not start\n${err}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const report = JSON.parse(out) as { env: Record<string, string>; connection_string: string };
    const url = /metrics: serving (http:\/\/\S+)/.exec(err)?.[1];
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const run = await runCli(['workflow', 'run', join(ROOT, 'examples', 'diamond.yaml'), '--quiet'], { env: cleanEnv(report.env) });
    expect(run.code).toBe(0);

    const store = await openWorkflowStore({
      connection: { connectionString: report.connection_string },
      prefix: 'Local',
      createIfMissing: false,
    });
    // The stats document is written every 10 s: scrape until it has caught up with the run.
    let text = '';
    let stats: Record<string, unknown> | null = null;
    for (;;) {
      text = await (await fetch(url!)).text();
      stats = await store.readCoordinatorStats();
      if (
        stats !== null &&
        stats.completionsApplied === sum(text, 'jobq_coordinator_completions_total', { result: 'applied' }) &&
        stats.completionsApplied >= 4
      )
        break;
      if (Date.now() > deadline + 30_000) throw new Error(`stats never matched the scrape: ${JSON.stringify(stats)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(mismatches(text)).toEqual([]);
    expect(sum(text, 'jobq_coordinator_completions_total', { result: 'ignored' })).toBe(stats.completionsIgnored);
    expect(sum(text, 'jobq_coordinator_completions_total', { result: 'poison' })).toBe(stats.poison);
    expect(sum(text, 'jobq_coordinator_dispatches_total', { result: 'ok' })).toBe(stats.pushes);
    // Dispatches and the worker's metrics name the queue alike (its spec).
    expect(
      samples(text).some(
        (s) => s.metric === 'jobq_worker_task_duration_seconds' && s.labels.outcome === 'done' && s.labels.queue === 'default',
      ),
    ).toBe(true);
    expect(sum(text, 'jobq_coordinator_dispatches_total', { queue: 'default', result: 'ok' })).toBe(stats.pushes);
    expect(sum(text, 'jobq_storage_requests_total', { service: 'blob' })).toBeGreaterThan(0);
    expect(sum(text, 'jobq_storage_requests_total', { service: 'table' })).toBeGreaterThan(0);
    expect(sum(text, 'jobq_storage_requests_total', { service: 'queue' })).toBeGreaterThan(0);
    expect(sum(text, 'jobq_worker_slots', { queue: 'default' })).toBe(2);
    child.kill('SIGTERM');
  });
});
