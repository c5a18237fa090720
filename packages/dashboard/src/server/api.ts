import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  TASK_STATUSES,
  WORKFLOW_STATUSES,
  autoRollupLevel,
  compileCondition,
  dependencyState,
  isSatisfying,
  isValidWorkflowId,
  rollupGraph,
  rollupSizes,
  taskQueue,
  taskState,
  type RollupGraph,
  type RollupLevel,
  type TaskCounts,
  type TaskStatus,
  type WorkflowDefinition,
  type WorkflowRuntime,
  type WorkflowStatus,
} from '@jobq/dag-core';
import { findStashMarkers, parseTaskMessageId } from '@jobq/dag-core/wire';
import { isJobqError, workerState, type Clock, type TaskQueue, type WorkerRecord, type WorkflowSummary } from '@jobq/ports';
import type {
  ApiAttempt,
  ApiCounts,
  ApiDeltaEvent,
  ApiGraph,
  ApiGraphNode,
  ApiGroupChange,
  ApiPlacement,
  ApiStreamError,
  ApiTaskChange,
  ApiTaskDetail,
  ApiWorker,
  ApiWorkers,
  ApiWorkflowDetail,
  ApiWorkflowList,
  ApiWorkflowRow,
} from '../api-types';
import type { DashboardOptions } from './server';
import { HttpError, SECURITY_HEADERS, badRequest, notFound, sendError, sendJson, sendText } from './http-util';
import { RuntimeWatch, type PollResult } from './watch';

/** The `tasks` level is refused above this many tasks (the browser could not draw them). */
export const MAX_TASKS_LEVEL = 50_000;
/** A log answer holds at most this many bytes (the end of the log). */
export const LOG_TAIL_BYTES = 64 * 1024;
/** Most parents whose outputs a condition panel reads. */
const MAX_CONDITION_PARENTS = 20;
/** Pages of index rows one list request reads at most to fill a page of name-prefix matches. */
const MAX_LIST_PAGES = 10;
const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 500;
/** How long the workers' heartbeats are kept for every client (at least the poll interval). */
const WORKERS_CACHE_MS = 10_000;
/** A comment line on quiet event streams, so proxies and browsers keep them open. */
const KEEPALIVE_MS = 15_000;

type ResolvedOptions = DashboardOptions & { clock: Clock };

/** A value read from storage and kept for a while, for every client. */
class Cached<T> {
  private value: { at: number; data: T } | null = null;
  private inflight: Promise<T> | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly read: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    if (this.value && this.clock.now() - this.value.at < this.ttlMs) return Promise.resolve(this.value.data);
    this.inflight ??= this.read()
      .then((data) => {
        this.value = { at: this.clock.now(), data };
        return data;
      })
      .finally(() => {
        this.inflight = null;
      });
    return this.inflight;
  }
}

/** One line, without anything that looks like a key or a SAS. */
export function safeLine(text: string): string {
  return text
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .replace(/(AccountKey|SharedAccessKey|SharedAccessSignature|sig|se|sv|sp|skoid|sktid|skt|ske|sks|skv)=[^;&\s]+/gi, '$1=***')
    .slice(0, 400);
}

/** What a storage failure becomes: 404 for `not-found`, else 502 with one line. */
function storageError(error: unknown, what: string): HttpError {
  if (error instanceof HttpError) return error;
  if (isJobqError(error, 'not-found')) return notFound(`${what}: not found`);
  if (isJobqError(error)) return new HttpError(502, 'storage', `${what}: ${safeLine(error.message)}`);
  return new HttpError(502, 'storage', `${what}: the storage request failed`);
}

function emptyCounts(): ApiCounts {
  return { pending: 0, ready: 0, running: 0, completed: 0, failed: 0, upstream_failed: 0, skipped: 0, cancelled: 0 };
}

function totalOf(counts: TaskCounts): number {
  return TASK_STATUSES.reduce((sum, s) => sum + counts[s], 0);
}

function row(summary: WorkflowSummary): ApiWorkflowRow {
  return {
    workflow_id: summary.workflowId,
    name: summary.name,
    status: summary.status,
    counts: { ...summary.counts },
    total: totalOf(summary.counts),
    queues: summary.queues,
    created_at: summary.createdAt,
    updated_at: summary.updatedAt,
    finished_at: summary.finishedAt,
    error: summary.error,
  };
}

/** The rollups of one definition, made once per level. */
interface GraphCache {
  definition: WorkflowDefinition;
  key: string;
  sizes: Record<RollupLevel, number> | null;
  levels: Map<RollupLevel, RollupGraph>;
  positions: Map<string, number>;
}

/** Which running tasks of a workflow a worker's heartbeat lists: task name → worker. */
type OnWorker = Map<string, { record: WorkerRecord; since: string; attemptNo: number }> | null;

/** The `/api/…` routes (packages/dashboard/README.md#api). */
export class Api {
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly watches = new Map<string, RuntimeWatch>();
  private readonly graphs = new Map<string, GraphCache>();
  private readonly lists = new Map<string, Cached<ApiWorkflowList>>();
  private readonly workersCache: Cached<WorkerRecord[]> | null;
  private readonly explains = new Map<string, Cached<Map<string, string[]>>>();
  private readonly streams = new Set<ServerResponse>();
  private closed = false;

  constructor(private readonly options: ResolvedOptions) {
    this.clock = options.clock;
    this.intervalMs = options.pollIntervalMs ?? 2_000;
    const workers = options.workers;
    // Heartbeats come every 30 s by default: a read every 10 s (or interval) is fresh enough.
    this.workersCache = workers ? new Cached(this.clock, Math.max(this.intervalMs, WORKERS_CACHE_MS), () => workers.list()) : null;
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams): Promise<void> {
    try {
      if (path === '/api/workflows') return sendJson(res, req, 200, await this.list(query));
      if (path === '/api/workers') return sendJson(res, req, 200, await this.workersRoute());
      if (path === '/api/events') return await this.events(req, res, query);
      const match = /^\/api\/workflows\/([^/]+)(?:\/(graph|task|log|output))?$/.exec(path);
      if (match) {
        const id = match[1]!;
        if (!isValidWorkflowId(id)) throw notFound(`workflow "${safeLine(id).slice(0, 100)}" not found`);
        switch (match[2]) {
          case undefined:
            return sendJson(res, req, 200, await this.detail(id));
          case 'graph':
            return sendJson(res, req, 200, await this.graph(id, query.get('level') ?? 'auto'));
          case 'task':
            return sendJson(res, req, 200, await this.task(id, requiredName(query)));
          case 'output':
            return sendJson(res, req, 200, await this.output(id, requiredName(query)));
          case 'log':
            return await this.log(req, res, id, query);
        }
      }
      throw notFound(`no API route ${safeLine(path).slice(0, 200)}`);
    } catch (error) {
      const failure = storageError(error, 'storage');
      sendError(res, req, failure.status, failure.code, failure.message);
    }
  }

  /** Open event streams, and workflows being polled for them. */
  stats(): { streams: number; polled: number } {
    let polled = 0;
    for (const watch of this.watches.values()) if (watch.watchers > 0) polled++;
    return { streams: this.streams.size, polled };
  }

  /** Ends the event streams and stops polling. */
  close(): void {
    this.closed = true;
    for (const watch of this.watches.values()) watch.stop();
    for (const res of this.streams) res.end();
    this.streams.clear();
  }

  // ---- shared reads ----------------------------------------------------------------------------

  private watch(workflowId: string): RuntimeWatch {
    let watch = this.watches.get(workflowId);
    if (!watch) {
      // Forget watches nobody streams and nobody asked about for a minute.
      if (this.watches.size > 100) {
        for (const [id, w] of this.watches) if (w.watchers === 0) this.watches.delete(id);
      }
      watch = new RuntimeWatch(workflowId, this.options.store, this.clock, this.intervalMs, () => undefined);
      this.watches.set(workflowId, watch);
    }
    return watch;
  }

  private async runtimeOf(workflowId: string): Promise<{ runtime: WorkflowRuntime | null; token: string | null; watch: RuntimeWatch }> {
    const watch = this.watch(workflowId);
    try {
      const state = await watch.current();
      return { runtime: state.runtime, token: state.token, watch };
    } catch (error) {
      throw storageError(error, `read the runtime of workflow "${workflowId}"`);
    }
  }

  private graphCache(runtime: WorkflowRuntime): GraphCache {
    const key = `${runtime.createdAt}|${runtime.definition.tasks.length}`;
    let cache = this.graphs.get(runtime.workflowId);
    if (!cache || cache.key !== key) {
      const positions = new Map<string, number>();
      runtime.definition.tasks.forEach((t, i) => positions.set(t.name, i));
      cache = { definition: runtime.definition, key, sizes: null, levels: new Map(), positions };
      if (this.graphs.size > 50) this.graphs.clear();
      this.graphs.set(runtime.workflowId, cache);
    }
    return cache;
  }

  private sizesOf(cache: GraphCache): Record<RollupLevel, number> {
    const sizes = cache.sizes ?? rollupSizes(cache.definition);
    cache.sizes = sizes;
    return sizes;
  }

  private rollup(cache: GraphCache, level: RollupLevel): RollupGraph {
    let graph = cache.levels.get(level);
    if (!graph) {
      graph = rollupGraph(cache.definition, level);
      cache.levels.set(level, graph);
    }
    return graph;
  }

  /** `auto` resolved, or 400. */
  private level(cache: GraphCache, text: string): RollupLevel {
    if (text === 'auto') return autoRollupLevel(cache.definition, this.sizesOf(cache));
    if (text === 'families' || text === 'siblings' || text === 'layers' || text === 'tasks') {
      if (text === 'tasks' && cache.definition.tasks.length > MAX_TASKS_LEVEL) {
        throw badRequest(
          `level "tasks" shows at most ${MAX_TASKS_LEVEL} tasks; this workflow has ${cache.definition.tasks.length}: pick families, siblings or layers`,
        );
      }
      return text;
    }
    throw badRequest(`level "${safeLine(text).slice(0, 40)}" is not one of auto, families, siblings, layers, tasks`);
  }

  /** The workers' heartbeats (null without a registry, or when it cannot be read: the panels hide). */
  private async workerRecords(): Promise<WorkerRecord[] | null> {
    if (!this.workersCache) return null;
    try {
      return await this.workersCache.get();
    } catch {
      return null;
    }
  }

  private async onWorker(workflowId: string): Promise<OnWorker> {
    const records = await this.workerRecords();
    if (records === null) return null;
    const map = new Map<string, { record: WorkerRecord; since: string; attemptNo: number }>();
    for (const record of records) {
      for (const running of record.running) {
        const parts = parseTaskMessageId(running.id);
        if (parts.ok && parts.value.workflowId === workflowId)
          map.set(parts.value.taskName, { record, since: running.since, attemptNo: parts.value.attemptNo });
      }
    }
    return map;
  }

  // ---- routes ----------------------------------------------------------------------------------

  private async list(query: URLSearchParams): Promise<ApiWorkflowList> {
    const statusText = query.get('status') ?? '';
    const statuses = statusText === '' ? [] : statusText.split(',');
    for (const s of statuses) {
      if (!(WORKFLOW_STATUSES as readonly string[]).includes(s))
        throw badRequest(`status "${safeLine(s).slice(0, 40)}" is not one of ${WORKFLOW_STATUSES.join(', ')}`);
    }
    const prefix = query.get('prefix') ?? '';
    if (prefix.length > 256) throw badRequest('prefix is longer than 256 characters');
    const cursor = query.get('cursor') ?? '';
    const limit = intParam(query, 'limit', 1, MAX_LIST_LIMIT) ?? DEFAULT_LIST_LIMIT;
    const key = JSON.stringify([statuses, prefix, cursor, limit]);
    let cached = this.lists.get(key);
    if (!cached) {
      if (this.lists.size > 200) this.lists.clear();
      cached = new Cached(this.clock, this.options.listCacheMs ?? 10_000, () =>
        this.readList(statuses as WorkflowStatus[], prefix, cursor, limit),
      );
      this.lists.set(key, cached);
    }
    try {
      return await cached.get();
    } catch (error) {
      throw storageError(error, 'list the workflows');
    }
  }

  private async readList(statuses: WorkflowStatus[], prefix: string, cursor: string, limit: number): Promise<ApiWorkflowList> {
    const workflows: ApiWorkflowRow[] = [];
    let token: string | null = cursor === '' ? null : cursor;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await this.options.store.listWorkflows({
        ...(statuses.length > 0 ? { status: statuses } : {}),
        limit: limit - workflows.length,
        ...(token !== null ? { continuationToken: token } : {}),
      });
      for (const summary of result.items) {
        if (prefix === '' || summary.name.startsWith(prefix) || summary.workflowId.startsWith(prefix)) workflows.push(row(summary));
      }
      token = result.continuationToken;
      if (token === null || workflows.length >= limit) break;
    }
    return { workflows, next_cursor: token, read_at: new Date(this.clock.now()).toISOString() };
  }

  private async detail(workflowId: string): Promise<ApiWorkflowDetail> {
    let summary: WorkflowSummary | null;
    try {
      summary = await this.options.store.getWorkflow(workflowId);
    } catch (error) {
      throw storageError(error, `read the index row of workflow "${workflowId}"`);
    }
    let runtime: WorkflowRuntime | null = null;
    let token: string | null = null;
    let banner: string | null = null;
    let rate: RuntimeWatch | null = null;
    try {
      const read = await this.runtimeOf(workflowId);
      runtime = read.runtime;
      token = read.token;
      rate = read.watch;
    } catch (error) {
      if (!(error instanceof HttpError) || error.status !== 502 || summary === null) throw error;
      banner = `the runtime cannot be read (${error.message}): showing the index row`;
    }
    if (summary === null && runtime === null) throw notFound(`workflow "${workflowId}" not found`);
    if (runtime === null && banner === null) banner = 'the runtime blob is missing: showing the index row only';
    if (summary?.status === 'corrupt') banner = `this workflow was set aside as corrupt: ${summary.error ?? 'no reason recorded'}`;
    const counts = runtime?.counts ?? summary!.counts;
    const total = totalOf(counts);
    const done = counts.completed + counts.failed + counts.upstream_failed + counts.skipped + counts.cancelled;
    const cache = runtime ? this.graphCache(runtime) : null;
    const sizes = cache ? this.sizesOf(cache) : { families: 0, siblings: 0, layers: 0, tasks: 0 };
    return {
      workflow_id: workflowId,
      name: runtime?.definition.name ?? summary!.name,
      status: runtime?.status ?? summary!.status,
      counts: { ...counts },
      total,
      rate_per_s: rate?.rate.rate() ?? null,
      eta_ms: rate ? rate.rate.etaMs(total - done) : null,
      activated: runtime?.activated ?? false,
      created_at: runtime?.createdAt ?? summary?.createdAt ?? null,
      updated_at: runtime?.updatedAt ?? summary!.updatedAt,
      finished_at: runtime?.finishedAt ?? summary?.finishedAt ?? null,
      index_status: summary?.status ?? null,
      error: summary?.error ?? null,
      queues: runtime
        ? [...new Set(runtime.definition.tasks.map((t) => taskQueue(runtime.definition, t)))].sort()
        : (summary?.queues ?? []),
      runtime_present: runtime !== null,
      banner,
      auto_level: cache ? autoRollupLevel(cache.definition, sizes) : 'tasks',
      level_sizes: sizes,
      token,
      has_workers: this.options.workers != null,
      has_logs: this.options.outputs != null,
    };
  }

  private async requireRuntime(workflowId: string): Promise<{ runtime: WorkflowRuntime; token: string | null; watch: RuntimeWatch }> {
    const read = await this.runtimeOf(workflowId);
    if (read.runtime === null) throw notFound(`workflow "${workflowId}" not found (no runtime)`);
    return { runtime: read.runtime, token: read.token, watch: read.watch };
  }

  private async graph(workflowId: string, levelText: string): Promise<ApiGraph> {
    const { runtime, token } = await this.requireRuntime(workflowId);
    const cache = this.graphCache(runtime);
    const level = this.level(cache, levelText);
    const graph = this.rollup(cache, level);
    const onWorker = await this.onWorker(workflowId);
    const tasks = runtime.definition.tasks;
    const states = tasks.map((t) => taskState(runtime, t.name)?.status ?? 'pending');
    const nodes: ApiGraphNode[] = graph.nodes.map((node) => {
      if (node.kind === 'task') {
        const t = node.tasks[0]!;
        const status = states[t]!;
        return {
          id: node.id,
          kind: 'task',
          label: node.label,
          queue: node.queue,
          size: 1,
          status,
          on_worker: onWorkerOf(onWorker, tasks[t]!.name, status),
          depth: node.depth,
        };
      }
      const counts = emptyCounts();
      let busy = 0;
      const names: string[] = new Array<string>(node.tasks.length);
      node.tasks.forEach((t, i) => {
        counts[states[t]!]++;
        names[i] = tasks[t]!.name;
        if (states[t] === 'running' && onWorker?.has(tasks[t]!.name)) busy++;
      });
      return {
        id: node.id,
        kind: 'group',
        label: node.label,
        queue: node.queue,
        size: node.tasks.length,
        counts,
        on_worker: busy,
        task_names: names,
        depth: node.depth,
      };
    });
    const edges = graph.edges.map(([from, to]) => ({ from: graph.nodes[from]!.id, to: graph.nodes[to]!.id }));
    return { workflow_id: workflowId, level, nodes, edges, total_tasks: tasks.length, token };
  }

  private async task(workflowId: string, name: string): Promise<ApiTaskDetail> {
    const { runtime } = await this.requireRuntime(workflowId);
    const definition = runtime.definition;
    const def = definition.tasks.find((t) => t.name === name);
    const state = taskState(runtime, name);
    if (!def || !state) throw notFound(`workflow "${workflowId}" has no task "${safeLine(name).slice(0, 200)}"`);
    const statusOf = (n: string): TaskStatus => taskState(runtime, n)?.status ?? 'pending';

    const dependencies = [
      ...def.dependsOn.map((n) => ({ name: n, status: statusOf(n), gate: false })),
      ...(def.gates ?? []).map((n) => ({ name: n, status: statusOf(n), gate: true })),
    ];
    const verdict = dependencyState(runtime, name)!.verdict;
    const dependents = definition.tasks.filter((t) => t.dependsOn.includes(name) || (t.gates ?? []).includes(name)).map((t) => t.name);

    const outputs = this.options.outputs ?? null;
    let condition: ApiTaskDetail['condition'] = null;
    if (def.condition !== null) {
      const compiled = compileCondition(def.condition, def.dependsOn);
      const references = compiled.ok ? compiled.value.references : [];
      const parents = await Promise.all(
        references.slice(0, MAX_CONDITION_PARENTS).map(async (parent) => {
          const ps = taskState(runtime, parent);
          const status = ps?.status ?? 'pending';
          if (!ps || ps.outputRef === null)
            return { name: parent, status, value: null, unavailable: ps && isSatisfying(status) ? null : `${parent} has not finished` };
          if (!outputs) return { name: parent, status, value: null, unavailable: 'outputs cannot be read here' };
          try {
            return { name: parent, status, value: await outputs.getOutput(ps.outputRef), unavailable: null };
          } catch (error) {
            return { name: parent, status, value: null, unavailable: storageError(error, `read the output of "${parent}"`).message };
          }
        }),
      );
      const decided = state.status === 'skipped' ? false : ['ready', 'running', 'completed', 'failed'].includes(state.status) ? true : null;
      condition = {
        expression: def.condition,
        parents,
        result: decided,
        skip_reason: state.status === 'skipped' ? (state.error ?? (compiled.ok ? null : (compiled.issues[0]?.message ?? null))) : null,
      };
    }

    const onWorker = await this.onWorker(workflowId);
    let placement: ApiPlacement | null = null;
    if (state.status === 'running') {
      const found = onWorker?.get(name);
      placement = found
        ? { state: 'on-worker', worker_id: found.record.workerId, host: found.record.host, since: found.since }
        : { state: onWorker === null ? 'unknown' : 'in-queue', worker_id: null, host: null, since: null };
    }

    const attempts = await this.attempts(workflowId, name, state.attemptNo);

    let output: unknown = null;
    let outputError: string | null = null;
    if (state.outputRef !== null) {
      if (!outputs) outputError = 'outputs cannot be read here';
      else {
        try {
          output = await outputs.getOutput(state.outputRef);
        } catch (error) {
          outputError = storageError(error, `read the output of "${name}"`).message;
        }
      }
    }
    const stash = findStashMarkers(output).map((found) => ({
      filename: found.marker.blobName.split('/').pop() ?? '',
      size: found.marker.size,
      blob: found.marker.blobName,
    }));

    const q = shellQuote;
    return {
      workflow_id: workflowId,
      name,
      status: state.status,
      queue: taskQueue(definition, def),
      attempt_no: state.attemptNo,
      max_attempts: state.retryBase + def.numRetries + 1,
      dispatched_at: state.dispatchedAt,
      started_at: state.startedAt,
      completed_at: state.completedAt,
      retry_due_at: state.retryDueAt,
      error: state.error,
      dependencies,
      dep_policy: def.depPolicy,
      policy_verdict: verdict,
      condition,
      dependents,
      attempts,
      placement,
      explain: await this.explainFor(workflowId, name),
      output,
      output_error: outputError,
      output_url:
        state.outputRef !== null ? `/api/workflows/${encodeURIComponent(workflowId)}/output?name=${encodeURIComponent(name)}` : null,
      stash,
      commands: {
        logs: `jobq workflow logs ${q(workflowId)} ${q(name)}`,
        retry: `jobq workflow retry ${q(workflowId)}`,
        cancel: `jobq workflow cancel ${q(workflowId)}`,
        rerun: `jobq workflow retry ${q(workflowId)} --task ${q(name)}`,
      },
    };
  }

  private async attempts(workflowId: string, name: string, attemptNo: number): Promise<ApiAttempt[]> {
    const outputs = this.options.outputs;
    const byAttempt = new Map<number, ApiAttempt>();
    if (outputs) {
      try {
        for (const entry of await outputs.listTaskLogs(workflowId, name)) {
          const m = entry.metadata;
          byAttempt.set(entry.attemptNo, {
            attempt_no: entry.attemptNo,
            outcome: m?.outcome ?? null,
            exit_code: m?.exitCode ?? null,
            started: m?.started ?? null,
            ended: m?.ended ?? null,
            worker: m?.worker ?? null,
            log_bytes: entry.size,
            log_url: `/api/workflows/${encodeURIComponent(workflowId)}/log?name=${encodeURIComponent(name)}&attempt=${entry.attemptNo}`,
          });
        }
      } catch {
        // Logs are an extra: without them the attempts are listed bare.
      }
    }
    for (let k = 1; k <= attemptNo; k++) {
      if (!byAttempt.has(k))
        byAttempt.set(k, {
          attempt_no: k,
          outcome: null,
          exit_code: null,
          started: null,
          ended: null,
          worker: null,
          log_bytes: null,
          log_url: null,
        });
    }
    return [...byAttempt.values()].sort((a, b) => a.attempt_no - b.attempt_no);
  }

  private async explainFor(workflowId: string, name: string): Promise<string[]> {
    const client = this.options.client;
    if (!client) return [];
    let cached = this.explains.get(workflowId);
    if (!cached) {
      if (this.explains.size > 50) this.explains.clear();
      const open = this.options.queues ?? undefined;
      cached = new Cached(this.clock, this.intervalMs, async () => {
        // explain peeks the queues of the workflow's tasks: open them first (a queue that cannot be opened is not peeked).
        const queues = new Map<string, TaskQueue>();
        const runtime = (await this.watch(workflowId).current()).runtime;
        if (open && runtime) {
          const specs = [...new Set(runtime.definition.tasks.map((t) => taskQueue(runtime.definition, t)))];
          await Promise.all(
            specs.map(async (spec) => {
              const queue = await Promise.resolve(open(spec)).catch(() => undefined);
              if (queue) queues.set(spec, queue);
            }),
          );
        }
        const report = await client.explain(workflowId, open ? { peekQueues: (spec) => queues.get(spec) } : {});
        return new Map(report.tasks.map((t) => [t.name, t.reasons]));
      });
      this.explains.set(workflowId, cached);
    }
    try {
      return (await cached.get()).get(name) ?? [];
    } catch {
      return [];
    }
  }

  private async output(workflowId: string, name: string): Promise<unknown> {
    const { runtime } = await this.requireRuntime(workflowId);
    const state = taskState(runtime, name);
    if (!state) throw notFound(`workflow "${workflowId}" has no task "${safeLine(name).slice(0, 200)}"`);
    if (state.outputRef === null) return null;
    if (!this.options.outputs) throw notFound('outputs cannot be read here');
    try {
      return await this.options.outputs.getOutput(state.outputRef);
    } catch (error) {
      throw storageError(error, `read the output of "${name}"`);
    }
  }

  private async log(req: IncomingMessage, res: ServerResponse, workflowId: string, query: URLSearchParams): Promise<void> {
    const name = requiredName(query);
    const attempt = intParam(query, 'attempt', 1, 1_000_000_000);
    if (attempt === null) throw badRequest('attempt is required (a number from 1)');
    const from = intParam(query, 'from', 0, Number.MAX_SAFE_INTEGER);
    const outputs = this.options.outputs;
    if (!outputs) throw notFound('task logs cannot be read here');
    let read;
    try {
      read = await outputs.getTaskLog(workflowId, name, attempt);
    } catch (error) {
      throw storageError(error, `read the log of "${name}" attempt ${attempt}`);
    }
    if (read === null || read.notModified)
      throw notFound(`no log of task "${safeLine(name).slice(0, 200)}" attempt ${attempt} in workflow "${workflowId}"`);
    const size = read.bytes.length;
    const start = Math.max(from ?? 0, size - LOG_TAIL_BYTES, 0);
    const body = Buffer.from(read.bytes.buffer, read.bytes.byteOffset + Math.min(start, size), Math.max(0, size - start));
    sendText(res, req, 200, body, {
      'X-Jobq-Log-Size': String(size),
      'X-Jobq-Log-From': String(Math.min(start, size)),
      'X-Jobq-Log-Outcome': read.metadata?.outcome ?? 'unknown',
    });
  }

  private async workersRoute(): Promise<ApiWorkers> {
    const readAt = new Date(this.clock.now()).toISOString();
    if (!this.workersCache) return { available: false, workers: [], read_at: readAt };
    let records: WorkerRecord[];
    try {
      records = await this.workersCache.get();
    } catch (error) {
      throw storageError(error, 'list the workers');
    }
    const workers: ApiWorker[] = records.map((r) => ({
      worker_id: r.workerId,
      host: r.host,
      pid: r.pid,
      version: r.version,
      state: workerState(r),
      started_at: r.startedAt,
      seen_at: r.seenAt,
      age_ms: r.ageInMs,
      queues: r.queues.map((q) => ({ queue: q.queue, slots: q.slots, busy: q.busy, last_receive_at: q.lastReceiveAt })),
      running: r.running.map((t) => {
        const parts = parseTaskMessageId(t.id);
        return {
          id: t.id,
          since: t.since,
          workflow_id: parts.ok ? parts.value.workflowId : null,
          task: parts.ok ? parts.value.taskName : null,
          attempt_no: parts.ok ? parts.value.attemptNo : null,
        };
      }),
      running_more: r.runningMore,
    }));
    return { available: true, workers, read_at: readAt };
  }

  // ---- events ----------------------------------------------------------------------------------

  private async events(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    const workflowId = query.get('workflow') ?? '';
    if (!isValidWorkflowId(workflowId)) throw notFound(`workflow "${safeLine(workflowId).slice(0, 100)}" not found`);
    const levelText = query.get('level') ?? 'auto';
    const { runtime, token, watch } = await this.requireRuntime(workflowId);
    const level = this.level(this.graphCache(runtime), levelText);
    if (req.method === 'HEAD') {
      res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
      res.end();
      return;
    }
    if (this.closed) throw new HttpError(503, 'closing', 'the dashboard is closing');
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: ${Math.max(1000, this.intervalMs)}\n\n`);
    this.streams.add(res);

    // What this stream last sent, to send only what changed.
    let lastRuntime: WorkflowRuntime = runtime;
    let lastOnWorker = new Map<string, boolean | null>();
    let lastGroups = new Map<string, string>();
    let lastSent = this.clock.now();
    const write = (event: string, id: string | null, data: unknown): void => {
      if (res.writableEnded) return;
      res.write(`event: ${event}\n${id !== null ? `id: ${id}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
      lastSent = this.clock.now();
    };

    /** `names` null: a snapshot; `baseline`: only note what the client has (a resumed stream). */
    const build = async (
      rt: WorkflowRuntime,
      tok: string | null,
      names: readonly string[] | null,
      baseline = false,
    ): Promise<ApiDeltaEvent> => {
      const onWorker = await this.onWorker(workflowId);
      const cache = this.graphCache(rt);
      const graph = this.rollup(cache, level);
      const changedNames = new Set<string>(names ?? []);
      const nowOnWorker = new Map<string, boolean | null>();
      for (const def of rt.definition.tasks) {
        const s = taskState(rt, def.name);
        if (s?.status !== 'running') continue;
        const flag = onWorkerOf(onWorker, def.name, 'running');
        nowOnWorker.set(def.name, flag);
        if (!baseline && lastOnWorker.get(def.name) !== flag) changedNames.add(def.name);
      }
      if (!baseline) for (const n of lastOnWorker.keys()) if (!nowOnWorker.has(n)) changedNames.add(n);
      lastOnWorker = nowOnWorker;
      const tasks: ApiTaskChange[] = [];
      const touched = new Set<number>();
      const snapshot = names === null;
      for (const def of rt.definition.tasks) {
        const s = taskState(rt, def.name);
        if (!s) continue;
        if (snapshot ? s.status === 'pending' : !changedNames.has(def.name)) continue;
        tasks.push({
          name: def.name,
          status: s.status,
          attempt_no: s.attemptNo,
          on_worker: nowOnWorker.get(def.name) ?? null,
          error: s.error,
        });
        const position = cache.positions.get(def.name);
        if (position !== undefined) touched.add(graph.nodeOfTask[position]!);
      }
      const groups: ApiGroupChange[] = [];
      for (const index of snapshot ? graph.nodes.map((_, i) => i) : touched) {
        const node = graph.nodes[index]!;
        if (node.kind !== 'group') continue;
        const counts = emptyCounts();
        let busy = 0;
        for (const t of node.tasks) {
          const name = rt.definition.tasks[t]!.name;
          const status = taskState(rt, name)?.status ?? 'pending';
          counts[status]++;
          if (status === 'running' && nowOnWorker.get(name) === true) busy++;
        }
        const fingerprint = JSON.stringify([counts, busy]);
        if (lastGroups.get(node.id) === fingerprint) continue;
        lastGroups.set(node.id, fingerprint);
        groups.push({ id: node.id, counts, on_worker: busy });
      }
      const total = totalOf(rt.counts);
      const done = total - rt.counts.pending - rt.counts.ready - rt.counts.running;
      return {
        workflow_id: workflowId,
        token: tok ?? '',
        status: rt.status,
        counts: { ...rt.counts },
        rate_per_s: watch.rate.rate(),
        eta_ms: watch.rate.etaMs(total - done),
        tasks,
        groups,
      };
    };

    const lastEventId = req.headers['last-event-id'];
    const resumed = typeof lastEventId === 'string' && token !== null && lastEventId === token;
    const first = await build(runtime, token, resumed ? [] : null, resumed);
    write(resumed ? 'delta' : 'snapshot', token, first);

    let sending = Promise.resolve();
    const listener = (result: PollResult | Error): void => {
      sending = sending.then(async () => {
        if (res.writableEnded) return;
        if (result instanceof Error) {
          const failure = storageError(result, `read the runtime of workflow "${workflowId}"`);
          const data: ApiStreamError = { message: failure.message, retry_in_ms: watch.nextDelayMs() };
          write('error', null, data);
          return;
        }
        const rt = result.state.runtime;
        if (rt === null) {
          write('error', null, {
            message: `the runtime of workflow "${workflowId}" is gone`,
            retry_in_ms: watch.nextDelayMs(),
          } satisfies ApiStreamError);
          return;
        }
        // With heartbeats, a task can move from its queue onto a worker while the runtime stays put.
        if (result.replaced || rt !== lastRuntime || this.workersCache !== null) {
          const replaced = result.replaced;
          if (replaced) lastGroups = new Map();
          const delta = await build(rt, result.state.token, replaced ? null : rt === lastRuntime ? [] : result.changed);
          lastRuntime = rt;
          if (replaced || delta.tasks.length > 0 || delta.groups.length > 0) {
            write(replaced ? 'snapshot' : 'delta', result.state.token, delta);
            return;
          }
        }
        if (this.clock.now() - lastSent >= KEEPALIVE_MS && !res.writableEnded) {
          res.write(': ping\n\n');
          lastSent = this.clock.now();
        }
      });
    };
    const unsubscribe = watch.subscribe(listener);
    const end = (): void => {
      unsubscribe();
      this.streams.delete(res);
    };
    req.on('close', end);
    res.on('close', end);
  }
}

function onWorkerOf(onWorker: OnWorker, name: string, status: TaskStatus): boolean | null {
  if (status !== 'running' || onWorker === null) return null;
  return onWorker.has(name);
}

/** `name=` of a query: required, non-empty. */
function requiredName(query: URLSearchParams): string {
  const name = query.get('name');
  if (name === null || name === '') throw badRequest('name is required (a task name)');
  return name;
}

/** An integer parameter in [min, max]; null when absent; 400 otherwise. */
function intParam(query: URLSearchParams, key: string, min: number, max: number): number | null {
  const text = query.get(key);
  if (text === null || text === '') return null;
  if (!/^\d{1,16}$/.test(text)) throw badRequest(`${key} "${safeLine(text).slice(0, 40)}" is not a whole number`);
  const value = Number(text);
  if (value < min || value > max) throw badRequest(`${key} ${value} is out of range (${min}–${max})`);
  return value;
}

/** A word for a POSIX shell: as it is when safe, else in single quotes. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
