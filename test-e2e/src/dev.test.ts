import { afterEach, describe, expect, it } from '@jest/globals';
import { createConnection, createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanEnv, runCli, startCli, type CliProcess } from './cli';

/** The `--json` document of `jobq dev`. */
interface DevReport {
  status: string;
  pid: number;
  prefix: string;
  account_name: string;
  connection_string: string;
  blob_endpoint: string;
  queue_endpoint: string;
  table_endpoint: string;
  ports: { blob: number; queue: number; table: number };
  coordinator: boolean;
  workers: Array<{ queue: string; num_workers: number }>;
  env: Record<string, string>;
}

const LOOPBACK = '127.0.0.1';

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: LOOPBACK, exclusive: true }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
}

/** `count` distinct free loopback ports (held at once, then released). */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    const ports: number[] = [];
    for (const server of servers) ports.push(await listen(server, 0));
    return ports;
  } finally {
    await Promise.all(servers.map(close));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: LOOPBACK });
    const done = (ok: boolean): void => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The processes a test started; any still running at its end are killed. */
const started: CliProcess[] = [];
function start(args: string[], env?: NodeJS.ProcessEnv): CliProcess {
  const proc = startCli(args, env === undefined ? {} : { env: cleanEnv(env) });
  started.push(proc);
  return proc;
}

afterEach(async () => {
  for (const proc of started.splice(0)) {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
    await proc.done.catch(() => undefined);
  }
});

/** Starts `jobq dev --json` on three free ports and returns the process and its settings. */
async function startDev(extraArgs: string[] = []): Promise<{ dev: CliProcess; report: DevReport; ports: number[] }> {
  const ports = await freePorts(3);
  const [blob, queue, table] = ports.map(String) as [string, string, string];
  const dev = start(['dev', '--json', '--blob-port', blob, '--queue-port', queue, '--table-port', table, ...extraArgs]);
  // The JSON document is printed once everything runs; it ends with a closing brace on its own line.
  await dev.waitFor(/^\{[\s\S]*\n\}\n/, 60_000);
  return { dev, report: JSON.parse(dev.stdout) as DevReport, ports };
}

/** Submits a file with `jobq workflow submit` in a separate process using dev's printed settings; returns the id. */
async function submit(report: DevReport, file: string): Promise<string> {
  const result = await runCli(['workflow', 'submit', file], { env: cleanEnv(report.env) });
  expect(result.code).toBe(0);
  const id = result.stdout.trim();
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  return id;
}

interface StatusDocument {
  status: string;
  tasks?: Array<{ task_name: string; status: string; attempt_no: number }>;
}

/** Polls `jobq workflow status ID --json` until the workflow is terminal (the deadline is a safety net only). */
async function waitForEnd(report: DevReport, id: string): Promise<StatusDocument> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const result = await runCli(['workflow', 'status', id, '--tasks', '--json'], { env: cleanEnv(report.env) });
    if (result.code === 0) {
      const doc = JSON.parse(result.stdout) as StatusDocument;
      if (['completed', 'failed', 'cancelled'].includes(doc.status)) return doc;
    }
    if (Date.now() > deadline) throw new Error(`workflow ${id} did not end\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
    await sleep(300);
  }
}

/** SIGTERM (or Ctrl-C's SIGINT) → exit 0, and afterwards all three ports refuse connections. */
async function stopDev(dev: CliProcess, ports: number[], signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  dev.child.kill(signal);
  const result = await dev.done;
  expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
  expect(result.stderr).toContain('jobq dev: stopped');
  expect(await Promise.all(ports.map(canConnect))).toEqual([false, false, false]);
  // Free again: another server can bind them.
  for (const port of ports) {
    const server = createServer();
    expect(await listen(server, port)).toBe(port);
    await close(server);
  }
}

describe('jobq dev', () => {
  it('serves a workflow submitted from another process (coordinator and one worker in dev), then stops on SIGTERM with exit 0', async () => {
    const { dev, report, ports } = await startDev(['--workers', '1']);
    const [blob, queue, table] = ports as [number, number, number];
    expect(report).toEqual({
      status: 'ready',
      pid: dev.child.pid,
      prefix: 'devstoreaccount1/Local',
      account_name: 'devstoreaccount1',
      connection_string: expect.stringContaining(`BlobEndpoint=http://127.0.0.1:${blob}/devstoreaccount1;`),
      blob_endpoint: `http://127.0.0.1:${blob}/devstoreaccount1`,
      queue_endpoint: `http://127.0.0.1:${queue}/devstoreaccount1`,
      table_endpoint: `http://127.0.0.1:${table}/devstoreaccount1`,
      ports: { blob, queue, table },
      coordinator: true,
      workers: [{ queue: 'default', num_workers: 1 }],
      data_dir: null,
      auto_workers: false,
      env: { JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Local', JOBQ_STORAGE_CONNECTION_STRING: report.connection_string },
    });
    expect(report.connection_string).toContain(`QueueEndpoint=http://127.0.0.1:${queue}/devstoreaccount1;`);
    expect(report.connection_string).toContain(`TableEndpoint=http://127.0.0.1:${table}/devstoreaccount1;`);
    expect(report.connection_string).toContain('AccountName=devstoreaccount1;');

    const id = await submit(report, 'examples/diamond.yaml');
    const status = await waitForEnd(report, id);
    expect(status.status).toBe('completed');
    expect(status.tasks?.map((t) => [t.task_name, t.status])).toEqual([
      ['featurize', 'completed'],
      ['train-gnn', 'completed'],
      ['train-rf', 'completed'],
      ['compare', 'completed'],
    ]);

    await stopDev(dev, ports);
  });

  it('with --no-coordinator, a `jobq workflow coordinator` and a `jobq worker` process run the workflow against it; SIGINT stops dev with exit 0', async () => {
    const { dev, report, ports } = await startDev(['--no-coordinator']);
    expect(report.coordinator).toBe(false);
    expect(report.workers).toEqual([]);

    const coordinator = start(['workflow', 'coordinator'], report.env);
    await coordinator.waitFor(/Coordinator running/, 60_000);
    const worker = start(['worker', '--queue', 'default', '--max-idle-backoff', '1s'], report.env);
    await worker.waitFor(/worker: 1 slot/, 60_000);

    const id = await submit(report, 'examples/flaky-retries.yaml');
    const status = await waitForEnd(report, id);
    expect(status.status).toBe('completed');
    expect(status.tasks?.map((t) => [t.task_name, t.status, t.attempt_no])).toEqual([
      ['download', 'completed', 2],
      ['checksum', 'completed', 1],
    ]);

    worker.child.kill('SIGTERM');
    coordinator.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
    expect((await coordinator.done).code).toBe(0);
    await stopDev(dev, ports, 'SIGINT');
  });

  it('a port already in use: one clear line on stderr, exit 1, the other ports released', async () => {
    const blocker = createServer();
    const taken = await listen(blocker, 0);
    try {
      const [queue, table] = (await freePorts(2)).map(String) as [string, string];
      const result = await runCli(['dev', '--blob-port', String(taken), '--queue-port', queue, '--table-port', table]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^jobq: port ${taken} \\(blob\\) on 127\\.0\\.0\\.1 is already in use`));
      expect(await Promise.all([queue, table].map((port) => canConnect(Number(port))))).toEqual([false, false]);
    } finally {
      await close(blocker);
    }
  });

  it('usage errors exit 2: equal ports, a port base too high', async () => {
    const same = await runCli(['dev', '--blob-port', '20001', '--queue-port', '20001', '--table-port', '20002']);
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(/ports must differ/);
    const high = await runCli(['dev', '--port-base', '65534']);
    expect(high.code).toBe(2);
  });
});
