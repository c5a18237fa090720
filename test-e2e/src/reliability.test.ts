import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli';

// Defects that showed through `jobq workflow run`: a run that hung on a task the worker could not
// start, tasks failed for time spent waiting in a queue, an unreadable message for a task whose
// output file is not JSON. Each run must end, with the right statuses and one readable line.

interface RunReport {
  status: string;
  tasks: Array<{ name: string; status: string; attempt_no: number; error: string | null; output: unknown }>;
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-e2e-reliability-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function runWorkflow(
  name: string,
  yaml: string,
  extraArgs: string[] = [],
): Promise<{ code: number | null; report: RunReport; stderr: string }> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, yaml);
  const result = await runCli(['workflow', 'run', file, '--json', ...extraArgs]);
  let report: RunReport;
  try {
    report = JSON.parse(result.stdout) as RunReport;
  } catch {
    throw new Error(
      `workflow run did not print a JSON document (exit ${String(result.code)})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
  return { code: result.code, report, stderr: result.stderr };
}

describe('workflow run: tasks that cannot run, wait in a queue, or write a broken output', () => {
  it('a task whose cwd does not exist fails with a clear error instead of hanging the run', async () => {
    const { code, report } = await runWorkflow(
      'missing-cwd',
      [
        'name: missing-cwd',
        'tasks:',
        '  - name: a',
        '    kwargs: { cmd: "true", cwd: /nonexistent/jobq-dir }',
        '  - name: b',
        '    depends_on: [a]',
        '    kwargs: { cmd: "true" }',
      ].join('\n'),
    );
    expect(code).toBe(1);
    expect(report.status).toBe('failed');
    expect(report.tasks.map((t) => [t.name, t.status])).toEqual([
      ['a', 'failed'],
      ['b', 'upstream_failed'],
    ]);
    expect(report.tasks[0]?.error).toMatch(/kwargs\.cwd "\/nonexistent\/jobq-dir" does not exist/);
  }, 120_000);

  it('timeout_s counts the time a task runs, not the time it waits in the queue: 4 × sleep 2 with timeout_s 3 on one worker slot all succeed', async () => {
    const tasks = ['a', 'b', 'c', 'd'].flatMap((n) => [`  - name: ${n}`, '    timeout_s: 3', '    kwargs: { cmd: "sleep 2" }']);
    const { code, report, stderr } = await runWorkflow('queued-timeouts', ['name: queued-timeouts', 'tasks:', ...tasks].join('\n'), [
      '--workers',
      '1',
      '--timeout-sweep-interval-s',
      '0.2',
    ]);
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(report.tasks.map((t) => [t.name, t.status, t.attempt_no])).toEqual([
      ['a', 'completed', 1],
      ['b', 'completed', 1],
      ['c', 'completed', 1],
      ['d', 'completed', 1],
    ]);
  }, 120_000);

  it('an output file that is not JSON fails the task with one line saying what was found and what to do', async () => {
    const { code, report } = await runWorkflow(
      'not-json',
      ['name: not-json', 'tasks:', '  - name: a', '    kwargs: { cmd: "echo done > $JOBQ_OUTPUT_FILE" }'].join('\n'),
    );
    expect(code).toBe(1);
    const error = report.tasks[0]?.error ?? '';
    expect(error).not.toMatch(/\n/);
    expect(error).toMatch(/not JSON/);
    expect(error).toMatch(/"done\\n"/);
    expect(error).toMatch(/jobq task set-output/);
  }, 120_000);
});
