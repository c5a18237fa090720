import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Coordinator } from '@jobq/coordinator';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { resolveConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { coordinatorOptions, createCoordinator } from '../../services';
import { CLI, cleanEnv, runCli } from '../../test-helpers/cli';
import type { RunReport } from './run';

const DIAMOND = join(__dirname, '..', '..', '..', '..', '..', 'examples', 'diamond.yaml');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-run-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function workflowFile(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

function parseReport(stdout: string): RunReport {
  return JSON.parse(stdout) as RunReport;
}

function byName(report: RunReport): Record<string, RunReport['tasks'][number]> {
  return Object.fromEntries(report.tasks.map((t) => [t.name, t]));
}

describe('jobq workflow run (embedded stack)', () => {
  it('runs the diamond example to completion: exit 0, one JSON document with decoded outputs', async () => {
    const result = await runCli(['workflow', 'run', DIAMOND, '--json']);
    expect(result.stderr).toContain('diamond');
    expect(result.code).toBe(0);
    const report = parseReport(result.stdout);
    expect(report).toEqual({
      workflow_id: expect.any(String),
      name: 'diamond',
      status: 'completed',
      tasks: expect.any(Array),
    });
    expect(report.tasks.map((t) => t.name)).toEqual(['featurize', 'train-gnn', 'train-rf', 'compare']);
    for (const task of report.tasks) {
      expect(Object.keys(task).sort()).toEqual(['attempt_no', 'error', 'name', 'output', 'queue', 'skip_reason', 'status']);
      expect(task).toMatchObject({ status: 'completed', attempt_no: 1, queue: 'default', error: null, skip_reason: null });
    }
    const tasks = byName(report);
    expect(tasks.featurize?.output).toEqual({ rows: 1000, features: ['x1', 'x2', 'x3'] });
    expect(tasks['train-gnn']?.output).toEqual({ model: 'gnn', rows: 1000, accuracy: 0.91 });
    expect(tasks.compare?.output).toEqual({ best: 'gnn', accuracy: 0.91 });
  });

  it('exits 1 when a task fails; its dependents are upstream_failed in --json', async () => {
    const file = await workflowFile(
      'failing.yaml',
      [
        'name: failing',
        'tasks:',
        '  - name: prepare',
        '    kwargs: {cmd: "echo \'\\"ok\\"\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '  - name: broken',
        '    depends_on: [prepare]',
        '    kwargs: {cmd: "echo boom >&2; exit 3"}',
        '  - name: after',
        '    depends_on: [broken]',
        '    kwargs: {cmd: "true"}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file, '--json']);
    expect(result.code).toBe(1);
    const report = parseReport(result.stdout);
    expect(report.status).toBe('failed');
    const tasks = byName(report);
    expect(tasks.prepare).toMatchObject({ status: 'completed', output: 'ok' });
    expect(tasks.broken?.status).toBe('failed');
    expect(tasks.broken?.error).toEqual(expect.any(String));
    expect(tasks.after).toMatchObject({ status: 'upstream_failed', output: null });
  });

  it('skips a branch whose condition is false; ACCOUNT/… queues run on the local stack', async () => {
    const file = await workflowFile(
      'conditional.yaml',
      [
        'name: conditional',
        'tasks:',
        '  - name: check',
        '    kwargs: {cmd: "echo \'{\\"big\\": false}\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '  - name: big-path',
        '    depends_on: [check]',
        '    condition: "inputs.check.big == True"',
        '    kwargs: {cmd: "true"}',
        '  - name: small-path',
        '    depends_on: [check]',
        '    condition: "inputs.check.big == False"',
        '    queue: otheraccount/gpu',
        '    kwargs: {cmd: "echo 1 > \\"$JOBQ_OUTPUT_FILE\\""}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file, '--json']);
    expect(result.code).toBe(0);
    const report = parseReport(result.stdout);
    expect(report.status).toBe('completed');
    const tasks = byName(report);
    expect(tasks.check?.output).toEqual({ big: false });
    expect(tasks['big-path']).toMatchObject({
      status: 'skipped',
      output: null,
      skip_reason: 'condition false: inputs.check.big = false, not == True',
    });
    expect(tasks['small-path']).toMatchObject({ status: 'completed', output: 1, queue: 'otheraccount/gpu' });
  });

  it('runs the README example with one trainer failing (compare runs); a misspelled field skips with a warning naming the fields present', async () => {
    const marker = join(dir, 'compared');
    const file = await workflowFile(
      'headline.yaml',
      [
        'name: headline',
        'tasks:',
        '  - name: featurize',
        '    kwargs: {cmd: "true"}',
        '  - name: train-gpu',
        '    depends_on: [featurize]',
        '    kwargs: {cmd: "echo CUDA out of memory >&2; exit 1"}',
        '  - name: train-cpu',
        '    depends_on: [featurize]',
        '    kwargs: {cmd: "echo \'{\\"accuracy\\": 0.93}\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '  - name: compare',
        '    depends_on: [train-gpu, train-cpu]',
        '    dep_policy: all_settled',
        '    condition: \'any(inputs["train-*"].accuracy > 0.9)\'',
        `    kwargs: {cmd: "touch ${marker}"}`,
        '  - name: a',
        '    kwargs: {cmd: "echo \'{\\"accuracy\\": 0.95}\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '  - name: b',
        '    depends_on: [a]',
        '    condition: inputs.a.acc > 0.9',
        '    kwargs: {cmd: "true"}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file]);
    expect(result.stdout).toBe('');
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/workflow "headline" \S+: completed \(completed 4 · failed 1 · skipped 1\)/);
    expect(result.stderr).toContain('  failed: train-gpu (attempt 1)');
    // compare ran: the failed trainer reads as unknown, the other one reached the bar.
    await expect(readFile(marker, 'utf8')).resolves.toBe('');
    expect(result.stderr).toContain('warning: task "b" skipped: condition false: output of "a" has no field "acc"; it has: accuracy\n');
    expect(result.stderr).not.toContain('skipped: compare');
  });

  it('runs a matrix task with parameters: one task per combination, values in kwargs and the environment, a glob condition on the expansions', async () => {
    const file = await workflowFile(
      'sweep.yaml',
      [
        'name: sweep',
        'params:',
        '  threshold: 0.5',
        '  tag: {type: string}',
        'tasks:',
        '  - name: train',
        '    matrix: {lr: [0.1, 0.9], seed: [1]}',
        '    kwargs:',
        '      cmd: |',
        '        printf \'{"lr": %s, "tag": "%s"}\' "${{ matrix.lr }}" "$JOBQ_PARAM_TAG-$JOBQ_MATRIX_SEED" > "$JOBQ_OUTPUT_FILE"',
        '  - name: best',
        '    depends_on: [train]',
        '    condition: \'any(inputs["train(*"].lr > ${{ params.threshold }})\'',
        '    kwargs:',
        '      cmd: |',
        '        printf \'"%s"\' "${{ params.tag }}" > "$JOBQ_OUTPUT_FILE"',
        '',
      ].join('\n'),
    );
    await writeFile(join(dir, 'sweep-params.yaml'), 'threshold: 0.95\n');
    // The params file sets a bar no trainer reaches; --param, which wins, lowers it again.
    const result = await runCli([
      'workflow',
      'run',
      file,
      '--json',
      '--param',
      'tag=nightly',
      '--params-file',
      join(dir, 'sweep-params.yaml'),
      '--param',
      'threshold=0.8',
    ]);
    expect(result.code).toBe(0);
    const report = parseReport(result.stdout);
    expect(report.tasks.map((t) => [t.name, t.status, t.output])).toEqual([
      ['train(lr=0.1,seed=1)', 'completed', { lr: 0.1, tag: 'nightly-1' }],
      ['train(lr=0.9,seed=1)', 'completed', { lr: 0.9, tag: 'nightly-1' }],
      ['best', 'completed', 'nightly'],
    ]);
  });

  it('retries a flaky task once in a 10-task workflow; merge nodes are left out with --max-fan-in', async () => {
    const lines = ['name: flaky', 'tasks:'];
    for (let i = 1; i <= 8; i++) lines.push(`  - name: t${i}`, `    kwargs: {cmd: "echo ${i} > \\"$JOBQ_OUTPUT_FILE\\""}`);
    lines.push(
      '  - name: flaky',
      '    num_retries: 1',
      '    depends_on: [t1]',
      '    kwargs: {cmd: "if [ \\"$JOBQ_WORKFLOW_ATTEMPT\\" = 1 ]; then exit 1; fi; echo \\"$JOBQ_WORKFLOW_ATTEMPT\\" > \\"$JOBQ_OUTPUT_FILE\\""}',
      '  - name: last',
      '    depends_on: [t2, t3, t4, t5, t6, t7, t8, flaky]',
      '    kwargs: {cmd: "true"}',
      '',
    );
    const file = await workflowFile('flaky.yaml', lines.join('\n'));
    const result = await runCli(['workflow', 'run', file, '--json', '--workers', '3', '--max-fan-in', '4']);
    expect(result.code).toBe(0);
    const report = parseReport(result.stdout);
    expect(report.status).toBe('completed');
    expect(report.tasks).toHaveLength(10);
    expect(report.tasks.every((t) => !t.name.startsWith('__'))).toBe(true);
    expect(report.tasks.every((t) => t.status === 'completed')).toBe(true);
    const tasks = byName(report);
    expect(tasks.flaky).toMatchObject({ attempt_no: 2, output: 2 });
    expect(tasks.t5).toMatchObject({ attempt_no: 1, output: 5 });
  });

  it('--quiet: no task output lines nor setup lines, only progress and the summary listing the failed and the skipped task with their reasons', async () => {
    const file = await workflowFile(
      'quiet.yaml',
      [
        'name: quiet',
        'tasks:',
        '  - name: check',
        '    kwargs: {cmd: "echo checking; echo \'{\\"big\\": false}\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '  - name: big-path',
        '    depends_on: [check]',
        '    condition: "inputs.check.big == True"',
        '    kwargs: {cmd: "true"}',
        '  - name: broken',
        '    depends_on: [check]',
        '    kwargs: {cmd: "echo boom >&2; exit 3"}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file, '--quiet']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toContain('checking');
    expect(result.stderr).not.toContain('boom');
    expect(result.stderr).not.toContain('embedded stack');
    expect(result.stderr).not.toContain('[worker');
    // The progress line is kept (its last state at least: a fast run may show no other).
    expect(result.stderr).toMatch(/(^|\n)quiet: failed — completed 1 · failed 1 · skipped 1\n/);
    expect(result.stderr).toMatch(/workflow "quiet" \S+: failed \(completed 1 · failed 1 · skipped 1\)\n/);
    expect(result.stderr).toContain('\n  failed: broken (attempt 1): exit code 3\n');
    expect(result.stderr).toContain('\n  skipped: big-path: condition false: inputs.check.big = false, not == True\n');
  });

  it('--verbose: task lines prefixed with name and attempt (a task failing once, then succeeding), whole lines from parallel tasks, and every task event', async () => {
    const file = await workflowFile(
      'verbose.yaml',
      [
        'name: verbose',
        'tasks:',
        '  - name: flaky',
        '    num_retries: 1',
        '    kwargs: {cmd: "echo \\"try $JOBQ_WORKFLOW_ATTEMPT\\"; if [ \\"$JOBQ_WORKFLOW_ATTEMPT\\" = 1 ]; then echo boom >&2; exit 1; fi"}',
        // Two tasks writing half a line, waiting, then the rest (and a last line with no newline).
        '  - name: p1',
        '    kwargs: {cmd: "printf one-; sleep 0.4; printf \'end\\\\n\'; printf tail-one"}',
        '  - name: p2',
        '    kwargs: {cmd: "printf two-; sleep 0.4; printf \'end\\\\n\'; printf tail-two"}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file, '--verbose', '--workers', '3']);
    expect(result.code).toBe(0);
    const lines = result.stderr.split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        '[flaky#1] try 1',
        '[flaky#1] boom',
        '[flaky#2] try 2',
        '[p1#1] one-end',
        '[p1#1] tail-one',
        '[p2#1] two-end',
        '[p2#1] tail-two',
      ]),
    );
    // The task events, read from the workflow, and the workers' own lines about each task.
    expect(lines).toEqual(
      expect.arrayContaining([expect.stringMatching(/^flaky#1 failed(: exit code 1)?; retrying$/), 'flaky#2 completed', 'p1#1 completed']),
    );
    expect(lines).toEqual(expect.arrayContaining(['[worker default] [flaky#2] started (workflow, delivery 1)']));
    for (const half of ['[p1#1] one-', '[p1#1] end', '[p2#1] two-', '[p2#1] end']) expect(lines).not.toContain(half);
    expect(result.stderr).toMatch(/workflow "verbose" \S+: completed \(completed 3\)\n/);
  });

  it('refuses --quiet with --verbose: one line, exit 2', async () => {
    const result = await runCli(['workflow', 'run', DIAMOND, '--quiet', '--verbose']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('jobq: --quiet and --verbose cannot be used together\n');
  });

  it('on SIGINT cancels the workflow, stops its task and everything else, and exits 1', async () => {
    const pidFile = join(dir, 'task.pid');
    const file = await workflowFile(
      'long.yaml',
      [
        'name: long',
        'tasks:',
        '  - name: wait',
        `    kwargs: {cmd: "echo $$ > ${pidFile}; exec sleep 120"}`,
        '  - name: after',
        '    depends_on: [wait]',
        '    kwargs: {cmd: "true"}',
        '',
      ].join('\n'),
    );
    const child = spawn(process.execPath, [CLI, 'workflow', 'run', file, '--json'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    let taskPid = 0;
    const deadline = Date.now() + 60_000;
    while (taskPid === 0 && Date.now() < deadline) {
      await sleep(100);
      taskPid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim() || 0);
    }
    expect(taskPid).toBeGreaterThan(0);
    child.kill('SIGINT');
    const code = await exited;
    clearTimeout(killer);
    expect(code).toBe(1);
    expect(stderr).toContain('SIGINT');
    const report = parseReport(stdout);
    expect(['cancelled', 'cancelling']).toContain(report.status);
    const alive = (): boolean => {
      try {
        process.kill(taskPid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const goneBy = Date.now() + 10_000;
    while (alive() && Date.now() < goneBy) await sleep(100);
    expect(alive()).toBe(false);
  });

  it('refuses an illegal sb:// namespace with one clear line and exit 2, before starting anything', async () => {
    const result = await runCli(['workflow', 'run', DIAMOND, '--queues', 'sb://x']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^jobq: --queues: "sb:\/\/x" is not sb:\/\/NAMESPACE: "x" is not a Service Bus namespace name/);
  });

  it('refuses an invalid workflow file before starting anything', async () => {
    const file = await workflowFile('bad.yaml', 'name: bad\ntasks:\n  - name: a\n    depends_on: [nope]\n    kwargs: {cmd: "true"}\n');
    const result = await runCli(['workflow', 'run', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(file);
    expect(result.stderr).not.toContain('embedded stack');
  });
});

describe('jobq workflow run (storage configured)', () => {
  let storage: LocalStorage;
  let deployment: Deployment;
  let coordinator: Coordinator;
  beforeAll(async () => {
    storage = await startAzurite();
    const config = resolveConfig(
      { prefix: 'devstoreaccount1/RunRemote' },
      { JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString },
      dir,
    );
    deployment = await openDeployment(config);
    coordinator = createCoordinator(deployment, { ...coordinatorOptions(config), log: () => undefined });
    await coordinator.start();
  });
  afterAll(async () => {
    await coordinator?.stop();
    await storage?.stop();
  });

  it('submits to the configured prefix and runs the tasks with --workers', async () => {
    const file = await workflowFile(
      'remote.yaml',
      [
        'name: remote',
        'tasks:',
        '  - name: a',
        '    queue: devstoreaccount1/remote-q',
        '    kwargs: {cmd: "test -f \\"$JOBQ_CLI\\" && echo \'\\"cli\\"\' > \\"$JOBQ_OUTPUT_FILE\\""}',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'devstoreaccount1/RunRemote', 'run', file, '--workers', '1', '--json'], {
      env: cleanEnv({ JOBQ_STORAGE_CONNECTION_STRING: storage.connectionString }),
      cwd: dir,
    });
    expect(result.stderr).not.toContain('embedded stack');
    expect(result.code).toBe(0);
    const report = parseReport(result.stdout);
    expect(report.tasks).toEqual([
      { name: 'a', status: 'completed', attempt_no: 1, queue: 'devstoreaccount1/remote-q', error: null, skip_reason: null, output: 'cli' },
    ]);
    const status = await deployment.client.status(report.workflow_id);
    expect(status?.name).toBe('remote');
  });
});
