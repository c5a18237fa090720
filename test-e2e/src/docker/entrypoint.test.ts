import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, startServiceBus, type LocalStorage, type ServiceBusEmulator } from '@jobq/local';
import { cleanEnv, runCli } from '../cli';
import { uniquePrefix } from '../stack';
import { deployImageRoot, imageEnv, probe, startImage, targetArgv, until, type ImageProcess, type ImageRoot } from './image-run';

// The images' entrypoints without Docker (deploy/README.md#checked-without-docker): one
// deploy by the Dockerfile's own command, shared by every case; each target's ENTRYPOINT + CMD run
// from it, read-only, as uid 1000 through tini, against Azurite and the Service Bus emulator.
// Short drain settings (grace 2 s, kill 1 s); every time bound is the documented one × 3.

const GRACE = ['--shutdown-grace', '2s', '--shutdown-kill-timeout', '1s'];
const READY_BOUND_MS = 3 * 5_000;
const EXIT_BOUND_MS = 3 * (2_000 + 1_000 + 2_000);
const TAKEOVER_BOUND_MS = 3 * 3_000;

let root: ImageRoot;
let storage: LocalStorage;
let sb: ServiceBusEmulator;
let scratch: string;
const started: ImageProcess[] = [];

beforeAll(async () => {
  root = deployImageRoot();
  for (const line of root.skips) process.stdout.write(`${line}\n`);
  process.stdout.write(
    `image root: deployed in ${root.deploySeconds.toFixed(1)} s (${root.deployMegabytes} MB), running under node ${root.nodeVersion}\n`,
  );
  [storage, sb] = await Promise.all([startAzurite(), startServiceBus()]);
  // Where the tasks (uid 1000) leave their marks.
  scratch = mkdtempSync(join(tmpdir(), 'jobq-image-scratch-'));
  chmodSync(scratch, 0o777);
}, 300_000);

afterAll(async () => {
  for (const p of started) p.killGroup();
  await Promise.all(started.map((p) => p.exited));
  await Promise.all([storage?.stop(), sb?.stop()]);
  root?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function env(prefix: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    HOME: scratch,
    JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString,
    JOBQ_WORKFLOW_PREFIX: `${storage.accountName}/${prefix}`,
    ...extra,
  });
}

function start(
  target: 'coordinator' | 'worker',
  environment: NodeJS.ProcessEnv,
  extra: readonly string[] = [],
  replace: Readonly<Record<string, string>> = {},
): ImageProcess {
  const p = startImage(targetArgv(root, target, { '--health-port': '0', ...replace }, extra), imageEnv(target, environment));
  started.push(p);
  return p;
}

function gone(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('the image root', () => {
  it('is read-only to the process and holds the CLI', () => {
    expect(existsSync(join(root.app, 'bin', 'run.js'))).toBe(true);
    // No write bit anywhere (root could still override it; uid 1000 cannot).
    const writable = spawnSync('find', [root.app, '-perm', '/222', '-not', '-type', 'l'], { encoding: 'utf8' }).stdout.trim();
    expect(writable).toBe('');
  });
});

/** The worker target against a queue backend: ready, a task runs, SIGTERM drains a `sleep 300` task and gives its message back. */
async function workerDrain(name: string, environment: NodeJS.ProcessEnv, queue: string): Promise<void> {
  const marks = join(scratch, name);
  const worker = start('worker', environment, GRACE, { '--queue': queue });
  const url = await worker.health(READY_BOUND_MS);
  await until('/readyz 200', async () => (await probe(`${url}/readyz`)).status === 200, READY_BOUND_MS);
  expect((await probe(`${url}/livez`)).status).toBe(200);

  const push = async (cmd: string) => {
    const pushed = await runCli(['push', '-q', queue, '-c', cmd], { env: environment });
    expect(pushed.code).toBe(0);
  };
  await push(`id -u > ${marks}.ran.tmp && mv ${marks}.ran.tmp ${marks}.ran`);
  await until('the task to run', () => Promise.resolve(existsSync(`${marks}.ran`)), 60_000);
  expect(readFileSync(`${marks}.ran`, 'utf8').trim()).toBe(root.setpriv ? '1000' : String(process.getuid?.()));

  await push(`echo $$ > ${marks}.pid.tmp && mv ${marks}.pid.tmp ${marks}.pid; sleep 300`);
  await until('the sleep task to start', () => Promise.resolve(existsSync(`${marks}.pid`)), 60_000);
  const group = Number(readFileSync(`${marks}.pid`, 'utf8').trim());
  expect(gone(group)).toBe(false);

  const signalledAt = Date.now();
  worker.child.kill('SIGTERM');
  // 503 at once (the drain has only begun: the task still runs for the 2 s grace).
  const during = await until(
    '/readyz 503',
    async () => {
      const r = await probe(`${url}/readyz`);
      return r.status === 503 ? r : null;
    },
    2_000,
  );
  expect(during.body).toMatchObject({ status: 'unavailable', stopping: true });
  const exit = await worker.exited;
  expect(exit.code).toBe(0);
  expect(exit.at - signalledAt).toBeLessThan(EXIT_BOUND_MS);
  expect(gone(group)).toBe(true);
  expect(worker.stderr).toMatch(/stopped by shutdown .*abandoning the message/);

  // The message is back: visible at once to the next reader.
  const peek = await runCli(['peek', '-q', queue, '--json'], { env: environment });
  expect(peek.code).toBe(0);
  const visible = JSON.parse(peek.stdout) as Array<{ kwargs: { cmd: string } }>;
  expect(visible.map((m) => m.kwargs.cmd)).toEqual([expect.stringContaining('sleep 300')]);
}

describe('worker target', () => {
  it('on a Storage Queue: /readyz 200, a task runs as uid 1000, SIGTERM → 503 at once, exit 0 after grace + kill, the task group gone, the message redelivered', async () => {
    await workerDrain('storage', env(uniquePrefix('ImgW')), 'default');
  });

  it('on Service Bus: the same drain', async () => {
    const environment = env(uniquePrefix('ImgS'), {
      JOBQ_SERVICEBUS_CONNECTION_STRING: sb.connectionString,
      ...(sb.adminEndpoint ? { JOBQ_SERVICEBUS_ADMIN_ENDPOINT: sb.adminEndpoint } : {}),
    });
    // CMD's `--queue default`, on the emulator's namespace.
    await workerDrain('servicebus', environment, 'sb://local/default');
  });
});

describe('coordinator target', () => {
  it('a second one waits ready as a standby holding nothing, takes over within bounds of the first stopping; SIGTERM ends a wait; a second signal exits at once', async () => {
    const environment = env(uniquePrefix('ImgC'));
    const first = start('coordinator', environment);
    const firstUrl = await first.health(READY_BOUND_MS);
    const firstReady = await until(
      'the first coordinator ready',
      async () => {
        const r = await probe(`${firstUrl}/readyz`);
        return r.status === 200 && r.body.holds === 'lease' ? r : null;
      },
      READY_BOUND_MS,
    );
    expect(firstReady.body).toMatchObject({ role: 'coordinator', phase: 'running', holds: 'lease' });

    const standby = start('coordinator', environment);
    const standbyUrl = await standby.health(READY_BOUND_MS);
    const waiting = await until(
      'the standby ready',
      async () => {
        const r = await probe(`${standbyUrl}/readyz`);
        return r.status === 200 && r.body.phase === 'waiting' ? r : null;
      },
      READY_BOUND_MS,
    );
    expect(waiting.body).toEqual({ status: 'ok', role: 'coordinator', phase: 'waiting', holds: 'nothing' });

    // A third standby is stopped while it waits: exit 0 at once, nothing held.
    const third = start('coordinator', environment);
    await third.waitFor(/waiting as a standby/, READY_BOUND_MS);
    third.child.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
    expect(third.stderr).toContain('stopped while waiting for the lease');

    const stopAt = Date.now();
    first.child.kill('SIGTERM');
    expect(
      await until(
        'the first /readyz 503',
        async () => (await probe(`${firstUrl}/readyz`)).status === 503 || first.child.exitCode !== null,
        2_000,
      ),
    ).toBe(true);
    expect((await first.exited).code).toBe(0);
    await until('the standby to take over', async () => (await probe(`${standbyUrl}/readyz`)).body.holds === 'lease', TAKEOVER_BOUND_MS);
    expect(Date.now() - stopAt).toBeLessThan(TAKEOVER_BOUND_MS + EXIT_BOUND_MS);
    expect(standby.stderr).toContain('taken over');

    // Two signals: the second exits at once without waiting for the batch.
    standby.child.kill('SIGTERM');
    standby.child.kill('SIGTERM');
    const exit = await standby.exited;
    expect(exit.code === 130 || exit.code === 0).toBe(true);
  });
});
