import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Cancel');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  await deployment.client.submit({ text: TWO_TASKS }, { id: 'wf-cancel' });
});
afterAll(() => storage.stop());

describe('jobq workflow cancel and retry', () => {
  it('retry of a workflow with nothing to retry says so and requests nothing', async () => {
    const result = await runCli(['workflow', 'retry', 'wf-cancel', '--json'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as { workflow_id: string; requested: boolean; message: string };
    expect(doc).toMatchObject({ workflow_id: 'wf-cancel', target: `devstoreaccount1/${prefix}`, requested: false });
    expect(doc.message).toContain('nothing to retry');
    expect((await deployment.client.status('wf-cancel'))?.retryRequestedAt).toBeNull();
  });

  it('cancel records the request and says what happened', async () => {
    const result = await runCli(['workflow', 'cancel', 'wf-cancel'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(`Cancellation requested for workflow wf-cancel in devstoreaccount1/${prefix}.`);
    expect((await deployment.client.status('wf-cancel'))?.cancelRequestedAt).not.toBeNull();
    const json = await runCli(['workflow', 'cancel', 'wf-cancel', '--json'], { env: storage.env(prefix) });
    expect(JSON.parse(json.stdout)).toMatchObject({ workflow_id: 'wf-cancel', requested: true });
  });

  it('retry after a cancel records a retry request', async () => {
    const result = await runCli(['workflow', 'retry', 'wf-cancel'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Retry requested for workflow wf-cancel');
    expect((await deployment.client.status('wf-cancel'))?.retryRequestedAt).not.toBeNull();
  });

  it('exits 1 with one line for an unknown workflow', async () => {
    for (const command of ['cancel', 'retry']) {
      const result = await runCli(['workflow', command, 'no-such-workflow'], { env: storage.env(prefix) });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toEqual(['jobq: not-found: workflow "no-such-workflow" does not exist']);
    }
  });
});
