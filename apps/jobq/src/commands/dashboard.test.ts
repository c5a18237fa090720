import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { dashboardHost, pollIntervalMs } from '../dashboard';
import { UsageError } from '../errors';
import { CLI, cleanEnv, runCli } from '../test-helpers/cli';
import { schemaErrors } from '../test-helpers/json-schema';
import { startTestStorage, TWO_TASKS, uniquePrefix, type TestStorage } from '../test-helpers/storage';
import type { DashboardReport } from './dashboard';

const EXAMPLES = join(__dirname, '..', '..', '..', '..', 'examples');

describe('dashboard flags', () => {
  it('--poll-interval takes a duration of at least 250ms', () => {
    expect(pollIntervalMs('2s')).toBe(2000);
    expect(pollIntervalMs('250ms')).toBe(250);
    expect(() => pollIntervalMs('100ms')).toThrow(UsageError);
    expect(() => pollIntervalMs('soon')).toThrow('--poll-interval expects a duration such as 2s, 500ms or 1m, got "soon"');
  });

  it('--host takes loopback addresses only', () => {
    expect(['127.0.0.1', 'localhost', '::1', '127.0.0.2'].map(dashboardHost)).toEqual(['127.0.0.1', 'localhost', '::1', '127.0.0.2']);
    for (const host of ['0.0.0.0', '10.0.0.1', 'example.com', '::'])
      expect(() => dashboardHost(host)).toThrow(/loopback address only[\s\S]*ssh -L/);
  });
});

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  until: (pattern: RegExp, stream?: 'stdout' | 'stderr') => Promise<RegExpMatchArray>;
  exit: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function start(args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  const text = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const changed = (): void => [...waiters].forEach((w) => w());
  child.stdout.setEncoding('utf8').on('data', (d: string) => ((text.stdout += d), changed()));
  child.stderr.setEncoding('utf8').on('data', (d: string) => ((text.stderr += d), changed()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => (resolve(code), changed())));
  child.stdin.end();
  return {
    child,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    exit,
    until: (pattern, stream = 'stderr') =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(text[stream]);
          if (match) {
            waiters.delete(check);
            resolve(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check);
            reject(new Error(`ended before ${String(pattern)}\nstdout: ${text.stdout}\nstderr: ${text.stderr}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

async function getJson<T = Record<string, unknown>>(url: string): Promise<T> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

describe('jobq dashboard (subprocess, Azurite)', () => {
  let storage: TestStorage;
  let prefix: string;

  beforeAll(async () => {
    storage = await startTestStorage();
    prefix = uniquePrefix('Dash');
    const file = await storage.file('two.yaml', TWO_TASKS);
    const submitted = await runCli(['workflow', 'submit', file, '--id', 'two-1'], { env: storage.env(prefix) });
    expect(submitted.code).toBe(0);
  });
  afterAll(async () => {
    await storage.stop();
  });

  it('--json prints where it listens; the API lists the deployment; SIGTERM stops it with exit 0', async () => {
    const dashboard = start(['dashboard', '--port', '0', '--json', '--poll-interval', '1s'], storage.env(prefix));
    const [, url] = await dashboard.until(/jobq: dashboard on (http:\/\/127\.0\.0\.1:\d+\/)\n/);
    await dashboard.until(/^\{[\s\S]*\n\}\n/, 'stdout');
    const report = JSON.parse(dashboard.stdout()) as DashboardReport;
    expect(schemaErrors('dashboard', report)).toEqual([]);
    expect(report).toMatchObject({ url, host: '127.0.0.1', poll_interval_ms: 1000, target: `devstoreaccount1/${prefix}` });
    const list = await getJson<{ workflows: Array<{ workflow_id: string }> }>(`${url}api/workflows`);
    expect(list.workflows.map((w) => w.workflow_id)).toEqual(['two-1']);
    const graph = await getJson<{ nodes: Array<{ id: string }> }>(`${url}api/workflows/two-1/graph`);
    expect(graph.nodes.map((n) => n.id)).toEqual(['a', 'b']);
    dashboard.child.kill('SIGTERM');
    expect(await dashboard.exit).toBe(0);
  });

  it('refuses a host that is not loopback and a bad interval (exit 2), and names a taken port (exit 1)', async () => {
    const host = await runCli(['dashboard', '--host', '0.0.0.0'], { env: storage.env(prefix) });
    expect(host.code).toBe(2);
    expect(host.stderr).toMatch(/^jobq: --host 0\.0\.0\.0: the dashboard listens on a loopback address only/);
    const interval = await runCli(['dashboard', '--poll-interval', 'often'], { env: storage.env(prefix) });
    expect(interval.code).toBe(2);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const taken = await runCli(['dashboard', '--port', String(port)], { env: storage.env(prefix) });
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain(`port ${port} on 127.0.0.1 is taken`);
      expect(taken.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});

describe('jobq workflow run --dashboard --linger (embedded stack)', () => {
  it("prints the workflow URL, keeps serving after the end until Ctrl-C, and exits with the workflow's code", async () => {
    const run = start(
      ['workflow', 'run', join(EXAMPLES, 'conditional-deploy.yaml'), '--dashboard', '--dashboard-port', '0', '--linger', '--quiet'],
      cleanEnv(),
    );
    const [, url, id] = await run.until(/jobq: dashboard on (http:\/\/127\.0\.0\.1:\d+\/)workflows\/(\w+)\n/);
    await run.until(/stays up on .* until Ctrl-C \(--linger\)/);
    const detail = await getJson(`${url}api/workflows/${id}`);
    expect(detail).toMatchObject({ status: 'completed', name: 'conditional-deploy', total: 4 });
    const skipped = await getJson<{ status: string; condition: { parents: unknown[] } }>(`${url}api/workflows/${id}/task?name=page-oncall`);
    expect(skipped.status).toBe('skipped');
    expect(skipped.condition.parents[0]).toMatchObject({ name: 'test', value: { passed: true } });
    const page = await fetch(`${url}workflows/${id}`);
    expect([200, 503]).toContain(page.status); // 503 until the web UI is built
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
    expect(run.stderr()).toContain('stopping the dashboard');
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('jobq dev --dashboard', () => {
  it('serves the dashboard over the stack and names it in the --json document', async () => {
    const [blob, queue, table] = [await freePort(), await freePort(), await freePort()];
    const dev = start(
      [
        'dev',
        '--json',
        '--no-coordinator',
        '--dashboard',
        '--dashboard-port',
        '0',
        '--blob-port',
        String(blob),
        '--queue-port',
        String(queue),
        '--table-port',
        String(table),
      ],
      cleanEnv(),
    );
    const [, url] = await dev.until(/jobq: dashboard on (http:\/\/127\.0\.0\.1:\d+\/)\n/);
    await dev.until(/^\{[\s\S]*\n\}\n/, 'stdout');
    const report = JSON.parse(dev.stdout()) as { dashboard_url?: string };
    expect(schemaErrors('dev', report)).toEqual([]);
    expect(report.dashboard_url).toBe(url);
    expect(await getJson(`${url}api/workflows`)).toMatchObject({ workflows: [], next_cursor: null });
    dev.child.kill('SIGTERM');
    expect(await dev.exit).toBe(0);
  });
});
