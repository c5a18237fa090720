import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configFromFlags } from '../../flags';
import { openDeployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { FAN_OUT, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

let storage: TestStorage;
let prefix: string;
let id: string;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Status');
  const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  id = (await deployment.client.submit({ text: FAN_OUT, filename: 'fan.yaml' }, { id: 'fan-run-1' })).workflowId;
});
afterAll(() => storage.stop());

describe('jobq workflow status', () => {
  it('prints the status, a bar and the task table', async () => {
    const result = await runCli(['workflow', 'status', id], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`fan (${id}) in devstoreaccount1/${prefix}`);
    expect(result.stdout).toMatch(/Status\s+pending/);
    expect(result.stdout).toMatch(/Progress\s+\[\.{50}\] 0%/);
    expect(result.stdout).toMatch(/Task\s+Status\s+Queue\s+Attempt\s+Error/);
    expect(result.stdout).toMatch(/fan-002\s+pending\s+default\s+0/);
    expect(result.stdout).not.toContain('Layer');
  });

  it('prints one JSON document with the counts, the tasks and, with --by-layer, the layers', async () => {
    const result = await runCli(['workflow', 'status', id, '--json', '--by-layer'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as {
      workflow_id: string;
      name: string;
      status: string;
      total: number;
      counts: Record<string, number>;
      runtime: { status: string; activated: boolean };
      tasks: Array<Record<string, unknown>>;
      layers: Array<Record<string, unknown>>;
    };
    expect(doc).toMatchObject({ workflow_id: id, name: 'fan', status: 'pending', total: 4 });
    expect(doc.counts).toMatchObject({ ready: 1, pending: 3, completed: 0 });
    expect(doc.runtime).toMatchObject({ status: 'pending', activated: false });
    expect(doc.tasks.map((t) => t.task_name)).toEqual(['root', 'fan-001', 'fan-002', 'fan-003']);
    expect(doc.tasks[0]).toEqual({
      task_name: 'root',
      status: 'ready',
      queue: 'default',
      attempt_no: 0,
      error: null,
      deps: '0/0',
      dispatched_at: null,
      started_at: null,
      completed_at: null,
      skip_reason: null,
      output: null,
      log_blob: null,
      placement: null,
    });
    expect(doc.tasks[1]).toMatchObject({ task_name: 'fan-001', status: 'pending', deps: '0/1' });
    expect(doc.layers).toEqual([
      { layer: 'root', total: 1, pending: 0, ready: 1, running: 0, completed: 0, failed: 0, skipped: 0 },
      { layer: 'fan', total: 3, pending: 3, ready: 0, running: 0, completed: 0, failed: 0, skipped: 0 },
    ]);
  });

  it('shows the layer rollup in text with --by-layer --no-tasks', async () => {
    const result = await runCli(['workflow', 'status', id, '--by-layer', '--no-tasks'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Layer\s+Total\s+Pending\s+Ready\s+Running\s+Completed\s+Failed\s+Skipped\s+Progress/);
    expect(result.stdout).toMatch(/fan\s+3\s+3\s+0/);
    expect(result.stdout).not.toMatch(/Task\s+Status/);
  });

  it('takes the ACCOUNT/PREFIX positional shorthand', async () => {
    const result = await runCli(['workflow', `devstoreaccount1/${prefix}`, 'status', id, '--json'], { env: storage.env(null) });
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as { workflow_id: string }).workflow_id).toBe(id);
  });

  it('exits 1 with one line for an unknown id, 2 without a prefix', async () => {
    const unknown = await runCli(['workflow', 'status', 'no-such-workflow', '--json'], { env: storage.env(prefix) });
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toEqual({
      error: { code: 'not_found', message: `workflow "no-such-workflow" does not exist in devstoreaccount1/${prefix}` },
    });
    expect(unknown.stderr.trim().split('\n')).toEqual([
      `jobq: not-found: workflow "no-such-workflow" does not exist in devstoreaccount1/${prefix}`,
    ]);
    const withDebug = await runCli(['workflow', 'status', 'no-such-workflow', '--debug'], { env: storage.env(prefix) });
    expect(withDebug.code).toBe(1);
    expect(withDebug.stderr.trim().split('\n').length).toBeGreaterThan(1);
    const noPrefix = await runCli(['workflow', 'status', id], { env: storage.env(null) });
    expect(noPrefix.code).toBe(2);
    expect(noPrefix.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 1 with one line when the storage cannot be reached', async () => {
    const down = storage.azurite.connectionString.replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:1');
    const result = await runCli(['workflow', 'status', id], { env: { ...storage.env(prefix), JOBQ_STORAGE_CONNECTION_STRING: down } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^jobq: unavailable: /);
    expect(result.stderr).not.toContain(storage.azurite.accountKey);
  });
});
