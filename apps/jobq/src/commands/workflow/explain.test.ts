import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configFromFlags } from '../../flags';
import { openDeployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

interface TaskDoc {
  name: string;
  status: string;
  reasons: string[];
}

let storage: TestStorage;
let prefix: string;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Explain');
  const deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'two-1' });
});
afterAll(() => storage.stop());

describe('jobq workflow explain', () => {
  it('says a workflow no coordinator picked up is not activated, and what each task waits for', async () => {
    const result = await runCli(['workflow', 'explain', 'two-1'], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Workflow\s+two \(two-1\) in devstoreaccount1\//);
    expect(result.stdout).toMatch(/Status\s+pending, not activated/);
    expect(result.stdout).toContain('not yet activated: the coordinator has not processed its wake-up (is a coordinator running?)');
    expect(result.stdout).toMatch(/a\s+ready\s+queue default/);
    expect(result.stdout).toMatch(/b\s+pending\s+queue default[\s\S]*waiting for "a" \(ready\)/);
    expect(result.stdout).toContain('Queues');
  });

  it('explains one task with --task, as JSON with --json', async () => {
    const text = await runCli(['workflow', 'explain', 'two-1', '--task', 'b'], { env: storage.env(prefix) });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('dep_policy all: 0 of 1 dependencies satisfied; waiting for "a" (ready)');
    expect(text.stdout).not.toMatch(/^a\s+ready/m);

    const json = await runCli(['workflow', 'explain', 'two-1', '--task', 'b', '--json'], { env: storage.env(prefix) });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      workflow: { workflow_id: string; status: string; activated: boolean };
      task: TaskDoc & { depends_on: string[] };
    };
    expect(doc.workflow).toMatchObject({ workflow_id: 'two-1', status: 'pending', activated: false });
    expect(doc.task).toMatchObject({ name: 'b', status: 'pending', depends_on: ['a'] });
    expect(doc.task.reasons.join('\n')).toContain('waiting for "a"');
  });

  it('exits 1 with one line for an unknown task or workflow', async () => {
    const task = await runCli(['workflow', 'explain', 'two-1', '--task', 'nope'], { env: storage.env(prefix) });
    expect(task.code).toBe(1);
    expect(task.stdout).toBe('');
    expect(task.stderr.trim().split('\n')).toHaveLength(1);
    expect(task.stderr).toContain('task "nope" is not in workflow "two-1"');
    const workflow = await runCli(['workflow', 'explain', 'no-such-workflow', '--json'], { env: storage.env(prefix) });
    expect(workflow.code).toBe(1);
    expect(JSON.parse(workflow.stdout)).toEqual({
      error: { code: 'not_found', message: expect.stringContaining('workflow "no-such-workflow" does not exist') },
    });
    expect(workflow.stderr).toContain('workflow "no-such-workflow" does not exist');
  });
});
