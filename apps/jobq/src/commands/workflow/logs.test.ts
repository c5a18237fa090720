import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Coordinator } from '@jobq/coordinator';
import { resolveConfig } from '../../config';
import { openDeployment } from '../../deployment';
import { JSON_OUTPUTS } from '../../json-output';
import { coordinatorOptions, createCoordinator } from '../../services';
import { runCli } from '../../test-helpers/cli';
import { startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

// Task logs end to end on Azurite: a workflow run by `workflow run` (its local workers keep logs by
// default), then read back with `workflow logs`, `status` and `explain`.

const WORKFLOW = `name: logs
tasks:
  - name: prep/a
    kwargs: {cmd: "echo one; echo two; echo three"}
  - name: quiet
    kwargs: {cmd: "true"}
  - name: bad
    kwargs: {cmd: "for i in $(seq 1 30); do echo line $i; done; exit 3"}
  - name: after
    depends_on: [bad]
    kwargs: {cmd: "echo never"}
`;

let storage: TestStorage;
let env: NodeJS.ProcessEnv;
let id: string;
let coordinator: Coordinator | undefined;

beforeAll(async () => {
  storage = await startTestStorage();
  const prefix = uniquePrefix('Logs');
  env = storage.env(prefix);
  const config = resolveConfig(
    { prefix: `devstoreaccount1/${prefix}` },
    { JOBQ_STORAGE_CONNECTION_STRING: storage.azurite.connectionString },
    storage.dir,
  );
  coordinator = createCoordinator(await openDeployment(config), { ...coordinatorOptions(config), log: () => undefined });
  await coordinator.start();
  const file = await storage.file('logs.yaml', WORKFLOW);
  const run = await runCli(['workflow', 'run', file, '--json', '--workers', '2'], { env });
  expect(run.code).toBe(1); // `bad` fails
  id = (JSON.parse(run.stdout) as { workflow_id: string }).workflow_id;
}, 120_000);
afterAll(async () => {
  await coordinator?.stop();
  await storage.stop();
});

const logs = (...args: string[]) => runCli(['workflow', 'logs', id, ...args], { env });

describe('jobq workflow logs', () => {
  it('lists the logs of the workflow (a silent task left none), and of one task as JSON', async () => {
    const list = await logs();
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/Task\s+Attempt\s+Outcome\s+Exit\s+Bytes\s+Worker\s+Ended/);
    expect(list.stdout).toMatch(/bad\s+1\s+failed\s+3\s+\d+/);
    expect(list.stdout).toMatch(/prep\/a\s+1\s+succeeded\s+0\s+14/);
    expect(list.stdout).not.toContain('quiet');
    const json = await logs('prep/a', '--json');
    expect(json.code).toBe(0);
    const doc = JSON_OUTPUTS['workflow-logs']!.schema.parse(JSON.parse(json.stdout));
    expect(doc).toEqual({
      workflow_id: id,
      task: 'prep/a',
      logs: [
        {
          task: 'prep/a',
          attempt: 1,
          outcome: 'succeeded',
          exit_code: 0,
          started: expect.any(String),
          ended: expect.any(String),
          bytes: 14,
          stored_bytes: 14,
          worker: expect.any(String),
        },
      ],
    });
  });

  it('prints one attempt raw, its last lines with --tail, and follows a finished task to its exit code', async () => {
    const [raw, tail, follow, failed] = await Promise.all([
      logs('prep/a'),
      logs('bad', '--tail', '2'),
      logs('prep/a', '--follow'),
      logs('bad', '--follow', '--attempt', '1'),
    ]);
    expect(raw).toMatchObject({ code: 0, stdout: 'one\ntwo\nthree\n' });
    expect(tail).toMatchObject({ code: 0, stdout: 'line 29\nline 30\n' });
    expect(follow).toMatchObject({ code: 0, stdout: 'one\ntwo\nthree\n' });
    expect(failed.code).toBe(1);
    expect(failed.stdout.split('\n')).toHaveLength(31);
    expect(failed.stderr).toContain('task "bad" ended failed');
  });

  it('answers bad input with one line and exit 2 or 1; a silent attempt prints nothing and exits 0', async () => {
    const [zero, notNumber, followAll, unknownTask, noRun, pending, unknownWorkflow, quiet] = await Promise.all([
      logs('bad', '--attempt', '0'),
      logs('bad', '--attempt', 'x'),
      logs('--follow'),
      logs('prep/b'),
      logs('prep/a', '--attempt', '2'),
      logs('after'),
      runCli(['workflow', 'logs', 'no-such-workflow'], { env }),
      logs('quiet'),
    ]);
    for (const result of [zero, notNumber, followAll]) expect(result.code).toBe(2);
    expect(followAll.stderr).toContain('--follow needs a TASK');
    expect(unknownTask.code).toBe(1);
    expect(unknownTask.stderr).toContain('has no task "prep/b"; did you mean "prep/a"?');
    expect(noRun.code).toBe(1);
    expect(noRun.stderr).toContain('task "prep/a" has attempts 1–1, not 2');
    expect(pending.code).toBe(1);
    expect(pending.stderr).toContain('task "after" has not started yet');
    expect(unknownWorkflow.code).toBe(1);
    expect(unknownWorkflow.stderr).toContain('workflow "no-such-workflow" does not exist');
    expect(quiet).toMatchObject({ code: 0, stdout: '' });
    expect(quiet.stderr).toContain('printed nothing');
  });

  it('status shows the last 5 lines of a failed task, explain --task the last 20', async () => {
    const [status, explain] = await Promise.all([
      runCli(['workflow', 'status', id], { env }),
      runCli(['workflow', 'explain', id, '--task', 'bad'], { env }),
    ]);
    expect(status.stdout).toContain(`Log of failed task bad (attempt 1, last 5 lines; all: jobq workflow logs ${id} bad)`);
    expect(status.stdout).toContain('  line 26\n  line 27\n  line 28\n  line 29\n  line 30');
    expect(status.stdout).not.toContain('line 25');
    expect(explain.stdout).toContain('  line 11\n');
    expect(explain.stdout).toContain('  line 30');
    expect(explain.stdout).not.toContain('line 10\n');
  });
});
