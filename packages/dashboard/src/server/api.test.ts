import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import type { TaskDefinition, WorkflowDefinition } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';
import type { ApiGraph, ApiGroupNode, ApiTaskDetail, ApiTaskNode, ApiWorkflowDetail, ApiWorkflowList, ApiWorkers } from '../api-types';
import { startDashboard, type Dashboard } from './server';
import { Fixture } from './test-helpers/fixture';
import { get, json } from './test-helpers/http';

const CONDITIONAL = `
name: conditional-deploy
tasks:
  - name: test
    kwargs: { cmd: 'true' }
  - name: deploy
    depends_on: [test]
    condition: inputs.test.passed and inputs.test.coverage >= 0.9
    kwargs: { cmd: 'true' }
  - name: page-oncall
    depends_on: [test]
    condition: not inputs.test.passed
    kwargs: { cmd: 'true' }
  - name: report
    depends_on: [deploy, page-oncall]
    dep_policy: any
    kwargs: { cmd: 'true' }
`;

function fan(n: number): string {
  const lines = ['name: fan', 'tasks:', '  - name: root', "    kwargs: { cmd: 'true' }"];
  for (let i = 0; i < n; i++)
    lines.push(`  - name: leaf-${String(i).padStart(4, '0')}`, '    depends_on: [root]', "    kwargs: { cmd: 'true' }");
  lines.push(
    '  - name: end',
    `    depends_on: [${Array.from({ length: n }, (_, i) => `leaf-${String(i).padStart(4, '0')}`).join(', ')}]`,
    "    kwargs: { cmd: 'true' }",
  );
  return lines.join('\n');
}

/** root → n leaves → end, built directly (validating a 50 000-task file is not what is tested). */
function wideDefinition(n: number): WorkflowDefinition {
  const task = (name: string, dependsOn: string[]): TaskDefinition => ({
    name,
    kwargs: { cmd: 'true' },
    dependsOn,
    queue: null,
    depPolicy: 'all',
    condition: null,
    numRetries: 0,
    timeoutS: null,
    retryDelayS: null,
    retryBackoff: null,
    retryMaxDelayS: null,
  });
  const leaves = Array.from({ length: n }, (_, i) => `leaf-${String(i).padStart(5, '0')}`);
  return {
    name: 'wide',
    defaultQueue: 'default',
    defaultTaskTimeoutS: null,
    maxParallelism: null,
    resultPolicy: 'all_sinks_succeed',
    defaultRetryDelayS: 0,
    defaultRetryBackoff: 1,
    defaultRetryMaxDelayS: null,
    timeoutS: null,
    tasks: [task('root', []), ...leaves.map((l) => task(l, ['root'])), task('end', leaves)],
  };
}

describe('the dashboard API', () => {
  let f: Fixture;
  let dashboard: Dashboard;
  let dir: string;
  const api = (path: string) => get(`${dashboard.url}${path.replace(/^\//, '')}`);

  beforeEach(async () => {
    f = new Fixture();
    dir = mkdtempSync(join(tmpdir(), 'jobq-dash-api-'));
    mkdirSync(join(dir, 'web'));
    writeFileSync(join(dir, 'web', 'index.html'), '<!doctype html>');
    dashboard = await startDashboard({
      store: f.store,
      outputs: f.outputs,
      workers: f.workers,
      client: f.client,
      clock: f.clock,
      webRoot: join(dir, 'web'),
      pollIntervalMs: 2_000,
    });
  });

  afterEach(async () => {
    await dashboard.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists workflows with status and name-prefix filters, cached 10 s for every client', async () => {
    await f.submit('wf-a', CONDITIONAL);
    await f.submit('wf-b', fan(3));
    await f.apply('wf-b', { type: 'activate' });
    const all = json<ApiWorkflowList>(await api('/api/workflows'));
    expect(all.workflows.map((w) => [w.workflow_id, w.name, w.status, w.total])).toEqual([
      ['wf-a', 'conditional-deploy', 'pending', 4],
      ['wf-b', 'fan', 'running', 5],
    ]);
    expect(all.next_cursor).toBeNull();
    expect(json<ApiWorkflowList>(await api('/api/workflows?status=running')).workflows.map((w) => w.workflow_id)).toEqual(['wf-b']);
    expect(json<ApiWorkflowList>(await api('/api/workflows?prefix=cond')).workflows.map((w) => w.workflow_id)).toEqual(['wf-a']);

    const before = f.counting.calls.listWorkflows ?? 0;
    await api('/api/workflows');
    await api('/api/workflows');
    expect(f.counting.calls.listWorkflows ?? 0).toBe(before);
    await f.clock.advance(10_000);
    await api('/api/workflows');
    expect(f.counting.calls.listWorkflows).toBe(before + 1);

    const bad = await api('/api/workflows?status=done');
    expect(bad.status).toBe(400);
    expect(json(bad).error.message).toContain('status "done" is not one of');
    expect((await api('/api/workflows?limit=0')).status).toBe(400);
    expect((await api('/api/workflows?limit=x')).status).toBe(400);
  });

  it('pages the list with a cursor', async () => {
    for (const id of ['p1', 'p2', 'p3']) await f.submit(id, CONDITIONAL);
    const first = json<ApiWorkflowList>(await api('/api/workflows?limit=2'));
    expect(first.workflows.map((w) => w.workflow_id)).toEqual(['p1', 'p2']);
    expect(first.next_cursor).not.toBeNull();
    const second = json<ApiWorkflowList>(await api(`/api/workflows?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`));
    expect(second.workflows.map((w) => w.workflow_id)).toEqual(['p3']);
  });

  it('shows a workflow with counts, rate and ETA; 404 for an unknown one', async () => {
    await f.submit('wf', fan(3));
    await f.apply('wf', { type: 'activate' });
    const first = json<ApiWorkflowDetail>(await api('/api/workflows/wf'));
    expect(first).toMatchObject({
      workflow_id: 'wf',
      name: 'fan',
      status: 'running',
      total: 5,
      runtime_present: true,
      banner: null,
      auto_level: 'tasks',
      has_workers: true,
      has_logs: true,
    });
    expect(first.counts.running).toBe(1);
    expect(first.rate_per_s).toBeNull();
    expect(first.level_sizes).toEqual({ families: 3, siblings: 3, layers: 3, tasks: 5 });
    await f.finish('wf', 'root', { output: 1 });
    await f.clock.advance(10_000);
    await f.finish('wf', 'leaf-0000', {});
    const later = json<ApiWorkflowDetail>(await api('/api/workflows/wf'));
    expect(later.counts.completed).toBe(2);
    await f.clock.advance(10_000);
    await f.finish('wf', 'leaf-0001', {});
    const third = json<ApiWorkflowDetail>(await api('/api/workflows/wf'));
    expect(third.counts.completed).toBe(3);
    expect(third.rate_per_s).toBeCloseTo(0.15, 5); // 3 tasks in 20 s
    expect(third.eta_ms).toBeCloseTo(13_333.33, 1); // 2 left at 0.15/s

    const missing = await api('/api/workflows/nope');
    expect(missing.status).toBe(404);
    expect(json(missing).error.code).toBe('not-found');
    expect((await api('/api/workflows/..%2f..%2fetc')).status).toBe(404);
  });

  it('shows the index row and a banner when the runtime is missing', async () => {
    await f.submit('gone', CONDITIONAL);
    const load = f.memory.load.bind(f.memory);
    f.memory.load = (id, options) => (id === 'gone' ? Promise.resolve(null) : load(id, options));
    const detail = json<ApiWorkflowDetail>(await api('/api/workflows/gone'));
    expect(detail).toMatchObject({ runtime_present: false, name: 'conditional-deploy', total: 4, status: 'pending' });
    expect(detail.banner).toContain('runtime blob is missing');
    expect((await api('/api/workflows/gone/graph')).status).toBe(404);
  });

  it('answers 502 with one line and no secret when storage fails', async () => {
    await f.submit('wf', CONDITIONAL);
    f.counting.fail.next = new JobqError(
      'unavailable',
      'connection refused\n at DefaultEndpointsProtocol=https;AccountName=x;AccountKey=c2VjcmV0c2VjcmV0;',
    );
    for (const path of ['/api/workflows', '/api/workflows/wf', '/api/workflows/wf/graph']) {
      const answer = await api(path);
      expect([path, answer.status]).toEqual([path, 502]);
      const message: string = json(answer).error.message;
      expect(message).not.toContain('c2VjcmV0');
      expect(message).not.toContain('\n');
      expect(message).toContain('connection refused');
    }
  });

  it('serves the graph at every level; 400 for a bad level', async () => {
    await f.submit('fan', fan(300));
    await f.apply('fan', { type: 'activate' });
    await f.finish('fan', 'root', {});
    const auto = json<ApiGraph>(await api('/api/workflows/fan/graph'));
    expect(auto.level).toBe('families');
    expect(auto.total_tasks).toBe(302);
    expect(auto.nodes.map((n) => n.label)).toEqual(['root', 'leaf ×300', 'end']);
    const group = auto.nodes[1] as ApiGroupNode;
    expect(group).toMatchObject({ id: '#0', kind: 'group', size: 300, on_worker: 0 });
    expect(group.counts.running).toBe(300);
    expect(group.task_names).toHaveLength(300);
    expect(group.task_names[0]).toBe('leaf-0000');
    expect(auto.edges).toEqual([
      { from: 'root', to: '#0' },
      { from: '#0', to: 'end' },
    ]);
    expect((auto.nodes[0] as ApiTaskNode).status).toBe('completed');
    const tasks = json<ApiGraph>(await api('/api/workflows/fan/graph?level=tasks'));
    expect(tasks.nodes).toHaveLength(302);
    expect(tasks.edges).toHaveLength(600);
    const zipped = await get(`${dashboard.url}api/workflows/fan/graph?level=tasks`, { headers: { 'Accept-Encoding': 'br, gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(zipped.raw).toString('utf8'))).toEqual(tasks);
    expect(Number(zipped.headers['content-length'])).toBeLessThan(JSON.stringify(tasks).length / 5);
    expect(
      (await get(`${dashboard.url}api/workflows/fan/graph?level=tasks`, { headers: { 'Accept-Encoding': 'gzip;q=0' } })).headers[
        'content-encoding'
      ],
    ).toBeUndefined();
    for (const level of ['siblings', 'layers'])
      expect(json<ApiGraph>(await api(`/api/workflows/fan/graph?level=${level}`)).nodes).toHaveLength(3);
    const bad = await api('/api/workflows/fan/graph?level=all');
    expect(bad.status).toBe(400);
    expect(json(bad).error.message).toContain('level "all" is not one of');
  });

  it('splits running tasks into on-worker and in-queue by heartbeats', async () => {
    await f.submit('fan', fan(3));
    await f.apply('fan', { type: 'activate' });
    await f.finish('fan', 'root', {});
    await f.workers.beat({
      workerId: 'h-1-a',
      host: 'h',
      pid: 1,
      version: '0.1.0',
      intervalInMs: 30_000,
      stopping: false,
      startedAt: '2026-01-01T00:00:00.000Z',
      queues: [{ queue: 'default', slots: 2, busy: 1, lastReceiveAt: null }],
      running: [{ id: 'fan/leaf-0001/1', since: '2026-01-01T00:00:01.000Z' }],
      runningMore: 0,
    });
    const graph = json<ApiGraph>(await api('/api/workflows/fan/graph?level=tasks'));
    const byId = new Map(graph.nodes.map((n) => [n.id, n as ApiTaskNode]));
    expect(byId.get('leaf-0001')!.on_worker).toBe(true);
    expect(byId.get('leaf-0000')!.on_worker).toBe(false);
    expect(byId.get('root')!.on_worker).toBeNull();
    const task = json<ApiTaskDetail>(await api('/api/workflows/fan/task?name=leaf-0001'));
    expect(task.placement).toEqual({ state: 'on-worker', worker_id: 'h-1-a', host: 'h', since: '2026-01-01T00:00:01.000Z' });
    expect(json<ApiTaskDetail>(await api('/api/workflows/fan/task?name=leaf-0002')).placement?.state).toBe('in-queue');
    const workers = json<ApiWorkers>(await api('/api/workers'));
    expect(workers.available).toBe(true);
    expect(workers.workers[0]).toMatchObject({
      worker_id: 'h-1-a',
      state: 'ok',
      running: [{ id: 'fan/leaf-0001/1', workflow_id: 'fan', task: 'leaf-0001', attempt_no: 1 }],
    });
  });

  it('shows a task: dependencies, policy verdict, condition with parent values, attempts, logs, output, explain, CLI lines', async () => {
    await f.submit('cd', CONDITIONAL);
    await f.apply('cd', { type: 'activate' });
    const log = new TextEncoder().encode('120 tests passed\n');
    await f.outputs.putTaskLog('cd', 'test', 1, log, {
      outcome: 'succeeded',
      exitCode: 0,
      started: '2026-01-01T00:00:00.000Z',
      ended: '2026-01-01T00:00:02.000Z',
      bytes: log.length,
      worker: 'h-1-a',
    });
    await f.finish('cd', 'test', { output: { passed: true, coverage: 0.93 } });

    const skipped = json<ApiTaskDetail>(await api('/api/workflows/cd/task?name=page-oncall'));
    expect(skipped.status).toBe('skipped');
    expect(skipped.dependencies).toEqual([{ name: 'test', status: 'completed', gate: false }]);
    expect(skipped.policy_verdict).toBe('ready');
    expect(skipped.condition).toMatchObject({
      expression: 'not inputs.test.passed',
      result: false,
      parents: [{ name: 'test', status: 'completed', value: { passed: true, coverage: 0.93 }, unavailable: null }],
    });
    expect(skipped.condition!.skip_reason).toBeTruthy();
    expect(skipped.commands.logs).toBe('jobq workflow logs cd page-oncall');

    const deploy = json<ApiTaskDetail>(await api('/api/workflows/cd/task?name=deploy'));
    expect(deploy.status).toBe('running');
    expect(deploy.condition!.result).toBe(true);
    expect(deploy.explain.length).toBeGreaterThan(0);

    const test = json<ApiTaskDetail>(await api('/api/workflows/cd/task?name=test'));
    expect(test).toMatchObject({
      status: 'completed',
      attempt_no: 1,
      max_attempts: 1,
      output: { passed: true, coverage: 0.93 },
      output_url: '/api/workflows/cd/output?name=test',
      dependents: ['deploy', 'page-oncall'],
    });
    expect(test.attempts).toEqual([
      {
        attempt_no: 1,
        outcome: 'succeeded',
        exit_code: 0,
        started: '2026-01-01T00:00:00.000Z',
        ended: '2026-01-01T00:00:02.000Z',
        worker: 'h-1-a',
        log_bytes: log.length,
        log_url: '/api/workflows/cd/log?name=test&attempt=1',
      },
    ]);

    const text = await api(test.attempts[0]!.log_url!);
    expect(text.status).toBe(200);
    expect(text.body).toBe('120 tests passed\n');
    expect(text.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(text.headers['x-jobq-log-size']).toBe(String(log.length));
    expect((await api('/api/workflows/cd/log?name=test&attempt=1&from=4')).body).toBe('tests passed\n');
    expect(json(await api('/api/workflows/cd/output?name=test'))).toEqual({ passed: true, coverage: 0.93 });
    expect(json(await api('/api/workflows/cd/output?name=report'))).toBeNull();

    const report = json<ApiTaskDetail>(await api('/api/workflows/cd/task?name=report'));
    expect(report).toMatchObject({ status: 'running', dep_policy: 'any', policy_verdict: 'ready', placement: { state: 'in-queue' } });
    expect(report.attempts).toEqual([
      { attempt_no: 1, outcome: null, exit_code: null, started: null, ended: null, worker: null, log_bytes: null, log_url: null },
    ]);

    expect((await api('/api/workflows/cd/task?name=nope')).status).toBe(404);
    expect((await api('/api/workflows/cd/task')).status).toBe(400);
    expect((await api('/api/workflows/cd/log?name=test&attempt=0')).status).toBe(400);
    expect((await api('/api/workflows/cd/log?name=test&attempt=x')).status).toBe(400);
    expect((await api('/api/workflows/cd/log?name=test')).status).toBe(400);
    expect((await api('/api/workflows/cd/log?name=test&attempt=2')).status).toBe(404);
    expect((await api('/api/nope')).status).toBe(404);
  });

  it('sends the last 64 KiB of a long log', async () => {
    await f.submit('cd', CONDITIONAL);
    const big = new Uint8Array(100 * 1024).fill(0x61);
    big[big.length - 1] = 0x7a;
    await f.outputs.putTaskLog('cd', 'test', 1, big, {
      outcome: 'live',
      exitCode: null,
      started: '2026-01-01T00:00:00.000Z',
      ended: null,
      bytes: big.length,
      worker: 'w',
    });
    const answer = await api('/api/workflows/cd/log?name=test&attempt=1');
    expect(answer.body).toHaveLength(64 * 1024);
    expect(answer.body.endsWith('z')).toBe(true);
    expect(answer.headers['x-jobq-log-from']).toBe(String(36 * 1024));
    expect(answer.headers['x-jobq-log-outcome']).toBe('live');
  });

  it('refuses the tasks level above 50 000 tasks', async () => {
    await f.create('huge', wideDefinition(50_000));
    const answer = await api('/api/workflows/huge/graph?level=tasks');
    expect(answer.status).toBe(400);
    expect(json(answer).error.message).toContain('at most 50000');
    expect(json<ApiGraph>(await api('/api/workflows/huge/graph')).nodes.map((n) => n.label)).toEqual(['root', 'leaf ×50000', 'end']);
  });
});

describe('the workers route without a registry', () => {
  it('says workers are not available', async () => {
    const f = new Fixture();
    const dashboard = await startDashboard({ store: f.store, clock: f.clock });
    try {
      expect(json<ApiWorkers>(await get(`${dashboard.url}api/workers`))).toMatchObject({ available: false, workers: [] });
    } finally {
      await dashboard.close();
    }
  });
});
