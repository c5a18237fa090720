/**
 * Benchmark of the dashboard server (packages/dashboard) over the in-memory ports:
 *   1. the graph endpoint (`/api/workflows/ID/graph?level=…`): time and bytes (plain and gzip) per
 *      level for the wide and layered shapes at 1k, 10k and 100k tasks; "cold" is the first request
 *      of a level (the rollup is made then), "warm" the median of 3 more;
 *   2. storage requests per minute while a workflow page is open (its routes, then its event
 *      stream polled for 60 s of a virtual clock) and while the list page is open (each tab
 *      re-reading the list every 5 s), with 1 and 3 tabs.
 * Plain text tables on stdout, progress on stderr.
 * Usage: node dist/dashboard-server.js   (JOBQ_DASH_SIZES=1000,10000 for a subset)
 */
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { gzipSync } from 'node:zlib';
import { definitionHash } from '@jobq/coordinator';
import { createRuntime, reduce } from '@jobq/dag-core';
import { startDashboard } from '@jobq/dashboard';
import { MemoryOutputStore, MemoryWorkerRegistry, MemoryWorkflowStore } from '@jobq/memory';
import { VirtualClock, type WorkflowStore } from '@jobq/ports';
import { failureText, median } from './report';
import { definitionOf, type Shape } from './shapes';

const SIZES = (process.env.JOBQ_DASH_SIZES ?? '1000,10000,100000').split(',').map(Number);
const SHAPES: Shape[] = ['wide', 'layered'];
const LEVELS = ['auto', 'families', 'siblings', 'layers', 'tasks'];

function progress(line: string): void {
  process.stderr.write(`[dashboard bench] ${line}\n`);
}

/** GET a URL; status, body and milliseconds. */
function get(url: string): Promise<{ status: number; body: Buffer; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), ms: performance.now() - start }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

/** A store that counts its calls. */
function counted(inner: WorkflowStore): { store: WorkflowStore; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]): unknown => {
        calls[key] = (calls[key] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls };
}

const kb = (bytes: number): string => (bytes / 1024).toFixed(1);

async function graphs(): Promise<void> {
  const rows: string[][] = [];
  for (const shape of SHAPES) {
    for (const n of SIZES) {
      progress(`${shape} ${n}: building`);
      const definition = definitionOf(shape, n);
      const memory = new MemoryWorkflowStore();
      const id = 'bench-wf';
      let runtime = createRuntime(definition, { workflowId: id, now: '2026-01-01T00:00:00.000Z', outputsContainer: 'bench-outputs' });
      runtime = reduce(runtime, { type: 'activate', now: '2026-01-01T00:00:01.000Z' }).runtime;
      await memory.create(runtime, definitionHash(definition));
      const dashboard = await startDashboard({ store: memory, webRoot: __dirname });
      try {
        for (const level of LEVELS) {
          const url = `${dashboard.url}api/workflows/${id}/graph?level=${level}`;
          const cold = await get(url);
          if (cold.status !== 200) {
            rows.push([shape, String(n), level, `refused (${cold.status})`, '', '', '', '']);
            continue;
          }
          const warm: number[] = [];
          for (let i = 0; i < 3; i++) warm.push((await get(url)).ms);
          const doc = JSON.parse(cold.body.toString('utf8')) as { level: string; nodes: unknown[] };
          rows.push([
            shape,
            String(n),
            level === 'auto' ? `auto→${doc.level}` : level,
            String(doc.nodes.length),
            cold.ms.toFixed(0),
            median(warm).toFixed(0),
            kb(cold.body.length),
            kb(gzipSync(cold.body).length),
          ]);
        }
      } finally {
        await dashboard.close();
      }
    }
  }
  const header = ['shape', 'tasks', 'level', 'nodes', 'cold ms', 'warm ms', 'KB', 'gzip KB'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(
    `\nDashboard graph endpoint (in-memory store; KB as sent without Accept-Encoding, gzip KB as a browser gets it)\n${line(header)}\n${rows.map(line).join('\n')}\n`,
  );
}

/** Lets sockets and timers of the server run (no wall-clock waits). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

async function requestsPerMinute(): Promise<void> {
  const clock = new VirtualClock();
  const memory = new MemoryWorkflowStore();
  const definition = definitionOf('layered', 10_000);
  let runtime = createRuntime(definition, { workflowId: 'wf', now: '2026-01-01T00:00:00.000Z', outputsContainer: 'o' });
  runtime = reduce(runtime, { type: 'activate', now: '2026-01-01T00:00:01.000Z' }).runtime;
  await memory.create(runtime, definitionHash(definition));
  const { store, calls } = counted(memory);
  const workers = new MemoryWorkerRegistry({ clock });
  const dashboard = await startDashboard({
    store,
    outputs: new MemoryOutputStore(),
    workers,
    clock,
    webRoot: __dirname,
    pollIntervalMs: 2_000,
  });
  const lines: string[] = [];
  const total = (): number => Object.values(calls).reduce((a, b) => a + b, 0);
  try {
    for (const tabs of [1, 3]) {
      // A workflow page: the header and the graph, then its event stream for a minute.
      const before = total();
      const workersBefore = workers.calls.list;
      const streams = [];
      for (let t = 0; t < tabs; t++) {
        await get(`${dashboard.url}api/workflows/wf`);
        await get(`${dashboard.url}api/workflows/wf/graph`);
        const req = request(`${dashboard.url}api/events?workflow=wf`);
        req.on('response', (res) => res.resume());
        req.end();
        streams.push(req);
      }
      await settle();
      for (let s = 0; s < 60; s++) {
        await clock.advance(1_000);
        await settle();
      }
      lines.push(
        `workflow page, ${tabs} tab(s): ${total() - before} workflow-store requests and ${workers.calls.list - workersBefore} worker-registry lists in the first minute (${JSON.stringify(calls)})`,
      );
      for (const req of streams) req.destroy();
      await settle();
      for (const key of Object.keys(calls)) delete calls[key];
    }
    for (const tabs of [1, 3]) {
      const before = calls.listWorkflows ?? 0;
      for (let s = 0; s < 60; s += 5) {
        for (let t = 0; t < tabs; t++) await get(`${dashboard.url}api/workflows`);
        await clock.advance(5_000);
      }
      lines.push(`list page, ${tabs} tab(s) re-reading every 5 s: ${(calls.listWorkflows ?? 0) - before} index listings per minute`);
      await clock.advance(10_000);
    }
    const idle = total();
    await clock.advance(60_000);
    await settle();
    lines.push(`no page open: ${total() - idle} requests per minute`);
  } finally {
    await dashboard.close();
  }
  process.stdout.write(
    `\nDashboard storage requests per minute (poll interval 2 s, list cached 10 s; layered 10k workflow)\n${lines.join('\n')}\n`,
  );
}

async function main(): Promise<void> {
  const [one, five, fifteen] = loadavg();
  progress(`load average at start: ${one!.toFixed(2)} / ${five!.toFixed(2)} / ${fifteen!.toFixed(2)}`);
  await graphs();
  await requestsPerMinute();
}

main().catch((error: unknown) => {
  process.stderr.write(`${failureText(error)}\n`);
  process.exit(1);
});
