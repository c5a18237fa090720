import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { createServer, type Server } from 'node:net';
import { createCliShim } from '../embedded';
import { CLI, cleanEnv, runCli } from '../test-helpers/cli';
import { schemaErrors } from '../test-helpers/json-schema';
import { UsageError } from '../errors';
import { DEFAULT_PORT_BASE, devDataDir, devPorts, devServiceBus, devWorkerQueues, type DevReport } from './dev';

describe('devPorts', () => {
  it("defaults to Azurite's usual 10000, 10001 and 10002", () => {
    expect(DEFAULT_PORT_BASE).toBe(10_000);
    expect(devPorts({})).toEqual({ blob: 10_000, queue: 10_001, table: 10_002 });
  });

  it('--port-base N gives N, N+1, N+2; a single port flag overrides its service only', () => {
    expect(devPorts({ 'port-base': 20_000 })).toEqual({ blob: 20_000, queue: 20_001, table: 20_002 });
    expect(devPorts({ 'port-base': 20_000, 'queue-port': 30_000 })).toEqual({ blob: 20_000, queue: 30_000, table: 20_002 });
    expect(devPorts({ 'blob-port': 1, 'queue-port': 2, 'table-port': 3 })).toEqual({ blob: 1, queue: 2, table: 3 });
  });

  it('with the local Service Bus broker adds the port base + 3 (AMQP) and + 4 (admin), or --sb-port and the next one', () => {
    expect(devPorts({}, true)).toEqual({ blob: 10_000, queue: 10_001, table: 10_002, servicebus: 10_003, servicebus_admin: 10_004 });
    expect(devPorts({ 'port-base': 20_000, 'sb-port': 5_672 }, true)).toMatchObject({ servicebus: 5_672, servicebus_admin: 5_673 });
    expect(() => devPorts({ 'sb-port': 10_001 }, true)).toThrow(/must differ/);
    expect(() => devPorts({ 'blob-port': 10_004 }, true)).toThrow(/must differ/);
    expect(() => devPorts({ 'sb-port': 5_672 })).toThrow(/--sb-port .* needs --queues sb:\/\/local/);
  });

  it('--queues takes sb://local only', () => {
    expect(devServiceBus(undefined)).toBe(false);
    expect(devServiceBus('sb://local')).toBe(true);
    expect(() => devServiceBus('sb://my-namespace')).toThrow(UsageError);
    expect(() => devServiceBus('myaccount')).toThrow(/--queues takes sb:\/\/local/);
  });

  it('equal ports are a usage error', () => {
    expect(() => devPorts({ 'blob-port': 10_001 })).toThrow(UsageError);
    expect(() => devPorts({ 'blob-port': 5, 'queue-port': 6, 'table-port': 5 })).toThrow(/must differ/);
  });
});

describe('devWorkerQueues', () => {
  it('runs no workers unless --workers or --queue is given', () => {
    expect(devWorkerQueues(undefined, undefined)).toEqual({ queues: [], numWorkers: 0 });
    expect(devWorkerQueues([], undefined)).toEqual({ queues: [], numWorkers: 0 });
  });

  it('--workers alone pulls "default"; --queue alone runs one worker per queue; duplicates are dropped', () => {
    expect(devWorkerQueues(undefined, 3)).toEqual({ queues: ['default'], numWorkers: 3 });
    expect(devWorkerQueues(['gpu', 'cpu', 'gpu'], undefined)).toEqual({ queues: ['gpu', 'cpu'], numWorkers: 1 });
    expect(devWorkerQueues(['myaccount/gpu'], 2)).toEqual({ queues: ['myaccount/gpu'], numWorkers: 2 });
  });

  it('rejects bad queue names, and Service Bus queues without the local broker, as usage errors', () => {
    expect(() => devWorkerQueues(['Bad_Name'], 1)).toThrow(UsageError);
    expect(() => devWorkerQueues(['sb://ns/q'], 1)).toThrow(/needs the local broker: add --queues sb:\/\/local/);
    expect(devWorkerQueues(['sb://ns/q', 'gpu'], 1, true)).toEqual({ queues: ['sb://ns/q', 'gpu'], numWorkers: 1 });
  });
});

const temps: string[] = [];
afterEach(async () => {
  for (const dir of temps.splice(0)) {
    await chmod(dir, 0o700).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'jobq-dev-test-'));
  temps.push(dir);
  return dir;
}

/**
 * An existing directory this process cannot write to: a read-only one of its own, or (root writes
 * through permissions) /sys, which the kernel keeps read-only.
 */
async function unwritableDir(): Promise<string> {
  if (process.getuid?.() === 0) return '/sys';
  const dir = await tempDir();
  await chmod(dir, 0o500);
  return dir;
}

describe('devDataDir', () => {
  it('creates a missing directory and returns its absolute path', async () => {
    const base = await tempDir();
    const path = await devDataDir(join(base, 'a', 'b'));
    expect(path).toBe(resolve(base, 'a', 'b'));
    expect((await stat(path)).isDirectory()).toBe(true);
  });

  it('names a path that is a file, or under a file, or unwritable, as a usage error', async () => {
    const file = join(await tempDir(), 'file');
    await writeFile(file, 'x');
    await expect(devDataDir(file)).rejects.toThrow(new UsageError(`--data ${file}: not a directory`));
    await expect(devDataDir(join(file, 'data'))).rejects.toThrow(UsageError);
    const readOnly = await unwritableDir();
    await expect(devDataDir(readOnly)).rejects.toThrow(new RegExp(`^--data ${readOnly}: the directory is not writable \\(`));
    await expect(devDataDir('')).rejects.toThrow(/--data needs a directory/);
  });
});

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  const ports: number[] = [];
  for (const server of servers) ports.push(await listen(server, 0));
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}

/** A free port whose next port is free too (the local broker's AMQP and admin ports). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const [port] = (await freePorts(1)) as [number];
    const next = createServer();
    const ok = await listen(next, port + 1).then(
      () => true,
      () => false,
    );
    await new Promise<void>((resolve) => (ok ? next.close(() => resolve()) : resolve()));
    if (ok && port < 65_535) return port;
  }
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  until: (pattern: RegExp) => Promise<void>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** `jobq dev ARGS…` (or another command) as a process that keeps running. */
function startDev(args: string[], command = 'dev', env: NodeJS.ProcessEnv = cleanEnv()): Running {
  const child = spawn(process.execPath, [CLI, command, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const waiter of waiters) waiter();
  };
  child.stdout.setEncoding('utf8').on('data', (d: string) => ((out += d), changed()));
  child.stderr.setEncoding('utf8').on('data', (d: string) => ((err += d), changed()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal });
      changed();
    });
  });
  child.stdin.end();
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    until: (pattern) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(out)) {
            waiters.delete(check);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check);
            reject(new Error(`jobq dev ended before ${String(pattern)}\nstdout: ${out}\nstderr: ${err}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

describe('jobq dev (subprocess)', () => {
  it('--json prints the settings once ready and exits 0 on SIGTERM', async () => {
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const dev = startDev([
      '--json',
      '--no-coordinator',
      '--blob-port',
      String(blob),
      '--queue-port',
      String(queue),
      '--table-port',
      String(table),
    ]);
    await dev.until(/^\{[\s\S]*\n\}\n/);
    const report = JSON.parse(dev.stdout()) as DevReport;
    expect(schemaErrors('dev', report)).toEqual([]);
    expect(report).toMatchObject({
      status: 'ready',
      prefix: 'devstoreaccount1/Local',
      ports: { blob, queue, table },
      coordinator: false,
      workers: [],
    });
    expect(report.env.JOBQ_STORAGE_CONNECTION_STRING).toBe(report.connection_string);
    expect(report).toMatchObject({ data_dir: null, auto_workers: false });
    // Said once, on stderr: nothing is kept.
    expect(dev.stderr().match(/everything is kept in memory and lost when it stops \(keep it on disk with --data DIR\)/g)).toHaveLength(1);
    dev.child.kill('SIGTERM');
    expect(await dev.exit).toEqual({ code: 0, signal: null });
    expect(dev.stdout().trim().split('\n').at(-1)).toBe('}');
  });

  it('without --json prints the export lines for another terminal and exits 0 on SIGINT', async () => {
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const dev = startDev(['--no-coordinator', '--blob-port', String(blob), '--queue-port', String(queue), '--table-port', String(table)]);
    await dev.until(/Ctrl-C or SIGTERM stops it\./);
    const text = dev.stdout();
    expect(text).toContain('export JOBQ_WORKFLOW_PREFIX=devstoreaccount1/Local\n');
    expect(text).toMatch(
      new RegExp(
        `export JOBQ_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=[^']+;BlobEndpoint=http://127\\.0\\.0\\.1:${blob}/devstoreaccount1;QueueEndpoint=http://127\\.0\\.0\\.1:${queue}/devstoreaccount1;TableEndpoint=http://127\\.0\\.0\\.1:${table}/devstoreaccount1;'\\n`,
      ),
    );
    expect(text).toContain('jobq workflow coordinator');
    dev.child.kill('SIGINT');
    expect(await dev.exit).toEqual({ code: 0, signal: null });
  });

  it('--queues sb://local runs a local Service Bus broker; a separate worker with the printed settings runs a workflow on it', async () => {
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const sbPort = await freePortPair();
    const dev = startDev([
      '--json',
      '--queues',
      'sb://local',
      '--blob-port',
      String(blob),
      '--queue-port',
      String(queue),
      '--table-port',
      String(table),
      '--sb-port',
      String(sbPort),
    ]);
    await dev.until(/^\{[\s\S]*\n\}\n/);
    const report = JSON.parse(dev.stdout()) as DevReport;
    expect(schemaErrors('dev', report)).toEqual([]);
    expect(report.ports).toEqual({ blob, queue, table, servicebus: sbPort, servicebus_admin: sbPort + 1 });
    expect(report.servicebus).toEqual({
      connection_string: `Endpoint=sb://127.0.0.1:${sbPort};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
      admin_endpoint: `http://127.0.0.1:${sbPort + 1}`,
    });
    expect(report.env).toMatchObject({
      JOBQ_WORKFLOW_QUEUES: 'sb://local',
      JOBQ_SERVICEBUS_CONNECTION_STRING: report.servicebus?.connection_string,
      JOBQ_SERVICEBUS_ADMIN_ENDPOINT: `http://127.0.0.1:${sbPort + 1}`,
    });

    const shim = await createCliShim();
    try {
      const env = cleanEnv({ ...report.env, PATH: [shim.dir, process.env.PATH].filter(Boolean).join(delimiter) });
      const worker = startDev(['--queue', 'default'], 'worker', env);
      const run = await runCli(['workflow', 'run', join(__dirname, '..', '..', '..', '..', 'examples', 'diamond.yaml'), '--json'], { env });
      expect(run.code).toBe(0);
      expect((JSON.parse(run.stdout) as { status: string }).status).toBe('completed');
      expect(worker.stderr()).toMatch(/compare\/1\] done/);
      worker.child.kill('SIGTERM');
      expect((await worker.exit).code).toBe(0);
    } finally {
      await shim.cleanup();
    }
    dev.child.kill('SIGTERM');
    expect(await dev.exit).toEqual({ code: 0, signal: null });
  });

  it('--data on a path it cannot write names it and exits 2 before starting anything', async () => {
    const readOnly = await unwritableDir();
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const dev = startDev(['--data', readOnly, '--blob-port', String(blob), '--queue-port', String(queue), '--table-port', String(table)]);
    expect(await dev.exit).toEqual({ code: 2, signal: null });
    expect(dev.stderr()).toMatch(new RegExp(`^jobq: --data ${readOnly}: the directory is not writable \\([^)]+\\)\n$`));
    expect(dev.stdout()).toBe('');
  });

  it('--data keeps the history across a restart; --auto-workers runs a task routed to a queue no --queue names', async () => {
    const data = join(await tempDir(), 'stack');
    const [blob, queue, table] = (await freePorts(3)) as [number, number, number];
    const ports = ['--blob-port', String(blob), '--queue-port', String(queue), '--table-port', String(table)];
    const workflow = join(await tempDir(), 'routed.yaml');
    await writeFile(
      workflow,
      [
        'name: routed',
        'tasks:',
        '  - name: hello',
        '    queue: cpu',
        '    kwargs:',
        '      cmd: |',
        `        echo '{"hello": "cpu"}' > "$JOBQ_OUTPUT_FILE"`,
        '',
      ].join('\n'),
    );

    const first = startDev(['--json', '--data', data, '--auto-workers', ...ports]);
    await first.until(/^\{[\s\S]*\n\}\n/);
    const before = JSON.parse(first.stdout()) as DevReport;
    expect(before).toMatchObject({ data_dir: data, auto_workers: true, workers: [], coordinator: true });
    expect(first.stderr()).not.toMatch(/in memory/);
    const env = cleanEnv(before.env);
    const run = await runCli(['workflow', 'run', workflow, '--json'], { env });
    expect(run.code).toBe(0);
    const { workflow_id: id, status } = JSON.parse(run.stdout) as { workflow_id: string; status: string };
    expect(status).toBe('completed');
    expect(first.stderr()).toMatch(/jobq dev: started 1 local worker\(s\) on cpu \(a workflow task was routed to it; --auto-workers\)\n/);
    first.child.kill('SIGTERM');
    expect(await first.exit).toEqual({ code: 0, signal: null });

    const second = startDev(['--json', '--data', data, ...ports]);
    await second.until(/^\{[\s\S]*\n\}\n/);
    const after = JSON.parse(second.stdout()) as DevReport;
    // The same settings for clients: another terminal's exports still work.
    expect(after.env).toEqual(before.env);
    const list = await runCli(['workflow', 'list', '--json'], { env });
    expect(list.code).toBe(0);
    const listed = (JSON.parse(list.stdout) as Array<Record<string, unknown>>).filter((w) => Object.values(w).includes(id));
    expect(listed).toEqual([expect.objectContaining({ status: 'completed' })]);
    // One jobq dev per directory: two Azurites would overwrite each other's files.
    const other = (await freePorts(3)).flatMap((port, i) => [['--blob-port', '--queue-port', '--table-port'][i]!, String(port)]);
    const third = startDev(['--data', data, ...other]);
    expect(await third.exit).toEqual({ code: 1, signal: null });
    expect(third.stderr()).toContain(`jobq: --data ${data} is in use by another jobq dev (pid ${after.pid})`);
    second.child.kill('SIGTERM');
    expect(await second.exit).toEqual({ code: 0, signal: null });
  });
});
