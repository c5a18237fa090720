/**
 * The dashboard in a real browser with 10 000-task workflows (a fan and a layered DAG) in an
 * in-memory store: the rolled-up default view, every task on the canvas, a canvas click that opens
 * the drawer, a status change that shows without a reload. Time budgets are bench figures; these
 * tests allow ten times them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startDashboard, type ApiGraph, type Dashboard } from '@jobq/dashboard';
import { MemoryOutputStore, MemoryWorkflowStore } from '@jobq/memory';
import type { Browser, Page } from 'playwright-core';
import { buildModel } from '../../../packages/dashboard/src/web/graph/model';
import { chromiumOrSkip, guardedPage, launchChromium, paintedMs, screenshot, type PageGuard } from './browser';
import { createWorkflow, fanDefinition, finishTasks, layeredDefinition } from './fixtures';

const BUDGET = { defaultViewMs: 2_000, canvasMs: 2_000, panFramesMs: 1_000, statusChangeMs: 3_000 };
const SLACK = 10;
/** The fan has 10 002 tasks: over the 10 000 past which the `tasks` level waits for a click. */
const FAN = 10_000;

const chromiumPath = chromiumOrSkip();
const maybe = chromiumPath ? describe : describe.skip;

maybe('the dashboard with 10 000-task workflows in a browser', () => {
  let store: MemoryWorkflowStore;
  let dashboard: Dashboard;
  let browser: Browser;
  const guards: PageGuard[] = [];

  beforeAll(async () => {
    store = new MemoryWorkflowStore();
    await createWorkflow(store, 'fan', fanDefinition(FAN));
    await createWorkflow(store, 'layered', layeredDefinition(20, 500));
    dashboard = await startDashboard({ store, outputs: new MemoryOutputStore(), port: 0, pollIntervalMs: 200 });
    browser = await launchChromium(chromiumPath!);
  });

  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    // Every page of every test: nothing but 127.0.0.1, no CSP violation, no console error.
    for (const g of guards) expect(g).toEqual({ external: [], cspViolations: [], consoleErrors: [] });
  });

  async function open(path: string): Promise<Page> {
    const { page, guard } = await guardedPage(browser);
    guards.push(guard);
    await page.goto(new URL(path, dashboard.url).href);
    return page;
  }

  /** Clicks the centre of a node drawn on the canvas, at a view the address sets (scale 1, node near the top left). */
  async function openOnCanvas(workflow: string, level: string, task: string): Promise<Page> {
    const graph = (await (await fetch(new URL(`/api/workflows/${workflow}/graph?level=${level}`, dashboard.url))).json()) as ApiGraph;
    const model = buildModel(graph, false);
    const i = model.index.get(task)!;
    const x = model.layout.x[i]! - 100;
    const y = model.layout.y[i]! - 100;
    const page = await open(`/workflows/${workflow}?level=${level}&all=1&zoom=${x},${y},1`);
    await paintedMs(page, 'canvas', BUDGET.canvasMs * SLACK);
    const box = (await page.locator('.graph').boundingBox())!;
    await page.mouse.click(box.x + 100 + 100, box.y + 100 + 20);
    return page;
  }

  it('shows the 10 000-task fan rolled up by default, its names in the DOM', async () => {
    const page = await open('/workflows/fan');
    const ms = await paintedMs(page, 'svg', BUDGET.defaultViewMs * SLACK);
    expect(ms).toBeLessThan(BUDGET.defaultViewMs * SLACK);
    await expect(page.locator('.graph').getAttribute('data-mode')).resolves.toBe('svg');
    const labels = await page.locator('.graph-svg .node').evaluateAll((nodes) => nodes.map((n) => n.textContent?.trim()));
    expect(labels.length).toBeLessThan(10);
    expect(labels.join(' ')).toContain('prep');
    expect(labels.join(' ')).toContain(String(FAN));
    await screenshot(page, 'dashboard-fan-rollup');
    await page.close();
  });

  it('lists the tasks of a group node on a click (virtualized) and opens one', async () => {
    const page = await open('/workflows/fan');
    await paintedMs(page, 'svg', BUDGET.defaultViewMs * SLACK);
    await page.locator('.graph-svg .node-group').first().click();
    const list = page.locator('.group-panel .vlist li');
    await list.first().waitFor();
    // A window of the 10 000, not all of them.
    expect(await list.count()).toBeLessThan(100);
    await page.locator('.group-panel .vlist').evaluate((el) => (el.scrollTop = 28 * 5000));
    await page.locator('.group-panel button', { hasText: 'fan-05003' }).click();
    await expect(page.locator('.drawer .task-name').textContent()).resolves.toBe('fan-05003');
    await screenshot(page, 'dashboard-fan-group');
    await page.close();
  });

  it('renders the list, the workers page and "not found" pages', async () => {
    const list = await open('/');
    await list.locator('.wf-table a', { hasText: 'fan-out' }).waitFor();
    await expect(list.locator('.wf-table').textContent()).resolves.toContain('layered');
    await screenshot(list, 'dashboard-list');
    await list.locator('.wf-table a', { hasText: 'layered' }).click();
    await list.waitForURL(/\/workflows\/layered$/);
    await paintedMs(list, 'svg', BUDGET.defaultViewMs * SLACK);
    await list.close();
    const workers = await open('/workers');
    await workers.locator('.workers-page h1').waitFor();
    await workers.close();
    // The one console error here is the API's 404, which the page turns into "not found".
    const { page, guard } = await guardedPage(browser);
    await page.goto(new URL('/workflows/no-such-workflow', dashboard.url).href);
    await page.locator('.not-found h1', { hasText: 'not found' }).waitFor();
    await expect(page.locator('.not-found').textContent()).resolves.toContain('workflow no-such-workflow does not exist');
    expect(guard).toEqual({ external: [], cspViolations: [], consoleErrors: [expect.stringMatching(/404/)] });
    await page.close();
  });

  it('asks for a click before drawing all 10 002 tasks, then draws them on the canvas', async () => {
    const page = await open('/workflows/fan?level=tasks');
    const button = page.getByRole('button', { name: `show all ${FAN + 2} tasks` });
    await button.waitFor();
    await button.click();
    const ms = await paintedMs(page, 'canvas', BUDGET.canvasMs * SLACK);
    expect(ms).toBeGreaterThan(0);
    await expect(page.locator('.graph').getAttribute('data-mode')).resolves.toBe('canvas');
    // The canvas's nodes are in the DOM as text too.
    await page.locator('.node-list button', { hasText: 'fan-09999' }).waitFor({ state: 'attached' });
    // Ten pan frames.
    const box = (await page.locator('.graph').boundingBox())!;
    const started = Date.now();
    await page.mouse.move(box.x + 400, box.y + 300);
    await page.mouse.down();
    for (let f = 1; f <= 10; f++) {
      await page.mouse.move(box.x + 400 - f * 20, box.y + 300 - f * 30);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
    }
    await page.mouse.up();
    expect(Date.now() - started).toBeLessThan(BUDGET.panFramesMs * SLACK);
    await screenshot(page, 'dashboard-fan-canvas');
    await page.close();
  });

  it('filters by name, state and queue from the address: few enough nodes go back to SVG', async () => {
    const page = await open('/workflows/fan?level=tasks&all=1&name=fan-0004');
    await paintedMs(page, 'svg', BUDGET.defaultViewMs * SLACK);
    const names = await page.locator('.graph-svg .node text').allTextContents();
    expect(names.map((n) => n.replace(/^\S+ /, '')).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `fan-0004${i}`));
    await expect(page.locator('input[type=search]').inputValue()).resolves.toBe('fan-0004');
    await page.close();
    const running = await open('/workflows/fan?level=tasks&all=1&status=running&queue=cpu');
    await paintedMs(running, 'svg', BUDGET.defaultViewMs * SLACK);
    await expect(running.locator('.graph-svg .node').allTextContents()).resolves.toEqual([expect.stringContaining('prep')]);
    // Typing in the name box filters after a pause and lands in the address.
    await running.locator('input[type=search]').fill('join');
    await running.waitForURL(/name=join/);
    await expect(running.locator('.graph-mode').first().textContent()).resolves.toBe('0 nodes');
    await running.close();
  });

  it('opens the drawer of the task under a click on the canvas (and keeps it in the address)', async () => {
    const page = await openOnCanvas('fan', 'tasks', 'fan-00042');
    await expect(page.locator('.drawer .task-name').textContent()).resolves.toBe('fan-00042');
    expect(new URL(page.url()).searchParams.get('task')).toBe('fan-00042');
    await page.locator('.drawer dd', { hasText: 'gpu' }).waitFor();
    await screenshot(page, 'dashboard-fan-drawer');
    // A reload keeps the view: the level and the drawer.
    await page.reload();
    await expect(page.locator('.drawer .task-name').textContent()).resolves.toBe('fan-00042');
    await page.close();
  });

  it('opens a deep link to a task with the task centred and readable on the canvas', async () => {
    const page = await open('/workflows/fan?level=tasks&all=1&task=fan-07777');
    await paintedMs(page, 'canvas', BUDGET.canvasMs * SLACK);
    await expect(page.locator('.drawer .task-name').textContent()).resolves.toBe('fan-07777');
    const box = (await page.locator('.graph').boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await expect(page.locator('.graph').getAttribute('title')).resolves.toMatch(/^fan-07777: /);
    await screenshot(page, 'dashboard-fan-deep-link');
    await page.close();
  });

  it('shows a status change without a reload, on the rollup and on the canvas', async () => {
    const rollup = await open('/workflows/fan');
    await paintedMs(rollup, 'svg', BUDGET.defaultViewMs * SLACK);
    const prep = rollup.locator('.graph-svg .node', { hasText: 'prep' });
    await expect(prep.getAttribute('aria-label')).resolves.toMatch(/prep: running/);
    const canvas = await open('/workflows/layered?level=tasks');
    await paintedMs(canvas, 'canvas', BUDGET.canvasMs * SLACK);
    await canvas.locator('.node-list button', { hasText: 'l00-0007: running' }).waitFor({ state: 'attached' });

    const changedAt = Date.now();
    // Its output holds markup: the drawer shows it as text.
    await finishTasks(store, 'fan', ['prep'], true, { note: '<img src=x onerror=alert(1)><b>bold</b>' });
    await finishTasks(store, 'layered', ['l00-0007'], false);
    await rollup.waitForFunction(
      () => /prep: completed/.test(document.querySelector('.graph-svg .node')?.getAttribute('aria-label') ?? ''),
      null,
      {
        timeout: BUDGET.statusChangeMs * SLACK,
      },
    );
    await canvas
      .locator('.node-list button', { hasText: 'l00-0007: failed' })
      .waitFor({ state: 'attached', timeout: BUDGET.statusChangeMs * SLACK });
    expect(Date.now() - changedAt).toBeLessThan(BUDGET.statusChangeMs * SLACK);
    await screenshot(rollup, 'dashboard-fan-live');
    await prep.click();
    await rollup.locator('.drawer .output', { hasText: '<img src=x onerror=alert(1)><b>bold</b>' }).waitFor();
    expect(await rollup.locator('.drawer img, .drawer b').count()).toBe(0);
    await screenshot(canvas, 'dashboard-layered-live');
    await rollup.close();
    await canvas.close();
  });

  it('polls every 5 s once the event stream failed to reconnect twice, and still shows changes', async () => {
    // Its own guard: the refused streams are console errors here by design.
    const { page, guard } = await guardedPage(browser);
    let streams = 0;
    await page.route('**/api/events*', async (route) => {
      streams++;
      await route.abort('connectionrefused');
    });
    await page.goto(new URL('/workflows/layered?level=layers', dashboard.url).href);
    await page.locator('.live-polling').waitFor({ timeout: 60_000 });
    // The first try and two reconnects.
    expect(streams).toBe(3);
    await finishTasks(store, 'layered', ['l00-0001']);
    await page.waitForFunction(() => /\b1 completed\b/.test(document.querySelector('.wf-head')?.textContent ?? ''), null, {
      timeout: 30_000,
    });
    expect(streams).toBe(3);
    expect(guard.external).toEqual([]);
    expect(guard.cspViolations).toEqual([]);
    expect(guard.consoleErrors.every((e) => /ERR_CONNECTION_REFUSED|ERR_FAILED/.test(e))).toBe(true);
    await page.close();
  });

  it('shows the layered DAG by families and opens a canvas task', async () => {
    const page = await open('/workflows/layered');
    await paintedMs(page, 'svg', BUDGET.defaultViewMs * SLACK);
    const count = await page.locator('.graph-svg .node').count();
    expect(count).toBeGreaterThan(1);
    expect(count).toBeLessThanOrEqual(2_000);
    await screenshot(page, 'dashboard-layered-rollup');
    await page.close();
    const canvas = await openOnCanvas('layered', 'tasks', 'l10-0250');
    await expect(canvas.locator('.drawer .task-name').textContent()).resolves.toBe('l10-0250');
    await screenshot(canvas, 'dashboard-layered-drawer');
    await canvas.close();
  });
});
