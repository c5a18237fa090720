/**
 * The dashboard's web UI in the system chromium (playwright-core), against `startDashboard` on an
 * in-memory store: bundle size and esbuild time, browser launch, first paint of a 4-task workflow,
 * of a 10 000-task fan rolled up and of all its tasks on the canvas, 10 frames of a drag on the
 * canvas (dispatched in the page, each to the next animation frame), the longest
 * main-thread task and the JS heap. A paint is the page's `jobq:painted:*` mark, from navigation.
 * Plain text on stdout; prints a skip line and exits 0 without chromium (JOBQ_CHROMIUM or PATH).
 *
 * Usage: node dist/dashboard-web.js [--runs=3]
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { createRuntime, parseWorkflow, reduce, type WorkflowDefinition } from '@jobq/dag-core';
import { startDashboard } from '@jobq/dashboard';
import { MemoryWorkflowStore } from '@jobq/memory';
import { chromium, type Browser, type Page } from 'playwright-core';
import { failureText, median } from './report';

let runs = 3;
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--runs' && value && Number(value) >= 1) runs = Math.floor(Number(value));
}

const FAN = 10_000;
const T0 = '2026-01-01T00:00:00.000Z';

function findChromium(): string | null {
  const candidates = process.env.JOBQ_CHROMIUM
    ? [process.env.JOBQ_CHROMIUM]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, 'chromium'));
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return path;
    } catch {
      // not there
    }
  }
  return null;
}

function definition(name: string, tasks: Array<{ name: string; depends_on?: string[] }>): WorkflowDefinition {
  const parsed = parseWorkflow(JSON.stringify({ name, tasks: tasks.map((t) => ({ ...t, kwargs: { cmd: 'true' } })) }), {
    filename: `${name}.json`,
  });
  if (!parsed.ok) throw new Error(`bench fixture ${name}: ${JSON.stringify(parsed.issues.slice(0, 2))}`);
  return parsed.value;
}

async function create(store: MemoryWorkflowStore, id: string, def: WorkflowDefinition): Promise<void> {
  const { runtime } = reduce(createRuntime(def, { workflowId: id, now: T0 }), { type: 'activate', now: T0 });
  await store.create(runtime, `bench-${id}`);
  await store.writeIndexRow(runtime);
}

async function painted(page: Page, what: string): Promise<number> {
  const handle = await page.waitForFunction(
    (name: string) => {
      const marks = performance.getEntriesByName(`jobq:painted:${name}`);
      return marks.length > 0 ? marks[marks.length - 1]!.startTime : null;
    },
    what,
    { timeout: 60_000 },
  );
  return (await handle.jsonValue()) as number;
}

async function newPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.addInitScript(
    `window.__longest = 0; new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration); }).observe({ type: 'longtask', buffered: true });`,
  );
  return page;
}

/** What the page offers that Node's types lack (this package compiles without the DOM's). */
interface InPage {
  requestAnimationFrame(callback: () => void): number;
  __longest: number;
  performance: { now(): number; memory?: { usedJSHeapSize: number } };
  document: {
    querySelector(selector: string): { getBoundingClientRect(): { x: number; y: number }; dispatchEvent(event: unknown): boolean } | null;
  };
  PointerEvent: new (type: string, init: Record<string, unknown>) => unknown;
}

const f = (n: number, digits = 0): string => n.toFixed(digits);

async function main(): Promise<void> {
  const root = join(dirname(require.resolve('@jobq/dashboard/package.json')));
  const load = (): string =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  process.stdout.write('jobq dashboard web benchmark: the web UI in headless chromium against startDashboard on an in-memory store\n');
  process.stdout.write(`load average (1/5/15 min) at start: ${load()}\n`);

  // The bundle, built again for the time.
  execFileSync(process.execPath, [join(root, 'scripts', 'build-web.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const bundle = JSON.parse(readFileSync(join(root, 'dist', 'web', 'bundle.json'), 'utf8')) as {
    raw_bytes: number;
    gzip_bytes: number;
    esbuild_ms: number;
  };
  process.stdout.write(
    `dashboard bundle KB (raw / gzip): ${f(bundle.raw_bytes / 1024, 1)} / ${f(bundle.gzip_bytes / 1024, 1)} (budget 80 KB gzip)\n`,
  );
  process.stdout.write(`dashboard esbuild ms: ${bundle.esbuild_ms}\n`);

  const path = findChromium();
  if (!path) {
    process.stdout.write('skip: dashboard browser figures: no chromium (apt-get install chromium or set JOBQ_CHROMIUM)\n');
    return;
  }
  const store = new MemoryWorkflowStore();
  await create(
    store,
    'diamond',
    definition('diamond', [
      { name: 'a' },
      { name: 'b', depends_on: ['a'] },
      { name: 'c', depends_on: ['a'] },
      { name: 'd', depends_on: ['b', 'c'] },
    ]),
  );
  const fan = [
    { name: 'prep' },
    ...Array.from({ length: FAN - 2 }, (_, i) => ({ name: `fan-${String(i).padStart(5, '0')}`, depends_on: ['prep'] })),
  ];
  await create(store, 'fan', definition('fan', [...fan, { name: 'join', depends_on: fan.slice(1).map((t) => t.name) }]));
  const dashboard = await startDashboard({ store, port: 0 });
  const args = [
    '--headless',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ];
  if (process.getuid?.() === 0) args.push('--no-sandbox');

  const launches: number[] = [];
  const small: number[] = [];
  const rollup: number[] = [];
  const canvas: number[] = [];
  const pans: number[] = [];
  const longest: number[] = [];
  const heap: number[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      const t = performance.now();
      const browser = await chromium.launch({ executablePath: path, args, headless: true });
      launches.push(performance.now() - t);
      try {
        let page = await newPage(browser);
        await page.goto(`${dashboard.url}workflows/diamond`);
        small.push(await painted(page, 'svg'));
        await page.close();

        page = await newPage(browser);
        await page.goto(`${dashboard.url}workflows/fan`);
        rollup.push(await painted(page, 'svg'));
        await page.close();

        page = await newPage(browser);
        await page.goto(`${dashboard.url}workflows/fan?level=tasks&all=1`);
        canvas.push(await painted(page, 'canvas'));
        // Ten frames of a drag, dispatched in the page, each waited to the next animation frame
        // (once the node list beside the canvas is built).
        await page.locator('.node-list[aria-busy=false]').waitFor({ state: 'attached', timeout: 60_000 });
        pans.push(
          await page.evaluate(async () => {
            const w = globalThis as unknown as InPage;
            const el = w.document.querySelector('.graph')!;
            const r = el.getBoundingClientRect();
            const send = (type: string, dx: number, dy: number): boolean =>
              el.dispatchEvent(
                new w.PointerEvent(type, { clientX: r.x + 600 - dx, clientY: r.y + 300 - dy, button: 0, pointerId: 1, bubbles: true }),
              );
            send('pointerdown', 0, 0);
            const started = w.performance.now();
            for (let i = 1; i <= 10; i++) {
              send('pointermove', i * 25, i * 15);
              await new Promise((resolve) => w.requestAnimationFrame(() => resolve(null)));
            }
            const ms = w.performance.now() - started;
            send('pointerup', 250, 150);
            return ms;
          }),
        );
        longest.push(await page.evaluate(() => (globalThis as unknown as InPage).__longest));
        heap.push(await page.evaluate(() => (globalThis as unknown as InPage).performance.memory?.usedJSHeapSize ?? 0));
        await page.close();
      } finally {
        await browser.close();
      }
    }
  } finally {
    await dashboard.close();
  }
  const line = (label: string, values: number[], unit = 'ms'): void => {
    process.stdout.write(
      `${label} ${unit} (median of ${values.length}; min / max): ${f(median(values))} (${f(Math.min(...values))} / ${f(Math.max(...values))})\n`,
    );
  };
  line('dashboard browser launch', launches);
  line('dashboard first paint, 4-task workflow', small);
  line(`dashboard first paint, ${FAN}-task fan rolled up`, rollup);
  line(`dashboard first paint, ${FAN}-task fan on the canvas`, canvas);
  line('dashboard 10 pan frames on the canvas', pans);
  line('dashboard longest main-thread task, canvas page', longest);
  process.stdout.write(`dashboard JS heap MB, canvas page (median): ${f(median(heap) / 1024 / 1024, 1)}\n`);
  process.stdout.write(`load average (1/5/15 min) at end: ${load()}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`dashboard-web bench: ${failureText(err)}\n`);
  process.exitCode = 1;
});
