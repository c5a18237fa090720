import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { taskState, withTaskStates } from '@jobq/dag-core';
import { configFromFlags } from '../../flags';
import { openDeployment, type Deployment } from '../../deployment';
import { runCli } from '../../test-helpers/cli';
import { startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

// What `explain` and `status` show of a retry waiting for its delay and of a workflow cancelled at
// its deadline. The runtimes are written as the coordinator writes them (its own tests drive them).

const FLOW = [
  'name: delays',
  'timeout_s: 600',
  'tasks:',
  '  - name: flaky',
  '    num_retries: 2',
  '    retry_delay_s: 300',
  '    kwargs: {cmd: "exit 1"}',
  '  - name: after',
  '    depends_on: [flaky]',
  '    kwargs: {cmd: "true"}',
  '',
].join('\n');

let storage: TestStorage;
let prefix: string;
let deployment: Deployment;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Delays');
  deployment = await openDeployment(configFromFlags({}, storage.env(prefix)));
  await deployment.client.submit({ text: FLOW, filename: 'delays.yaml' }, { id: 'delays-1' });
});
afterAll(() => storage.stop());

/** Saves the runtime of delays-1 with these task states and workflow fields replaced. */
async function rewrite(change: Parameters<typeof withTaskStates>[1], fields: Parameters<typeof withTaskStates>[2]): Promise<void> {
  const loaded = await deployment.store.load('delays-1');
  if (!loaded) throw new Error('no runtime');
  await deployment.store.save(withTaskStates(loaded.runtime, change, fields), loaded.etag, { previous: loaded.runtime });
}

describe('retry delays and the deadline in the CLI', () => {
  it('explain says when a waiting retry is due; status shows the deadline and why the workflow was cancelled', async () => {
    const now = Date.now();
    const dispatchedAt = new Date(now).toISOString();
    const dueAt = new Date(now + 3_600_000).toISOString();
    const deadlineAt = new Date(now + 600_000).toISOString();
    const loaded = await deployment.store.load('delays-1');
    const flaky = taskState(loaded!.runtime, 'flaky')!;
    await rewrite([['flaky', { ...flaky, status: 'running', attemptNo: 2, dispatchedAt, error: 'exit code 1', retryDueAt: dueAt }]], {
      activated: true,
      status: 'running',
      deadlineAt,
    });

    const text = await runCli(['workflow', 'explain', 'delays-1', '--task', 'flaky'], { env: storage.env(prefix) });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`retry 1 of 2 due at ${dueAt} (in `);
    const json = await runCli(['workflow', 'explain', 'delays-1', '--task', 'flaky', '--json'], { env: storage.env(prefix) });
    const doc = JSON.parse(json.stdout) as { task: { retry_due_at: string | null }; workflow: { reasons: string[] } };
    expect(doc.task.retry_due_at).toBe(dueAt);
    expect(doc.workflow.reasons).toContain(
      `deadline at ${deadlineAt} (timeout_s 600): the coordinator cancels the workflow if it is still running then`,
    );

    const reason = `deadline passed: the workflow's timeout_s (600 s) ran out at ${deadlineAt}`;
    const current = (await deployment.store.load('delays-1'))!.runtime;
    await rewrite(
      [
        ['flaky', { ...taskState(current, 'flaky')!, status: 'cancelled', error: `workflow cancelled: ${reason}` }],
        ['after', { ...taskState(current, 'after')!, status: 'cancelled', error: `workflow cancelled: ${reason}` }],
      ],
      { status: 'cancelled', cancelRequested: true, cancelReason: reason, cancelAppliedAt: deadlineAt, finishedAt: deadlineAt },
    );
    const status = await runCli(['workflow', 'status', 'delays-1'], { env: storage.env(prefix) });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/Status\s+cancelled/);
    expect(status.stdout).toContain(`Deadline  ${deadlineAt} (timeout_s 600)`);
    expect(status.stdout).toContain(`Cancelled ${reason}`);
    const statusJson = JSON.parse(
      (await runCli(['workflow', 'status', 'delays-1', '--json', '--no-tasks'], { env: storage.env(prefix) })).stdout,
    ) as Record<string, unknown>;
    expect(statusJson).toMatchObject({ deadline_at: deadlineAt, cancel_reason: reason });
  });
});
