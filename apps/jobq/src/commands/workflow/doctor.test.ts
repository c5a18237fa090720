import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Coordinator } from '@jobq/coordinator';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { createCoordinator } from '../../services';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, sasConnectionString, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

interface DoctorDoc {
  ok: boolean;
  checks: Array<{ name: string; status: 'ok' | 'warn' | 'fail'; message: string; hint: string | null }>;
  summary: { ok: number; warn: number; fail: number };
}

/** Polls `check` until it is true; fails after a generous deadline. */
async function waitFor(what: string, check: () => Promise<boolean>, deadlineInMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineInMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const statusOf = (doc: DoctorDoc, name: string): string | undefined => doc.checks.find((c) => c.name === name)?.status;

let storage: TestStorage;
let idle: string;
let served: string;
let coordinator: Coordinator | null = null;
let servedDeployment: Deployment;

beforeAll(async () => {
  storage = await startTestStorage();
  idle = uniquePrefix('DocIdle');
  served = uniquePrefix('DocServed');
  const deployment = await openDeployment(configFromFlags({}, storage.env(idle)));
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'idle-1' });
  servedDeployment = await openDeployment(configFromFlags({}, storage.env(served)));
});
afterAll(async () => {
  await coordinator?.stop();
  await storage.stop();
});

describe('jobq workflow doctor', () => {
  it('without a coordinator: the lease is an error, stale pending workflows a warning, exit 1', async () => {
    // The old spelling of --stale-pending (in seconds) still works, with one warning line.
    const result = await runCli(['workflow', 'doctor', '--stale-pending-sec', '0'], { env: storage.env(idle) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'jobq: warning: --stale-pending-sec (seconds) is deprecated and goes in the next minor version: use --stale-pending 0s\n',
    );
    expect(result.stdout).toMatch(/✔ config\s+devstoreaccount1\//);
    expect(result.stdout).toMatch(/✔ store\s+1 workflow/);
    expect(result.stdout).toMatch(/✖ coordinator lease/);
    expect(result.stdout).toMatch(/⚠ pending workflows\s+1 workflow pending .*idle-1.*no coordinator is activating workflows/);
    expect(result.stdout).toContain('→ start one: jobq workflow coordinator');
    expect(result.stdout).toMatch(/Doctor: \d+ passed, \d+ warning\(s\), \d+ error\(s\)\./);
  });

  it('prints one JSON document { ok, checks, summary } with --json, secrets masked', async () => {
    const result = await runCli(['workflow', 'doctor', '--json', '--stale-pending', '0s'], { env: storage.env(idle) });
    expect(result.code).toBe(1);
    const doc = JSON.parse(result.stdout) as DoctorDoc;
    expect(doc.ok).toBe(false);
    expect(doc.checks.map((c) => c.name)).toEqual([
      'config',
      'store',
      'completion queue',
      'coordinator lease',
      'coordinator stats',
      'corrupt workflows',
      'pending workflows',
      'running tasks',
      'ready tasks',
      'task queues',
      'workers',
    ]);
    for (const check of doc.checks) {
      expect(['ok', 'warn', 'fail']).toContain(check.status);
      expect(typeof check.message).toBe('string');
    }
    expect(statusOf(doc, 'coordinator lease')).toBe('fail');
    expect(statusOf(doc, 'coordinator stats')).toBe('warn');
    expect(statusOf(doc, 'pending workflows')).toBe('warn');
    expect(doc.summary.fail).toBeGreaterThanOrEqual(1);
    const key = /AccountKey=([^;]+)/.exec(storage.azurite.connectionString)?.[1] ?? 'no-key';
    expect(result.stdout).not.toContain(key);
  });

  it('with a running coordinator: lease and stats pass, exit 0', async () => {
    coordinator = createCoordinator(servedDeployment, {
      receiveWaitInMs: 100,
      idleSleepInMs: 50,
      cancelPollIntervalInMs: 200,
      statsIntervalInMs: 500,
      log: () => {},
    });
    await coordinator.start();
    await waitFor('the coordinator stats', async () => (await servedDeployment.store.readCoordinatorStats()) !== null);
    const result = await runCli(['workflow', 'doctor', '--json'], { env: storage.env(served) });
    const doc = JSON.parse(result.stdout) as DoctorDoc;
    expect(statusOf(doc, 'coordinator lease')).toBe('ok');
    expect(statusOf(doc, 'coordinator stats')).toBe('ok');
    expect(statusOf(doc, 'poison messages')).toBe('ok');
    expect(doc.ok).toBe(true);
    expect(result.code).toBe(0);
  });

  it('flags a task queue no worker takes from (doctor and explain)', async () => {
    await servedDeployment.client.submit({ text: `default_queue: nobody\n${TWO_TASKS}`, filename: 'two.yaml' }, { id: 'unserved-1' });
    await waitFor('the dispatch of "a"', async () => (await servedDeployment.client.status('unserved-1'))?.counts.running === 1);
    const doctor = await runCli(['workflow', 'doctor', '--stale-queue', '0'], { env: storage.env(served) });
    // No heartbeat names the queue and its message waits: an error at once (docs/design.md#placement).
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/⚠ task queues\s+no worker seems to take messages from nobody/);
    expect(doctor.stdout).toMatch(/✖ workers\s+no worker has read queue nobody in the last 2 min/);
    expect(doctor.stdout).toContain('jobq worker -q nobody');

    // The old spelling of --oldest-message (in minutes) still works, with one warning line.
    const explain = await runCli(['workflow', 'explain', 'unserved-1', '--oldest-message-min', '0'], { env: storage.env(served) });
    expect(explain.code).toBe(0);
    expect(explain.stderr).toContain(
      'jobq: warning: --oldest-message-min (minutes) is deprecated and goes in the next minor version: use --oldest-message 0m\n',
    );
    expect(explain.stdout).toMatch(/Status\s+running/);
    expect(explain.stdout).toMatch(/a\s+running\s+queue nobody\s+attempt 1/);
    expect(explain.stdout).toContain('waiting for "a" (running)');
    expect(explain.stdout).toContain('no worker is taking messages from queue "nobody"');
  });

  it('names the workflows the coordinator set aside as corrupt, with their reasons (error, exit 1); status and list show them', async () => {
    const prefix = uniquePrefix('DocCorrupt');
    const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
    await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'broken-1' });
    await deployment.store.markCorrupt(
      'broken-1',
      'the runtime of workflow "broken-1" cannot be read: it is not JSON',
      new Date().toISOString(),
    );
    const result = await runCli(['workflow', 'doctor'], { env: storage.env(prefix) });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /✖ corrupt workflows\s+1 workflow set aside as corrupt: broken-1 \(the runtime of workflow "broken-1" cannot be read: it is not JSON\)/,
    );
    const listed = await runCli(['workflow', 'list', '--status', 'corrupt', '--json'], { env: storage.env(prefix) });
    expect((JSON.parse(listed.stdout) as Array<{ workflow_id: string; status: string }>).map((w) => [w.workflow_id, w.status])).toEqual([
      ['broken-1', 'corrupt'],
    ]);
  });

  it('uses a SAS connection string (no AccountName) and says so, without printing the signature', async () => {
    const { connectionString, signature } = sasConnectionString(storage.azurite);
    const env = { ...storage.env(idle), JOBQ_STORAGE_CONNECTION_STRING: connectionString };
    const result = await runCli(['workflow', 'doctor', '--json'], { env });
    const doc = JSON.parse(result.stdout) as DoctorDoc;
    const config = doc.checks.find((c) => c.name === 'config');
    expect(config).toMatchObject({ status: 'ok' });
    expect(config?.message).toContain('storage access: devstoreaccount1: connection string from JOBQ_STORAGE_CONNECTION_STRING (SAS)');
    // The store really answers through the SAS (it used to fall back to Azurite's default ports).
    expect(doc.checks.find((c) => c.name === 'store')).toMatchObject({ status: 'ok', message: expect.stringMatching(/^1 workflow/) });
    for (const text of [result.stdout, result.stderr]) {
      expect(text).not.toContain(signature);
      expect(text).not.toContain(encodeURIComponent(signature));
    }
  });

  it('reports a missing prefix as a failed config check', async () => {
    const result = await runCli(['workflow', 'doctor'], { env: storage.env(null) });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✖ config\s+no workflow prefix configured/);
  });
});
