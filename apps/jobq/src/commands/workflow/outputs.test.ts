import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Coordinator } from '@jobq/coordinator';
import { taskState } from '@jobq/dag-core';
import { parseStashMarker } from '@jobq/dag-core/wire';
import { openDeployment, type Deployment } from '../../deployment';
import { configFromFlags } from '../../flags';
import { coordinatorOptions, createCoordinator } from '../../services';
import { runCli } from '../../test-helpers/cli';
import { startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';
import { taskFolder } from './outputs';
import type { RunReport } from './run';

/**
 * `export` stashes a file and names it in its output, `count` sets a number, `never` is skipped,
 * `broken` fails and, with --max-fan-in 2, `summary` waits behind a merge node (upstream_failed).
 */
const WORKFLOW = [
  'name: outs',
  'tasks:',
  '  - name: export',
  '    kwargs:',
  '      cmd: |',
  '        d=$(dirname "$JOBQ_OUTPUT_FILE")',
  '        printf "hello file" > "$d/data.txt"',
  '        m=$(jobq task stash-file "$d/data.txt") || exit 11',
  '        jobq task set-output --json "{\\"data\\": $m, \\"rows\\": 2}"',
  '  - name: count',
  '    depends_on: [export]',
  '    kwargs: {cmd: "echo 42 > \\"$JOBQ_OUTPUT_FILE\\""}',
  '  - name: never',
  '    depends_on: [count]',
  '    condition: "inputs.count == 41"',
  '    kwargs: {cmd: "true"}',
  '  - name: broken',
  '    kwargs: {cmd: "exit 3"}',
  '  - name: summary',
  '    depends_on: [export, count, broken]',
  '    kwargs: {cmd: "true"}',
  '',
].join('\n');

const STUCK =
  'name: stuck\ntasks:\n  - name: first\n    queue: nobody\n    kwargs: {cmd: "true"}\n  - name: second\n    depends_on: [first]\n    kwargs: {cmd: "true"}\n';

let storage: TestStorage;
let prefix: string;
let env: NodeJS.ProcessEnv;
let deployment: Deployment;
let coordinator: Coordinator;
let report: RunReport;
let stuck: string;
beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Outputs');
  env = storage.env(prefix);
  const config = configFromFlags({}, env);
  deployment = await openDeployment(config);
  coordinator = createCoordinator(deployment, { ...coordinatorOptions(config), idleSleepInMs: 200, log: () => undefined });
  await coordinator.start();
  const file = await storage.file('outs.yaml', WORKFLOW);
  // Beside it, a task on a queue no worker reads stays running; the one after it pending.
  const submitted = await deployment.client.submit({ text: STUCK, filename: 'stuck.yaml' }, { id: 'stuck-1' });
  stuck = submitted.workflowId;
  const run = await runCli(['workflow', 'run', file, '--workers', '2', '--max-fan-in', '2', '--json'], { env });
  expect(run.code).toBe(1);
  report = JSON.parse(run.stdout) as RunReport;
}, 60_000);
afterAll(async () => {
  await coordinator?.stop();
  await storage?.stop();
});

describe('jobq workflow outputs', () => {
  it('prints {task: output} (merge nodes left out, a skipped task null) or one task alone; --files downloads the stashed files (DIR for one task, DIR/TASK/ for all)', async () => {
    const one = join(storage.dir, 'one');
    const all = join(storage.dir, 'all');
    const [everything, single, skipped] = await Promise.all([
      runCli(['workflow', 'outputs', report.workflow_id, '--files', all], { env }),
      runCli(['workflow', 'outputs', report.workflow_id, 'export', '--files', one], { env }),
      runCli(['workflow', 'outputs', report.workflow_id, 'never'], { env }),
    ]);
    expect(everything.code).toBe(0);
    const doc = JSON.parse(everything.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(['export', 'count', 'never', 'broken', 'summary']);
    expect(doc).toMatchObject({ count: 42, never: null, broken: null, summary: null });
    expect(parseStashMarker((doc.export as { data: unknown }).data)).toMatchObject({ size: 10 });
    expect(single.code).toBe(0);
    expect(JSON.parse(single.stdout)).toEqual(doc.export);
    expect(skipped).toMatchObject({ code: 0, stdout: 'null\n' });
    expect(await readFile(join(one, 'data.txt'), 'utf8')).toBe('hello file');
    expect(await readFile(join(all, 'export', 'data.txt'), 'utf8')).toBe('hello file');
    expect(await readdir(all)).toEqual(['export']);
    expect(single.stderr).toContain(`wrote ${join(one, 'data.txt')}`);
  });

  it('status --json gives each task the output workflow run --json reported, and its log blob; --no-outputs reads none', async () => {
    const [status, bare] = await Promise.all([
      runCli(['workflow', 'status', report.workflow_id, '--json'], { env }),
      runCli(['workflow', 'status', report.workflow_id, '--json', '--no-outputs'], { env }),
    ]);
    expect(status.code).toBe(0);
    const tasks = (JSON.parse(status.stdout) as { tasks: Array<{ task_name: string; output?: unknown; log_blob: string | null }> }).tasks;
    const byName = new Map(tasks.map((t) => [t.task_name, t]));
    expect(report.tasks.length).toBe(5);
    for (const t of report.tasks) expect(byName.get(t.name)?.output).toEqual(t.output);
    expect(byName.get('count')?.log_blob).toBe(`workflow-logs/${report.workflow_id}/count/1.log`);
    expect(byName.get('never')?.log_blob).toBeNull();
    expect(byName.get('summary')?.log_blob).toBeNull();
    const merges = tasks.filter((t) => t.task_name.startsWith('__merge_'));
    expect(merges.length).toBeGreaterThan(0);
    expect(merges.map((t) => [t.log_blob, t.output])).toEqual(merges.map(() => [null, null]));
    const withoutOutputs = (JSON.parse(bare.stdout) as { tasks: Array<Record<string, unknown>> }).tasks;
    expect(withoutOutputs.some((t) => 'output' in t)).toBe(false);
    expect(withoutOutputs.find((t) => t.task_name === 'export')?.log_blob).toBe(`workflow-logs/${report.workflow_id}/export/1.log`);
  });

  it('--files of a tampered blob: exit 1 naming the file, nothing left under its name', async () => {
    const id = report.workflow_id;
    // Same name and size, other bytes: the marker in the output no longer matches.
    await deployment.outputs.putFile(id, 'export', 1, 'data.txt', new TextEncoder().encode('HELLO FILE'));
    const dir = join(storage.dir, 'tampered');
    const result = await runCli(['workflow', 'outputs', id, 'export', '--files', dir], { env });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^jobq: corrupt: file "data\\.txt" stashed by task "export" \\(workflow-files/${id}/export/1/data\\.txt\\) does not match its marker`,
      ),
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it('exits 1 for bad input: unknown workflow or task (close names), failed, running and pending tasks', async () => {
    const id = report.workflow_id;
    const near = `${id.slice(0, -1)}${id.endsWith('x') ? 'y' : 'x'}`;
    while (taskState((await deployment.store.load(stuck))!.runtime, 'first')?.status !== 'running') await sleep(100);
    const [unknownWorkflow, unknownTask, failed, running, pending] = await Promise.all([
      runCli(['workflow', 'outputs', near], { env }),
      runCli(['workflow', 'outputs', id, 'cuont'], { env }),
      runCli(['workflow', 'outputs', id, 'broken'], { env }),
      runCli(['workflow', 'outputs', stuck, 'first'], { env }),
      runCli(['workflow', 'outputs', stuck, 'second'], { env }),
    ]);
    expect(unknownWorkflow.code).toBe(1);
    expect(unknownWorkflow.stderr.trim()).toBe(
      `jobq: not-found: workflow "${near}" does not exist in devstoreaccount1/${prefix}; did you mean "${id}"?`,
    );
    expect(unknownTask.code).toBe(1);
    expect(unknownTask.stderr.trim()).toBe(
      `jobq: not-found: task "cuont" is not in workflow "${id}"; did you mean "count"? (jobq workflow tasks ${id} lists them)`,
    );
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim()).toBe(
      `jobq: task "broken" failed on attempt 1: exit code 3; jobq workflow logs ${id} broken prints what it printed`,
    );
    expect(failed.stdout).toBe('');

    expect(running.code).toBe(1);
    expect(running.stderr.trim()).toBe(`jobq: task "first" is still running (attempt 1); jobq workflow watch ${stuck} follows it`);
    expect(pending.code).toBe(1);
    expect(pending.stderr.trim()).toBe('jobq: task "second" has not run yet (pending); it has no output');
  });
});

describe('taskFolder', () => {
  it('keeps plain names and percent-encodes the rest, never . or ..', () => {
    expect(taskFolder('train-007_a.b')).toBe('train-007_a.b');
    expect(taskFolder('a/b')).toBe('a%2Fb');
    expect(taskFolder('..')).toBe('%2E%2E');
    expect(taskFolder('x y')).toBe('x%20y');
  });
});
