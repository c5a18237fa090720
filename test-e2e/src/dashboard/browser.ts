/**
 * The browser side of the dashboard tests: playwright-core driving the system chromium
 * (`JOBQ_CHROMIUM`, else `chromium` on PATH). Without one the tests print a skip line; with
 * `JOBQ_REQUIRE_BROWSER=1` (set by `.ci/run` once chromium is installed) a missing browser fails.
 */
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO } from '../cli';

export const SKIP_LINE = 'skip: dashboard browser tests: no chromium (apt-get install chromium or set JOBQ_CHROMIUM)';

/** Screenshots go here (git-ignored); their paths are printed. */
export const ARTIFACTS = join(REPO, 'test-e2e', 'artifacts');

/** Chromium flags: headless, and no attempt to reach the network (updates, sync, safe browsing). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-default-apps',
  '--disable-extensions',
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The chromium to drive: `JOBQ_CHROMIUM`, else `chromium` (or `chromium-browser`) on PATH; null when none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  const configured = env.JOBQ_CHROMIUM;
  if (configured) return executable(configured) ? configured : null;
  for (const name of ['chromium', 'chromium-browser']) {
    for (const dir of (env.PATH ?? '').split(delimiter)) {
      if (dir && executable(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

/**
 * The chromium to use, or null after printing the skip line; throws when
 * `JOBQ_REQUIRE_BROWSER=1` and there is none.
 */
export function chromiumOrSkip(env: NodeJS.ProcessEnv = process.env): string | null {
  const found = findChromium(env);
  if (found) return found;
  if (env.JOBQ_REQUIRE_BROWSER === '1') throw new Error(`JOBQ_REQUIRE_BROWSER=1 but ${SKIP_LINE.replace(/^skip: /, '')}`);
  process.stdout.write(`${SKIP_LINE}\n`);
  return null;
}

export async function launchChromium(path: string): Promise<Browser> {
  const args = [...CHROMIUM_ARGS];
  // Root cannot use chromium's sandbox.
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return chromium.launch({ executablePath: path, args, headless: true, timeout: 60_000 });
}

/** What a page did that it must not: requests off 127.0.0.1, CSP violations, console errors. */
export interface PageGuard {
  external: string[];
  cspViolations: string[];
  consoleErrors: string[];
}

/** A page with the route guard and the listeners of {@link PageGuard}. */
export async function guardedPage(browser: Browser, viewport = { width: 1400, height: 900 }): Promise<{ page: Page; guard: PageGuard }> {
  const page = await browser.newPage({ viewport });
  const guard: PageGuard = { external: [], cspViolations: [], consoleErrors: [] };
  await page.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if ((url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '127.0.0.1') {
      guard.external.push(url.href);
      await route.abort();
      return;
    }
    await route.continue();
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`csp-violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (text.startsWith('csp-violation:') || text.includes('Content Security Policy')) guard.cspViolations.push(text);
    else guard.consoleErrors.push(text);
  });
  page.on('pageerror', (error) => guard.consoleErrors.push(`uncaught: ${error.message}`));
  return { page, guard };
}

/** Saves a screenshot under test-e2e/artifacts/ and prints its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path });
  process.stdout.write(`screenshot: ${path}\n`);
  return path;
}

/** Milliseconds from navigation start to the page's `dashboard:painted` mark for `what`. */
export async function paintedMs(page: Page, what: string, timeoutInMs: number): Promise<number> {
  const handle = await page.waitForFunction(
    (name) => {
      const mark = performance.getEntriesByName(`jobq:painted:${name}`)[0];
      return mark ? mark.startTime : null;
    },
    what,
    { timeout: timeoutInMs },
  );
  return (await handle.jsonValue()) as number;
}
