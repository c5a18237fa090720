import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { reduce } from '@jobq/dag-core';
import { configFromFlags } from '../../flags';
import { openDeployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { FAN_OUT, TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

let storage: TestStorage;
let prefix: string;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('List');
  const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  await deployment.client.submit({ text: TWO_TASKS }, { id: 'wf-two' });
  await deployment.client.submit({ text: FAN_OUT }, { id: 'wf-fan' });
});
afterAll(() => storage.stop());

describe('jobq workflow list', () => {
  it('prints one JSON array of index rows with --json', async () => {
    const result = await runCli(['workflow', 'list', '--json'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Array<{ workflow_id: string; name: string; status: string; counts: Record<string, number> }>;
    const byId = Object.fromEntries(rows.map((r) => [r.workflow_id, r]));
    expect(Object.keys(byId).sort()).toEqual(['wf-fan', 'wf-two']);
    expect(byId['wf-two']).toMatchObject({ name: 'two', status: 'pending' });
    expect(byId['wf-fan']?.counts).toMatchObject({ ready: 1, pending: 3 });
  });

  it('prints a table, and filters by status', async () => {
    const table = await runCli(['workflow', 'list'], { env: storage.env(prefix) });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ID\s+Name\s+Status\s+Progress\s+Updated/);
    expect(table.stdout).toMatch(/wf-fan\s+fan\s+pending\s+0\/4 done, 0 fail/);
    const pending = await runCli(['workflow', 'list', '--status', 'pending,running', '--json'], { env: storage.env(prefix) });
    expect(JSON.parse(pending.stdout)).toHaveLength(2);
    const done = await runCli(['workflow', 'list', '--status', 'completed', '--json'], { env: storage.env(prefix) });
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual([]);
    expect(done.stderr).toContain('No workflows found.');
  });

  it('--recent shows finished workflows only; "No workflows found." on stderr when empty', async () => {
    const recent = await runCli(['workflow', 'list', '--recent', '5'], { env: storage.env(prefix) });
    expect(recent.code).toBe(0);
    expect(recent.stdout).toBe('');
    expect(recent.stderr.trim()).toBe('No workflows found.');
    const bad = await runCli(['workflow', 'list', '--recent', '0'], { env: storage.env(prefix) });
    expect(bad.code).toBe(2);
    const badStatus = await runCli(['workflow', 'list', '--status', 'sleeping'], { env: storage.env(prefix) });
    expect(badStatus.code).toBe(2);
  });

  it('counts cancelled tasks apart from failed ones in the Progress column', async () => {
    const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
    await deployment.client.submit({ text: FAN_OUT }, { id: 'wf-cancelled' });
    const loaded = await deployment.store.load('wf-cancelled');
    if (loaded === null) throw new Error('wf-cancelled was not created');
    // What a coordinator does with a cancel request of a workflow that has not started.
    const saved = await deployment.store.save(
      reduce(loaded.runtime, { type: 'cancel', now: new Date().toISOString() }).runtime,
      loaded.etag,
    );
    expect(saved).toBeTruthy();
    const result = await runCli(['workflow', 'list', '--status', 'cancelled'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/wf-cancelled\s+fan\s+cancelled\s+0\/4 done, 0 fail, 4 cancelled\s/);
  });

  it('lists nothing for a prefix never used, without creating it', async () => {
    const result = await runCli(['workflow', `devstoreaccount1/${uniquePrefix('Unused')}`, 'list', '--json'], { env: storage.env(null) });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([]);
  });
});
