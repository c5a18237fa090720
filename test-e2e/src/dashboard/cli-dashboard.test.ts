/**
 * The dashboard of a real `jobq workflow run FILE --dashboard --dashboard-port 0 --linger` (the
 * embedded local stack), in the system chromium: final states, the skipped task's condition with
 * its parent's values, and a retried task's attempts and logs.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { EXAMPLES, startCli, type CliProcess } from '../cli';
import { chromiumOrSkip, guardedPage, launchChromium, paintedMs, screenshot, type PageGuard } from './browser';

const chromiumPath = chromiumOrSkip();
const maybe = chromiumPath ? describe : describe.skip;

/** Runs an example with the dashboard and waits until it lingers; returns the workflow page's URL. */
async function lingering(file: string): Promise<{ proc: CliProcess; url: string }> {
  const proc = startCli(['workflow', 'run', join(EXAMPLES, file), '--dashboard', '--dashboard-port', '0', '--linger']);
  const pattern = /the dashboard stays up on (http:\/\/127\.0\.0\.1:\d+\/workflows\/\S+) until Ctrl-C/;
  await proc.waitFor(pattern, 150_000);
  return { proc, url: pattern.exec(proc.stderr + proc.stdout)![1]! };
}

async function stop(proc: CliProcess): Promise<number | null> {
  proc.child.kill('SIGINT');
  return (await proc.done).code;
}

maybe('the dashboard of jobq workflow run --dashboard --linger', () => {
  let browser: Browser;
  const guards: PageGuard[] = [];

  beforeAll(async () => {
    browser = await launchChromium(chromiumPath!);
  });

  afterAll(async () => {
    await browser?.close();
    for (const g of guards) expect(g).toEqual({ external: [], cspViolations: [], consoleErrors: [] });
  });

  async function open(url: string): Promise<Page> {
    const { page, guard } = await guardedPage(browser);
    guards.push(guard);
    await page.goto(url);
    return page;
  }

  it('conditional-deploy: final states, and the skipped task shows its condition with the inputs.test values', async () => {
    const { proc, url } = await lingering('conditional-deploy.yaml');
    try {
      const page = await open(url);
      await paintedMs(page, 'svg', 20_000);
      const labels = async (): Promise<string[]> =>
        (await page.locator('.graph-svg .node').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('aria-label') ?? ''))).sort();
      expect(await labels()).toEqual(['deploy: completed', 'page-oncall: skipped', 'report: completed', 'test: completed']);
      await expect(page.locator('.wf-status').first().textContent()).resolves.toBe('completed');
      await screenshot(page, 'dashboard-conditional-deploy');

      await page.locator('.graph-svg .node', { hasText: 'page-oncall' }).click();
      const drawer = page.locator('.drawer');
      await drawer.locator('.condition').waitFor();
      await expect(drawer.locator('.condition').textContent()).resolves.toBe('not inputs.test.passed');
      await expect(drawer.locator('.condition-result').textContent()).resolves.toBe('false');
      const values = await drawer.locator('.parent-values tbody tr').first().textContent();
      expect(values).toContain('inputs.test');
      expect(values).toContain('"passed": true');
      expect(values).toContain('"coverage": 0.93');
      expect(new URL(page.url()).searchParams.get('task')).toBe('page-oncall');
      await screenshot(page, 'dashboard-conditional-deploy-skipped');
      await page.close();
    } finally {
      expect(await stop(proc)).toBe(0);
    }
  });

  it("flaky-retries: download's drawer shows both attempts, the failed one's log and error", async () => {
    const { proc, url } = await lingering('flaky-retries.yaml');
    try {
      // A deep link straight to the drawer.
      const page = await open(`${url}?task=download`);
      const drawer = page.locator('.drawer');
      await drawer.locator('.attempts li').nth(1).waitFor();
      const attempts = await drawer.locator('.attempts > li > button').allTextContents();
      expect(attempts).toHaveLength(2);
      expect(attempts[0]).toMatch(/attempt 1: failed \(exit 1\)/);
      expect(attempts[1]).toMatch(/attempt 2: succeeded/);
      // The last attempt's log is open; then the failed one's.
      await drawer.locator('.log-text', { hasText: 'attempt 2' }).waitFor();
      await drawer.locator('.attempts > li > button').first().click();
      await drawer.locator('.log-text', { hasText: 'connection reset by peer (simulated)' }).waitFor();
      await expect(drawer.locator('.facts').textContent()).resolves.toContain('2/3');
      await screenshot(page, 'dashboard-flaky-retries-download');
      await page.close();
    } finally {
      expect(await stop(proc)).toBe(0);
    }
  });
});
