import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configFromFlags } from '../../flags';
import { openDeployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { FAN_OUT, TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

interface Row {
  workflow_id: string;
  task_name: string;
  status: string;
  queue: string;
  attempt_no: number;
  error: string | null;
}

let storage: TestStorage;
let prefix: string;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Tasks');
  const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  await deployment.client.submit({ text: TWO_TASKS }, { id: 'wf-two' });
  await deployment.client.submit({ text: FAN_OUT }, { id: 'wf-fan' });
});
afterAll(() => storage.stop());

async function rows(args: string[]): Promise<Row[]> {
  const result = await runCli(['workflow', 'tasks', '--json', ...args], { env: storage.env(prefix) });
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Row[];
}

describe('jobq workflow tasks', () => {
  it('lists the task rows of one workflow', async () => {
    const one = await rows(['wf-fan']);
    expect(one.map((r) => r.task_name).sort()).toEqual(['fan-001', 'fan-002', 'fan-003', 'root']);
    expect(one.find((r) => r.task_name === 'root')).toEqual(
      expect.objectContaining({ workflow_id: 'wf-fan', status: 'ready', queue: 'default', attempt_no: 0, error: null }),
    );
    const text = await runCli(['workflow', 'tasks', 'wf-two'], { env: storage.env(prefix) });
    expect(text.stdout).toMatch(/Task\s+Status\s+Queue\s+Attempt\s+Error/);
    expect(text.stdout).toMatch(/\nb\s+pending\s+default\s+0/);
  });

  it('filters by --status, --name-prefix and --limit; takes several ids or none', async () => {
    expect((await rows(['wf-fan', '--status', 'pending'])).map((r) => r.task_name).sort()).toEqual(['fan-001', 'fan-002', 'fan-003']);
    expect((await rows(['--workflow', 'wf-fan', '--name-prefix', 'fan-00'])).map((r) => r.task_name).sort()).toEqual([
      'fan-001',
      'fan-002',
      'fan-003',
    ]);
    expect(await rows(['wf-fan', '--limit', '2'])).toHaveLength(2);
    expect(await rows(['wf-fan', '--limit', '0'])).toHaveLength(4);
    expect(await rows(['wf-fan', '--queue', 'gpu'])).toEqual([]);
    const several = await rows(['wf-two', 'wf-fan']);
    expect(new Set(several.map((r) => r.workflow_id))).toEqual(new Set(['wf-two', 'wf-fan']));
    expect(several).toHaveLength(6);
    const all = await rows(['--status', 'ready']);
    expect(all.map((r) => `${r.workflow_id}/${r.task_name}`).sort()).toEqual(['wf-fan/root', 'wf-two/a']);
  });

  it('exits 1 for an unknown workflow and 2 for --name-prefix without a workflow', async () => {
    const unknown = await runCli(['workflow', 'tasks', 'nope'], { env: storage.env(prefix) });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    const usage = await runCli(['workflow', 'tasks', '--name-prefix', 'fan'], { env: storage.env(prefix) });
    expect(usage.code).toBe(2);
  });
});
