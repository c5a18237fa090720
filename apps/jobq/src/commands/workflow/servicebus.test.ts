// End to end on Service Bus: the built CLI as real processes. The embedded stack with
// `--queues sb://local`, then one Azurite and one local broker shared by the other tests, with a
// coordinator in this process (as the storage-configured tests of run.test.ts do).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Coordinator } from '@jobq/coordinator';
import { taskState } from '@jobq/dag-core';
import { startAzurite, startServiceBus, type LocalStorage, type ServiceBusEmulator } from '@jobq/local';
import { closeEverything } from '../../closing';
import { resolveConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { LOCAL_BROKER_QUEUE_DEFAULTS, createCliShim } from '../../embedded';
import { coordinatorOptions, createCoordinator } from '../../services';
import { CLI, cleanEnv, runCli } from '../../test-helpers/cli';
import type { RunReport } from './run';

const DIAMOND = join(__dirname, '..', '..', '..', '..', '..', 'examples', 'diamond.yaml');

let dir: string;
let shim: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-sb-'));
  // Tasks call `jobq task …`: the workers started here find it on their PATH, as installed.
  shim = await createCliShim();
});
afterAll(async () => {
  await shim.cleanup();
  await rm(dir, { recursive: true, force: true });
});

async function workflowFile(name: string, lines: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

function byName(report: RunReport): Record<string, RunReport['tasks'][number]> {
  return Object.fromEntries(report.tasks.map((t) => [t.name, t]));
}

/** A CLI process that keeps running; its output so far, and a wait for a line of it. */
interface Running {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  stdout: () => string;
  until: (pattern: RegExp, withinMs?: number) => Promise<void>;
  exit: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function start(args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdin.end();
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    stderr: () => err,
    stdout: () => out,
    exit,
    until: async (pattern, withinMs = 60_000) => {
      const deadline = Date.now() + withinMs;
      while (!pattern.test(err) && !pattern.test(out)) {
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`no ${String(pattern)} in the output of jobq ${args.join(' ')}:\n${out}\n${err}`);
        await sleep(50);
      }
    },
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('jobq workflow run --queues sb://local (embedded stack)', () => {
  it('runs examples/diamond.yaml to completion on the local broker: exit 0, --json', async () => {
    const result = await runCli(['workflow', 'run', DIAMOND, '--queues', 'sb://local', '--json']);
    expect(result.stderr).toContain('a Service Bus broker (sb://local: completions and task queues)');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.tasks.map((t) => [t.name, t.status])).toEqual([
      ['featurize', 'completed'],
      ['train-gnn', 'completed'],
      ['train-rf', 'completed'],
      ['compare', 'completed'],
    ]);
    expect(byName(report).compare?.output).toEqual({ best: 'gnn', accuracy: 0.91 });
  });

  it('on SIGINT cancels the workflow through the broker, stops its task and exits 1', async () => {
    const pidFile = join(dir, 'cancel.pid');
    const file = await workflowFile('cancel.yaml', [
      'name: cancel-me',
      'tasks:',
      '  - name: wait',
      '    queue: sb://some-namespace/slow',
      `    kwargs: {cmd: "echo $$ > ${pidFile}; exec sleep 120"}`,
      '  - name: after',
      '    depends_on: [wait]',
      '    kwargs: {cmd: "true"}',
    ]);
    const run = start(['workflow', 'run', file, '--queues', 'sb://local', '--json'], cleanEnv());
    let taskPid = 0;
    const deadline = Date.now() + 60_000;
    while (taskPid === 0 && Date.now() < deadline) {
      await sleep(100);
      taskPid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim() || 0);
    }
    expect(taskPid).toBeGreaterThan(0);
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(1);
    const report = JSON.parse(run.stdout()) as RunReport;
    expect(['cancelled', 'cancelling']).toContain(report.status);
    expect(byName(report).wait?.queue).toBe('sb://some-namespace/slow');
    const goneBy = Date.now() + 10_000;
    while (alive(taskPid) && Date.now() < goneBy) await sleep(100);
    expect(alive(taskPid)).toBe(false);
  });
});

describe('a deployment on Service Bus (shared Azurite and broker, coordinator in this process)', () => {
  const PREFIX = 'SbE2e';
  let storage: LocalStorage;
  let sb: ServiceBusEmulator;
  let deployment: Deployment;
  let coordinator: Coordinator;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    storage = await startAzurite();
    // Azure-like: no queue appears by attaching to it; short locks allowed for the redelivery test.
    sb = await startServiceBus({ autoCreateQueues: false, lockDurationFloorMs: 1_000, defaults: LOCAL_BROKER_QUEUE_DEFAULTS });
    env = cleanEnv({
      JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}`,
      JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString,
      JOBQ_WORKFLOW_QUEUES: 'sb://local',
      JOBQ_SERVICEBUS_CONNECTION_STRING: sb.connectionString,
      JOBQ_SERVICEBUS_ADMIN_ENDPOINT: sb.adminEndpoint!,
      JOBQ_CANCEL_POLL_INTERVAL: '1',
      PATH: [shim.dir, process.env.PATH].filter(Boolean).join(delimiter),
    });
    deployment = await openDeployment(resolveConfig({}, env, dir));
    coordinator = createCoordinator(deployment, {
      ...coordinatorOptions(resolveConfig({}, env, dir)),
      idleSleepInMs: 100,
      log: () => undefined,
    });
    await coordinator.start();
    coordinator.run().catch(() => undefined);
  });
  afterAll(async () => {
    await coordinator?.stop();
    await closeEverything();
    await sb?.stop();
    await storage?.stop();
  });

  it('runs Storage and sb:// queues in one workflow; no task sees the Service Bus connection string', async () => {
    const output = `printf '{\\"sb\\": \\"%s\\"}' \\"\${JOBQ_SERVICEBUS_CONNECTION_STRING:-none}\\" > \\"$JOBQ_OUTPUT_FILE\\"`;
    const file = await workflowFile('mixed.yaml', [
      'name: mixed',
      'tasks:',
      '  - name: on-storage',
      '    queue: devstoreaccount1/mixed-storage',
      `    kwargs: {cmd: "${output}"}`,
      '  - name: on-servicebus',
      '    queue: sb://local/Mixed-SB',
      '    depends_on: [on-storage]',
      `    kwargs: {cmd: "${output}"}`,
      '  - name: bare-name',
      '    queue: mixed-bare',
      '    depends_on: [on-servicebus]',
      `    kwargs: {cmd: "${output}"}`,
    ]);
    const result = await runCli(['workflow', 'run', file, '--workers', '1', '--json'], { env, cwd: dir });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as RunReport;
    expect(report.tasks.map((t) => [t.name, t.status, t.queue, t.output])).toEqual([
      ['on-storage', 'completed', 'devstoreaccount1/mixed-storage', { sb: 'none' }],
      ['on-servicebus', 'completed', 'sb://local/Mixed-SB', { sb: 'none' }],
      ['bare-name', 'completed', 'mixed-bare', { sb: 'none' }],
    ]);
    // The sb:// queue and the bare name are on the broker (its names are case-insensitive); the storage queue is not.
    const onBroker = sb.registry.list().map((q) => q.name.toLowerCase());
    expect(onBroker).toEqual(expect.arrayContaining(['mixed-sb', 'mixed-bare', `${PREFIX.toLowerCase()}-workflow-completions`]));
    expect(onBroker).not.toContain('mixed-storage');
    expect(result.stdout + result.stderr).not.toContain('SAS_KEY_VALUE');
  });

  it('redelivers the task of a worker killed mid-task (SIGKILL); it completes once', async () => {
    sb.declareQueue('killq', { lockDurationMs: 2_000 });
    const runs = join(dir, 'runs');
    const firstPid = join(dir, 'first.pid');
    const file = await workflowFile('kill.yaml', [
      'name: killed',
      'tasks:',
      '  - name: once',
      '    queue: sb://local/killq',
      `    kwargs: {cmd: "echo run >> ${runs}; if [ $(wc -l < ${runs}) -eq 1 ]; then echo $$ > ${firstPid}; exec sleep 60; fi; echo '\\"second\\"' > \\"$JOBQ_OUTPUT_FILE\\""}`,
    ]);
    const submitted = await runCli(['workflow', 'submit', file], { env, cwd: dir });
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    const first = start(['sb://local/killq', 'worker'], env);
    let sleeper = 0;
    const deadline = Date.now() + 60_000;
    while (sleeper === 0 && Date.now() < deadline) {
      await sleep(100);
      sleeper = Number((await readFile(firstPid, 'utf8').catch(() => '')).trim() || 0);
    }
    expect(sleeper).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await first.exit;
    process.kill(sleeper, 'SIGKILL');

    const second = start(['sb://local/killq', 'worker'], env);
    await second.until(/delivery 2\)/);
    let status = '';
    for (const until = Date.now() + 60_000; status !== 'completed' && Date.now() < until; await sleep(200)) {
      status = (await deployment.client.status(id))?.status ?? '';
    }
    second.child.kill('SIGTERM');
    expect(await second.exit).toBe(0);
    expect(status).toBe('completed');
    const loaded = await deployment.store.load(id);
    const task = loaded === null ? undefined : taskState(loaded.runtime, 'once');
    expect(task).toMatchObject({ status: 'completed', attemptNo: 1 });
    expect((await readFile(runs, 'utf8')).trim().split('\n')).toHaveLength(2);
    expect(await deployment.outputs.getOutput(task!.outputRef)).toBe('second');
  });

  it('moves the upstream refs of a fan-in over the message limit to an overflow blob', async () => {
    const before = coordinator.counters.overflowBlobs;
    // Nine parents with 30 000-character inline outputs: their refs (about 270 KB) do not fit one Service Bus message.
    const parents = Array.from({ length: 9 }, (_, i) => `p${i + 1}`);
    const count = `jobq task get-upstream-outputs | node -e 'let s=\\"\\";process.stdin.on(\\"data\\",(d)=>(s+=d)).on(\\"end\\",()=>console.log(Object.values(JSON.parse(s)).filter((v)=>v.length===30000).length))' > \\"$JOBQ_OUTPUT_FILE\\"`;
    const file = await workflowFile('fan-in.yaml', [
      'name: wide',
      'tasks:',
      ...parents.flatMap((p) => [
        `  - name: ${p}`,
        `    kwargs: {cmd: "printf '\\"%s\\"' $(head -c 30000 /dev/zero | tr '\\\\0' x) > \\"$JOBQ_OUTPUT_FILE\\""}`,
      ]),
      '  - name: join',
      `    depends_on: [${parents.join(', ')}]`,
      `    kwargs: {cmd: "${count}"}`,
    ]);
    const result = await runCli(['workflow', 'run', file, '--workers', '3', '--json'], { env, cwd: dir });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as RunReport;
    expect(byName(report).join).toMatchObject({ status: 'completed', output: 9 });
    expect(coordinator.counters.overflowBlobs).toBe(before + 1);
  });

  it('dead-letters a poison completion; workflow doctor shows it in the dead-letter count', async () => {
    const before = coordinator.counters.poison;
    await deployment.completions.send({ body: 'this is not a completion' });
    for (const until = Date.now() + 30_000; coordinator.counters.poison === before && Date.now() < until;) await sleep(100);
    expect(coordinator.counters.poison).toBe(before + 1);
    const doctor = await runCli(['workflow', 'doctor', '--json'], { env, cwd: dir });
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; message: string; hint: string | null }> })
      .checks;
    const serviceBus = checks.find((c) => c.name === 'service bus queues');
    expect(serviceBus).toMatchObject({ status: 'warn' });
    expect(serviceBus?.message).toMatch(
      /^sb:\/\/local\/sbe2e-workflow-completions: LockDuration 1m, MaxDeliveryCount 1000, duplicate detection 10m, 0 messages, dead-letter 1 — 1 dead-lettered message/,
    );
    expect(serviceBus?.hint).toContain('jobq sb://local/sbe2e-workflow-completions peek --failed');
    expect(doctor.stdout).not.toContain('SAS_KEY_VALUE');
  });

  it('a worker whose queue is deleted under it exits 1 with one clear line', async () => {
    const worker = start(['sb://local/doomed', 'worker'], env);
    await worker.until(/worker: 1 slot\(s\) on sb:\/\/local\/doomed/);
    await sleep(300);
    sb.registry.delete('doomed');
    expect(await worker.exit).toBe(1);
    const last = worker.stderr().trim().split('\n').at(-1);
    expect(last).toMatch(/^jobq: not-found: .*"doomed".*the queue does not exist/);
  });

  it('with the namespace unreachable, workers back off and the coordinator idle-sleeps; both stop cleanly', async () => {
    const dead = cleanEnv({
      ...env,
      JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/SbDead',
      // A port nothing listens on (the broker's, once stopped, would be reused): 1 is never a broker.
      JOBQ_SERVICEBUS_CONNECTION_STRING:
        'Endpoint=sb://127.0.0.1:1;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true',
      JOBQ_SERVICEBUS_ADMIN_ENDPOINT: '',
    });
    const worker = start(['sb://local/nowhere', 'worker'], dead);
    const coordinatorProcess = start(['workflow', 'coordinator', '--idle-sleep', '0.2'], dead);
    await Promise.all([
      // `unavailable` (retryable): the worker backs off (100 ms, 200 ms, …) instead of stopping.
      worker.until(
        /the namespace could not be reached[^\n]*; retrying in 100 ms\n[^\n]*the namespace could not be reached[^\n]*; retrying in 200 ms/,
      ),
      coordinatorProcess.until(
        /receive failed: [^\n]*the namespace could not be reached[\s\S]*receive failed: [^\n]*the namespace could not be reached/,
      ),
    ]);
    worker.child.kill('SIGTERM');
    coordinatorProcess.child.kill('SIGTERM');
    expect(await worker.exit).toBe(0);
    expect(await coordinatorProcess.exit).toBe(0);
    for (const out of [worker.stderr(), coordinatorProcess.stderr()]) expect(out).not.toContain('SAS_KEY_VALUE');
  });
});
