import { beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { EXAMPLES, REPO, cleanEnv, runCli } from './cli';

interface RunTask {
  name: string;
  status: string;
  attempt_no: number;
  queue: string;
  error: string | null;
  skip_reason: string | null;
  output: unknown;
}

interface RunReport {
  workflow_id: string;
  name: string;
  status: string;
  tasks: RunTask[];
}

/** Every workflow file under examples/: `*.yaml` at the top and `DIR/workflow.yaml`, relative to the repo. */
async function exampleFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(EXAMPLES, { withFileTypes: true })) {
    if (entry.isFile() && /\.ya?ml$/.test(entry.name)) files.push(join(EXAMPLES, entry.name));
    if (entry.isDirectory()) {
      for (const inner of await readdir(join(EXAMPLES, entry.name))) {
        if (/^workflow\.ya?ml$/.test(inner)) files.push(join(EXAMPLES, entry.name, inner));
      }
    }
  }
  return files.map((file) => relative(REPO, file)).sort();
}

/** The examples run below; a new example without a test here fails the inventory test. */
const COVERED = [
  'examples/conditional-deploy.yaml',
  'examples/diamond.yaml',
  'examples/ensemble.yaml',
  'examples/flaky-retries.yaml',
  'examples/node-script/workflow.yaml',
  'examples/sweep-1000.yaml',
];

async function run(
  file: string,
  extraArgs: string[] = [],
  env?: NodeJS.ProcessEnv,
): Promise<{ code: number | null; report: RunReport; stderr: string }> {
  const result = await runCli(['workflow', 'run', file, '--json', ...extraArgs], env === undefined ? {} : { env: cleanEnv(env) });
  let report: RunReport;
  try {
    report = JSON.parse(result.stdout) as RunReport;
  } catch {
    throw new Error(
      `workflow run ${file} did not print a JSON document (exit ${String(result.code)})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
  return { code: result.code, report, stderr: result.stderr };
}

function statuses(report: RunReport): Array<[string, string]> {
  return report.tasks.map((t) => [t.name, t.status]);
}

function task(report: RunReport, name: string): RunTask {
  const found = report.tasks.find((t) => t.name === name);
  if (found === undefined) throw new Error(`no task "${name}" in the report`);
  return found;
}

describe('the examples', () => {
  it('every workflow file is covered below and passes `jobq workflow validate`', async () => {
    const files = await exampleFiles();
    expect(files).toEqual(COVERED);
    const result = await runCli(['workflow', 'validate', ...files, '--json']);
    expect(result.code).toBe(0);
    const results = (JSON.parse(result.stdout) as { files: Array<{ file: string; ok: boolean; issues: unknown[] }> }).files;
    expect(results.map((r) => [r.file, r.ok, r.issues])).toEqual(files.map((file) => [file, true, []]));
  });

  it('every example file starts with a header comment that shows how to run it', async () => {
    for (const file of COVERED) {
      const text = await readFile(join(REPO, file), 'utf8');
      expect(text.startsWith('# ')).toBe(true);
      expect(text).toContain(`node apps/jobq/bin/run.js workflow run ${file}`);
    }
  });

  it('sweep-1000.yaml is what examples/generate-sweep.js writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'jobq-sweep-'));
    try {
      const generated = spawnSync(process.execPath, [join(EXAMPLES, 'generate-sweep.js'), '1000', dir], { encoding: 'utf8' });
      expect(generated.status).toBe(0);
      expect(await readFile(join(dir, 'sweep-1000.yaml'), 'utf8')).toBe(await readFile(join(EXAMPLES, 'sweep-1000.yaml'), 'utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('examples through `jobq workflow run --json` (embedded stack)', () => {
  it('diamond.yaml: the four tasks complete and compare picks the better model', async () => {
    const { code, report } = await run('examples/diamond.yaml');
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(statuses(report)).toEqual([
      ['featurize', 'completed'],
      ['train-gnn', 'completed'],
      ['train-rf', 'completed'],
      ['compare', 'completed'],
    ]);
    expect(task(report, 'compare').output).toEqual({ best: 'gnn', accuracy: 0.91 });
  });

  it('conditional-deploy.yaml: passing tests deploy and skip the page; the report sees only deploy', async () => {
    const { code, report } = await run('examples/conditional-deploy.yaml');
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(statuses(report)).toEqual([
      ['test', 'completed'],
      ['deploy', 'completed'],
      ['page-oncall', 'skipped'],
      ['report', 'completed'],
    ]);
    expect(task(report, 'test').output).toMatchObject({ passed: true, coverage: 0.93 });
    expect(task(report, 'deploy').output).toEqual({ environment: 'staging', deployed: true });
    expect(task(report, 'page-oncall')).toMatchObject({
      attempt_no: 0,
      error: 'condition false: inputs.test.passed = true',
      skip_reason: 'condition false: inputs.test.passed = true',
      output: null,
    });
    expect(task(report, 'report').output).toEqual({ ran: ['deploy'] });
  });

  it('conditional-deploy.yaml with DEMO_TESTS_FAIL=1: deploy is skipped, the page runs, the workflow still completes', async () => {
    const { code, report } = await run('examples/conditional-deploy.yaml', [], { DEMO_TESTS_FAIL: '1' });
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(statuses(report)).toEqual([
      ['test', 'completed'],
      ['deploy', 'skipped'],
      ['page-oncall', 'completed'],
      ['report', 'completed'],
    ]);
    expect(task(report, 'deploy').skip_reason).toBe('condition false: inputs.test.passed = false');
    expect(task(report, 'report').output).toEqual({ ran: ['page-oncall'] });
  });

  it('ensemble.yaml: member-3 fails, the aggregator (dep_policy 3) averages the other three, the workflow completes', async () => {
    const { code, report } = await run('examples/ensemble.yaml');
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(statuses(report)).toEqual([
      ['member-1', 'completed'],
      ['member-2', 'completed'],
      ['member-3', 'failed'],
      ['member-4', 'completed'],
      ['aggregate', 'completed'],
    ]);
    expect(task(report, 'member-3').error).toEqual(expect.any(String));
    expect(task(report, 'aggregate').output).toEqual({ members: ['member-1', 'member-2', 'member-4'], mean_score: 0.84 });
  });

  it('flaky-retries.yaml: download fails on attempt 1 and completes on attempt 2', async () => {
    const { code, report } = await run('examples/flaky-retries.yaml');
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(report.tasks.map((t) => [t.name, t.status, t.attempt_no])).toEqual([
      ['download', 'completed', 2],
      ['checksum', 'completed', 1],
    ]);
    expect(task(report, 'download').output).toEqual({ file: 'data.csv', bytes: 52428, attempt: 2 });
    expect(task(report, 'checksum').output).toEqual({ ok: true });
  });

  it('node-script/workflow.yaml: Node tasks pass outputs with the @jobq/task helpers (run from the repo root)', async () => {
    const { code, report } = await run('examples/node-script/workflow.yaml');
    expect(code).toBe(0);
    expect(report.status).toBe('completed');
    expect(statuses(report)).toEqual([
      ['generate', 'completed'],
      ['square', 'completed'],
      ['sum', 'completed'],
    ]);
    expect(task(report, 'generate').output).toEqual({ numbers: [1, 2, 3, 4, 5] });
    expect(task(report, 'square').output).toEqual({ squares: [1, 4, 9, 16, 25] });
    expect(task(report, 'sum').output).toEqual({ count: 5, sum: 15, sum_of_squares: 55 });
  });
});

describe('sweep-1000.yaml through `jobq workflow run --max-fan-in 100 --json`', () => {
  let result: { code: number | null; report: RunReport; stderr: string };
  // 1 000 bash tasks: about a minute on an idle machine, over 3 minutes in a loaded CI run; the
  // bound is against a hang, not a speed check.
  beforeAll(async () => {
    result = await run('examples/sweep-1000.yaml', ['--max-fan-in', '100', '--workers', '4']);
  }, 600_000);

  it('completes all 1 000 points and the summary, exit 0', () => {
    expect(result.code).toBe(0);
    expect(result.report.status).toBe('completed');
    expect(result.report.tasks).toHaveLength(1001);
    expect(result.report.tasks.every((t) => t.status === 'completed')).toBe(true);
  });

  it('hides the merge nodes from the report and the summary counts its 1 000 real parents', () => {
    expect(result.report.tasks.some((t) => t.name.startsWith('__'))).toBe(false);
    expect(result.report.tasks.at(-1)).toMatchObject({ name: 'summary', status: 'completed', output: { points: 1000 } });
  });
});
