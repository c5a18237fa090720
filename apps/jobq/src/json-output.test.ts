import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { WorkflowValidationError, type Coordinator } from '@jobq/coordinator';
import { JobqError } from '@jobq/ports';
import { jsonErrorCode } from './base';
import { ReportedFailure, UsageError } from './errors';
import type { Worker } from '@jobq/worker';
import { configFromFlags } from './flags';
import { openDeployment, type Deployment } from './deployment';
import { JSON_ERROR_CODES, JSON_OUTPUTS, jsonSchemaOf } from './json-output';
import { createCoordinator, createWorker } from './services';
import { runCli, type CliResult } from './test-helpers/cli';
import { SCHEMA_DIR, schemaErrors, schemaValidator } from './test-helpers/json-schema';
import { TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from './test-helpers/storage';

// Every --json document is checked against its JSON Schema in docs/json/ (docs/json-output.md).
// The names that are data — a camelCase param, task name and env variable — must come out as written.

const MIXED = [
  'name: mixed',
  'params: {learningRate: 0.1}',
  'tasks:',
  `  - name: fetchData`,
  `    kwargs: {cmd: "echo '{\\"rowCount\\": 1}' > \\"$JOBQ_OUTPUT_FILE\\""}`,
  '  - name: skip-me',
  '    depends_on: [fetchData]',
  '    condition: inputs.fetchData.rowCount == 2',
  '    kwargs: {cmd: echo never}',
  '  - name: bad',
  '    kwargs: {cmd: exit 3}',
  '  - name: after',
  '    depends_on: [bad]',
  '    kwargs: {cmd: echo never}',
  '',
].join('\n');
/** Routed to a queue no worker serves: it stays ready. */
const WAITING =
  'name: waiting\ntasks:\n  - name: a\n    queue: gpu\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: echo b}\n';

let storage: TestStorage;
let prefix: string;
let env: NodeJS.ProcessEnv;
let deployment: Deployment;
let coordinator: Coordinator;
let worker: Worker;
let working: Promise<unknown>;

beforeAll(async () => {
  storage = await startTestStorage();
  prefix = uniquePrefix('Json');
  env = storage.env(prefix);
  deployment = await openDeployment(configFromFlags({}, env));
  coordinator = createCoordinator(deployment, {
    receiveWaitInMs: 100,
    idleSleepInMs: 50,
    cancelPollIntervalInMs: 200,
    statsIntervalInMs: 500,
    log: () => {},
  });
  await coordinator.start();
  worker = await createWorker(deployment, { queue: 'default', numWorkers: 2, maxIdleBackoffInMs: 200, log: () => {} });
  working = worker.run();
  await deployment.client.submit({ text: MIXED, filename: 'mixed.yaml' }, { id: 'mixed-1' });
  await deployment.client.submit({ text: TWO_TASKS, filename: 'two.yaml' }, { id: 'two-1' });
  await deployment.client.submit({ text: WAITING, filename: 'waiting.yaml' }, { id: 'waiting-1' });
});
afterAll(async () => {
  await worker?.stop({ gracePeriodInMs: 0 });
  await working?.catch(() => undefined);
  await coordinator?.stop();
  await storage.stop();
});

/** The one JSON document on stdout, checked against docs/json/NAME.schema.json. */
function documentOf(name: string, result: CliResult): unknown {
  const doc = JSON.parse(result.stdout) as unknown;
  expect(schemaErrors(name, doc)).toEqual([]);
  return doc;
}

describe('the JSON Schemas in docs/json', () => {
  it('are what src/json-output.ts describes (pnpm --filter @jobq/cli run docs:json writes them)', () => {
    const files = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json'));
    expect(files.sort()).toEqual(
      Object.keys(JSON_OUTPUTS)
        .map((name) => `${name}.schema.json`)
        .sort(),
    );
    for (const name of Object.keys(JSON_OUTPUTS)) {
      expect(JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.schema.json`), 'utf8'))).toEqual(jsonSchemaOf(name));
      expect(() => schemaValidator(name)).not.toThrow();
    }
  });

  it('cover every command with a --json output', () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { flags: Record<string, unknown> }>;
    };
    const withJson = Object.entries(manifest.commands)
      .filter(([id, c]) => c.flags.json !== undefined && id !== 'task:set-output')
      .map(([id]) => id.replace(/:/g, '-'));
    expect(withJson.length).toBeGreaterThan(15);
    for (const name of withJson) expect(Object.keys(JSON_OUTPUTS)).toContain(name);
  });

  it('refuse camelCase keys and unknown keys', () => {
    const cancel = { workflow_id: 'w', target: 'a/b', requested: true, message: 'ok' };
    expect(schemaErrors('workflow-cancel', cancel)).toEqual([]);
    expect(schemaErrors('workflow-cancel', { ...cancel, workflow_id: undefined, workflowId: 'w' })).toEqual(
      expect.arrayContaining([
        "workflow-cancel: / must have required property 'workflow_id'",
        'workflow-cancel: / must NOT have additional properties (workflowId)',
      ]),
    );
    expect(schemaErrors('error', { error: { code: 'not-found', message: 'x' } })).not.toEqual([]);
    expect(JSON_ERROR_CODES).toEqual(expect.arrayContaining(['usage', 'invalid_workflow', 'failed', 'not_found', 'invalid_config']));
  });
});

describe('every --json document matches its schema', () => {
  it('watch, status, list, tasks, explain, doctor, config show, submit, purge on a finished and a waiting workflow', async () => {
    // watch first: it returns once mixed-1 has finished (failed: exit 1 after its document).
    const watch = await runCli(['workflow', 'watch', 'mixed-1', '--json', '--interval', '100ms'], { env });
    expect(watch.code).toBe(1);
    expect(documentOf('workflow-watch', watch)).toMatchObject({
      workflow_id: 'mixed-1',
      status: 'failed',
      failed_tasks: [{ name: 'bad' }, { name: 'after' }],
    });
    while ((await deployment.client.status('two-1'))?.status !== 'completed') await sleep(100);

    const file = await storage.file('submit.yaml', TWO_TASKS);
    const [status, layers, listed, tasks, explain, explainTask, explainWaiting, explainReady, doctor, config, submit, purge] =
      await Promise.all([
        runCli(['workflow', 'status', 'mixed-1', '--json'], { env }),
        runCli(['workflow', 'status', 'waiting-1', '--json', '--by-layer', '--no-tasks'], { env }),
        runCli(['workflow', 'list', '--json'], { env }),
        runCli(['workflow', 'tasks', 'mixed-1', '--json'], { env }),
        runCli(['workflow', 'explain', 'mixed-1', '--json'], { env }),
        runCli(['workflow', 'explain', 'mixed-1', '--task', 'skip-me', '--json'], { env }),
        runCli(['workflow', 'explain', 'waiting-1', '--json', '--oldest-message', '0'], { env }),
        runCli(['workflow', 'explain', 'waiting-1', '--task', 'a', '--json'], { env }),
        runCli(['workflow', 'doctor', '--json'], { env }),
        runCli(['config', 'show', '--json', '--batch-size', '4'], { env }),
        runCli(['workflow', 'submit', file, '--json', '--id', 'submitted-1'], { env }),
        runCli(['workflow', 'purge', '--finished-before', '0', '--dry-run', '--json'], { env }),
      ]);
    for (const result of [status, layers, listed, tasks, explain, explainTask, explainWaiting, explainReady, config, submit, purge])
      expect(result.code).toBe(0);

    const statusDoc = documentOf('workflow-status', status) as { tasks: Array<Record<string, unknown>>; params: unknown };
    expect(statusDoc).toMatchObject({ workflow_id: 'mixed-1', status: 'failed', index_status: 'failed', params: { learningRate: 0.1 } });
    expect(statusDoc.tasks.map((t) => [t.task_name, t.status])).toEqual([
      ['fetchData', 'completed'],
      ['skip-me', 'skipped'],
      ['bad', 'failed'],
      ['after', 'upstream_failed'],
    ]);
    expect(documentOf('workflow-status', layers)).toMatchObject({ workflow_id: 'waiting-1', layers: [{ layer: 'a' }, { layer: 'b' }] });
    expect((documentOf('workflow-list', listed) as Array<{ workflow_id: string }>).map((w) => w.workflow_id)).toEqual(
      expect.arrayContaining(['mixed-1', 'two-1', 'waiting-1']),
    );
    expect(documentOf('workflow-tasks', tasks)).toEqual(
      expect.arrayContaining([expect.objectContaining({ workflow_id: 'mixed-1', task_name: 'fetchData', attempt_no: 1 })]),
    );
    expect(documentOf('workflow-explain', explain)).toMatchObject({
      workflow: { workflow_id: 'mixed-1' },
      skipped_tasks: [{ name: 'skip-me' }],
      params: { learningRate: 0.1 },
    });
    expect(documentOf('workflow-explain', explainTask)).toMatchObject({
      task: { name: 'skip-me', depends_on: ['fetchData'], condition_inputs: [{ name: 'fetchData', status: 'completed' }] },
    });
    expect(documentOf('workflow-explain', explainWaiting)).toMatchObject({
      tasks: [{ name: 'a', queue: 'gpu' }, { name: 'b' }],
      queues: [{ queue: 'gpu', name: expect.any(String) }],
    });
    expect(documentOf('workflow-explain', explainReady)).toMatchObject({ task: { name: 'a' }, queue: { queue: 'gpu' } });
    expect(documentOf('workflow-doctor', doctor)).toMatchObject({ target: `devstoreaccount1/${prefix}` });
    const configDoc = documentOf('config-show', config) as { settings: Record<string, { value: unknown }> };
    expect(configDoc.settings.batch_size).toEqual({ value: 4, source: 'flag', from: '--batch-size' });
    expect(JSON.stringify(configDoc)).not.toContain(storage.azurite.connectionString);
    expect(documentOf('workflow-submit', submit)).toMatchObject({ submitted: 1, results: [{ ok: true, workflow_id: 'submitted-1' }] });
    expect(documentOf('workflow-purge', purge)).toMatchObject({
      dry_run: true,
      would_purge: 2,
      workflows: expect.arrayContaining([expect.objectContaining({ workflow_id: 'mixed-1', outcome: 'would-purge' })]),
    });

    // Requests change the workflows: after the reads.
    const [cancel, retry, rerun] = await Promise.all([
      runCli(['workflow', 'cancel', 'waiting-1', '--json'], { env }),
      runCli(['workflow', 'retry', 'mixed-1', '--json'], { env }),
      runCli(['workflow', 'retry', 'two-1', '--task', 'a', '--json'], { env }),
    ]);
    expect(documentOf('workflow-cancel', cancel)).toMatchObject({ workflow_id: 'waiting-1', requested: true });
    expect(documentOf('workflow-retry', retry)).toMatchObject({ workflow_id: 'mixed-1', requested: true });
    expect(documentOf('workflow-retry', rerun)).toMatchObject({ workflow_id: 'two-1', task: 'a', tasks: ['a'] });
  });

  it('push, peek, size, pull and task info', async () => {
    const spec = `devstoreaccount1/json-${process.pid}`;
    const push = await runCli([spec, 'push', '--json-lines', '--json'], { env, input: '{"cmd":"make","env":{"buildMode":"fast"}}\n' });
    expect(documentOf('push', push)).toMatchObject({ pushed: 1 });
    const [peek, size, info] = await Promise.all([
      runCli([spec, 'peek', '--json'], { env }),
      runCli([spec, 'size', '--json'], { env }),
      runCli(['task', 'info'], { env }),
    ]);
    expect(documentOf('peek', peek)).toMatchObject([{ kwargs: { cmd: 'make', env: { buildMode: 'fast' } } }]);
    expect(documentOf('size', size)).toMatchObject({ approximate_count: 1 });
    expect(documentOf('task-info', info)).toMatchObject({ in_task: false });
    const pull = await runCli([spec, 'pull', '--json'], { env });
    expect(documentOf('pull', pull)).toMatchObject({ kwargs: { cmd: 'make' }, locked_until: expect.any(String) });
  });

  it('workflow run, and the error document of a run whose workflow is invalid', async () => {
    const file = await storage.file('mixed.yaml', MIXED);
    const bad = await storage.file('bad.yaml', 'name: bad\ntasks:\n  - name: a\n    depend_on: [b]\n    kwargs: {cmd: echo a}\n');
    const [run, invalid] = await Promise.all([
      runCli(['workflow', 'run', file, '--json', '--workers', '1']),
      runCli(['workflow', 'run', bad, '--json']),
    ]);
    expect(run.code).toBe(1);
    const doc = documentOf('workflow-run', run) as { tasks: Array<{ name: string; output: unknown }> };
    expect(doc.tasks.find((t) => t.name === 'fetchData')?.output).toEqual({ rowCount: 1 });
    expect(invalid.code).toBe(1);
    expect(documentOf('error', invalid)).toEqual({ error: { code: 'invalid_workflow', message: `${bad} is not a valid workflow` } });
  });

  it('workflow validate, on a valid and an invalid file (errors, warnings and hints)', async () => {
    const mistakes = join(__dirname, 'testdata', 'mistakes.yaml');
    const good = join(__dirname, '..', '..', '..', 'examples', 'diamond.yaml');
    const result = await runCli(['workflow', 'validate', good, mistakes, '--json']);
    expect(result.code).toBe(1);
    const doc = documentOf('workflow-validate', result) as {
      files: Array<{ file: string; ok: boolean; issues: Array<{ severity: string; hint: unknown }> }>;
    };
    expect(doc.files.map((f) => [f.file, f.ok])).toEqual([
      [good, true],
      [mistakes, false],
    ]);
    const issues = doc.files[1]!.issues;
    expect(new Set(issues.map((i) => i.severity))).toEqual(new Set(['error', 'warning']));
    expect(issues.some((i) => typeof i.hint === 'string')).toBe(true);
  });
});

describe('a failure under --json', () => {
  it('has a code from the fixed set: usage, invalid_workflow, failed, or the jobq error code in snake_case', () => {
    const cases: Array<[unknown, number, string]> = [
      [new UsageError('--x: bad'), 2, 'usage'],
      [new ReportedFailure('bad.yaml is not a valid workflow', 1, 'invalid_workflow'), 1, 'invalid_workflow'],
      [new ReportedFailure('1 check(s) failed'), 1, 'failed'],
      [new ReportedFailure('bad params', 2), 2, 'usage'],
      [new WorkflowValidationError([], 'w.yaml'), 1, 'invalid_workflow'],
      [new JobqError('not-found', 'no such workflow'), 1, 'not_found'],
      [new JobqError('invalid-config', 'no prefix'), 1, 'invalid_config'],
      [new Error('boom'), 1, 'failed'],
    ];
    for (const [error, exit, code] of cases) {
      expect(jsonErrorCode(error, exit)).toBe(code);
      expect(JSON_ERROR_CODES).toContain(code);
    }
  });

  it('prints the error document on stdout and the one line on stderr, with the usual exit codes', async () => {
    const [missing, noArg, noPrefix, submit, setOutput] = await Promise.all([
      runCli(['workflow', 'status', 'no-such-workflow', '--json'], { env }),
      runCli(['workflow', 'cancel', '--json'], { env }),
      runCli(['workflow', 'status', 'x', '--json'], { env: storage.env(null) }),
      storage.file('invalid.yaml', 'name: x\ntasks: []\n').then((f) => runCli(['workflow', 'submit', f, '--json'], { env })),
      runCli(['task', 'set-output', '--json', '{nope'], { env }),
    ]);
    expect(missing.code).toBe(1);
    expect(documentOf('error', missing)).toEqual({
      error: { code: 'not_found', message: `workflow "no-such-workflow" does not exist in devstoreaccount1/${prefix}` },
    });
    expect(missing.stderr).toBe(`jobq: not-found: workflow "no-such-workflow" does not exist in devstoreaccount1/${prefix}\n`);
    for (const result of [noArg, noPrefix]) {
      expect(result.code).toBe(2);
      expect(documentOf('error', result)).toMatchObject({ error: { code: 'usage' } });
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(submit.code).toBe(1);
    expect(documentOf('error', submit)).toMatchObject({
      error: { code: 'invalid_workflow', message: '1 of 1 workflow file(s) are invalid: nothing was submitted' },
    });
    // set-output's --json is about its input: no document.
    expect(setOutput.code).toBe(2);
    expect(setOutput.stdout).toBe('');
  });
});
