// The live reducer against its reference model (test-helpers/reference: the implementation before
// the incremental representation). Random DAGs — every dep policy, definition order that is not
// topological, conditions over inline and blob outputs, retries (with and without delays), timeouts, workflow deadlines, max_parallelism, gates and
// merge nodes from sequentializeFanIn — driven by random event sequences: completions of dispatched
// attempts in any order, duplicates, stale, higher and attempt-less completions, cancel-caused
// failures, completions of unknown tasks, activations, timeout sweeps with every kind of TTL, cancel
// and retry requests (some not newer), re-run requests (of any task, with and without downstream,
// repeated, some forgetting earlier ones), condition inputs (answered, failed, unasked), corrupt and
// unknown events; one event at a time through `reduce` or in batches through `foldEvents`. After
// every step both reducers must agree on everything: effects and their order, every task's state,
// the workflow-level fields, the counts, which runtime object came back, and which tasks changed.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { WorkflowDefinition } from '../definition/types';
import { validateWorkflow } from '../definition/validate';
import { sequentializeFanIn } from '../transform/fan-in';
import { changedTasks, tasksIn } from './access';
import { withTaskStates } from './assemble';
import { checkCore, coreOf } from './core';
import { DEFAULT_CHUNK_SHIFT, DEFAULT_HUB_THRESHOLD, useLayout } from './graph-index';
import { encodeRuntime } from './codec';
import { createRuntime } from './create';
import { foldEvents, reduce } from './reduce';
import { decodedRuntime } from './test-helpers/build';
import { referenceCreate, referenceFold, referenceReduce, type ReferenceRuntime } from './test-helpers/reference';
import type { CompletionEvent, Effect, TaskRuntime, WorkflowEvent, WorkflowRuntime } from './types';

// ---------------------------------------------------------------------------------------------
// Random definitions

const WORKFLOW_ID = 'wf-eq';
const CONTAINER = 'eq-outputs';
const T0 = Date.UTC(2026, 0, 1);

type Policy = 'all' | 'any' | 'all_settled' | number;
type ConditionKind = 'ok' | 'not-ok' | 'eq-true' | 'n-gt-1' | 'or' | 'count';

interface TaskSpec {
  deps: number[];
  policy: Policy;
  retries: number;
  condition: { kind: ConditionKind; a: number; b: number } | null;
  timeout: number | null;
  queue: string | null;
  /** retry_delay_s, retry_backoff, retry_max_delay_s (null: the workflow's defaults). */
  delay: { s: number | null; backoff: number | null; max: number | null };
}

interface DagSpec {
  tasks: TaskSpec[];
  /** Sort keys: the definition lists the tasks in this order, not in dependency order. */
  order: number[];
  maxParallelism: number | null;
  resultPolicy: 'all_sinks_succeed' | 'all_tasks_succeed';
  defaultTimeout: number | null;
  /** default_retry_delay_s and default_retry_backoff; the workflow's timeout_s. */
  defaultDelay: number | null;
  defaultBackoff: number | null;
  workflowTimeout: number | null;
  /** `sequentializeFanIn(def, fanIn)` when not null: merge nodes and gates. */
  fanIn: number | null;
  /** Task states in chunks of `1 << chunkShift`, so that a few tasks span several chunks. */
  chunkShift: number;
  /** Tasks with more parents than this keep parent counters (0: all tasks with parents). */
  hubThreshold: number;
}

const MAX_TASKS = 12;

const taskArb = fc.record({
  depMask: fc.nat({ max: (1 << MAX_TASKS) - 1 }),
  maxDeps: fc.integer({ min: 1, max: 6 }),
  policyPick: fc.nat({ max: 4 }),
  nPick: fc.nat({ max: 5 }),
  retries: fc.nat({ max: 2 }),
  condition: fc.option(
    fc.record({
      kind: fc.constantFrom<ConditionKind>('ok', 'not-ok', 'eq-true', 'n-gt-1', 'or', 'count'),
      a: fc.nat({ max: 5 }),
      b: fc.nat({ max: 5 }),
    }),
    { nil: null, freq: 3 },
  ),
  timeout: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null, freq: 2 }),
  queue: fc.constantFrom<string | null>(null, null, null, 'gpu'),
  delay: fc.record({
    s: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null, freq: 2 }),
    backoff: fc.option(fc.constantFrom(1, 1.5, 2), { nil: null, freq: 2 }),
    max: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null, freq: 2 }),
  }),
});

const dagArb: fc.Arbitrary<DagSpec> = fc
  .record({
    raw: fc.array(taskArb, { minLength: 1, maxLength: MAX_TASKS, size: 'max' }),
    order: fc.array(fc.nat({ max: 1000 }), { minLength: MAX_TASKS, maxLength: MAX_TASKS }),
    maxParallelism: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
    resultPolicy: fc.constantFrom<DagSpec['resultPolicy']>('all_sinks_succeed', 'all_tasks_succeed'),
    defaultTimeout: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null, freq: 4 }),
    defaultDelay: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null, freq: 3 }),
    defaultBackoff: fc.option(fc.constantFrom(1, 2), { nil: null, freq: 3 }),
    workflowTimeout: fc.option(fc.integer({ min: 5, max: 60 }), { nil: null, freq: 3 }),
    fanIn: fc.option(fc.integer({ min: 2, max: 3 }), { nil: null, freq: 2 }),
    chunkShift: fc.constantFrom(0, 1, 2, 3, DEFAULT_CHUNK_SHIFT),
    hubThreshold: fc.constantFrom(0, 1, 2, 3, DEFAULT_HUB_THRESHOLD),
  })
  .map(
    ({
      raw,
      order,
      maxParallelism,
      resultPolicy,
      defaultTimeout,
      defaultDelay,
      defaultBackoff,
      workflowTimeout,
      fanIn,
      chunkShift,
      hubThreshold,
    }) => ({
      chunkShift,
      hubThreshold,
      order,
      maxParallelism,
      resultPolicy,
      defaultTimeout,
      defaultDelay,
      defaultBackoff,
      workflowTimeout,
      fanIn,
      tasks: raw.map((r, i): TaskSpec => {
        const deps: number[] = [];
        for (let j = 0; j < i && deps.length < r.maxDeps; j++) if (r.depMask & (1 << j)) deps.push(j);
        const n = deps.length;
        let policy: Policy = n === 0 ? 'all' : (['all', 'any', 'all_settled', 1 + (r.nPick % n), 'all'] as const)[r.policyPick]!;
        let condition = n > 0 ? r.condition : null;
        // Only an `all` task without a condition can be split by sequentializeFanIn.
        if (fanIn !== null && n > fanIn) {
          policy = 'all';
          condition = null;
        }
        return { deps, policy, retries: r.retries, condition, timeout: r.timeout, queue: r.queue, delay: r.delay };
      }),
    }),
  );

const nameOf = (i: number): string => `t${i}`;

function conditionText(spec: TaskSpec): string | null {
  const c = spec.condition;
  if (c === null) return null;
  const a = nameOf(spec.deps[c.a % spec.deps.length]!);
  const b = nameOf(spec.deps[c.b % spec.deps.length]!);
  switch (c.kind) {
    case 'ok':
      return `inputs.${a}.ok`;
    case 'not-ok':
      return `not inputs.${a}.ok`;
    case 'eq-true':
      return `inputs["${a}"].ok == True`;
    case 'n-gt-1':
      return `inputs.${a}.n > 1`;
    case 'or':
      return `inputs.${a}.ok or inputs.${b}.ok`;
    case 'count':
      return `count(inputs["t*"].ok) >= 1`;
  }
}

const definitions = new WeakMap<DagSpec, WorkflowDefinition>();

function definitionOf(dag: DagSpec): WorkflowDefinition {
  const known = definitions.get(dag);
  if (known) return known;
  const listed = dag.tasks.map((spec, i) => ({ spec, i })).sort((x, y) => (dag.order[x.i] ?? 0) - (dag.order[y.i] ?? 0) || x.i - y.i);
  const result = validateWorkflow({
    name: 'equivalence',
    max_parallelism: dag.maxParallelism,
    result_policy: dag.resultPolicy,
    default_task_timeout_s: dag.defaultTimeout,
    default_retry_delay_s: dag.defaultDelay,
    default_retry_backoff: dag.defaultBackoff,
    timeout_s: dag.workflowTimeout,
    tasks: listed.map(({ spec, i }) => ({
      name: nameOf(i),
      kwargs: { cmd: `echo ${i}` },
      depends_on: spec.deps.map(nameOf),
      dep_policy: spec.policy,
      condition: conditionText(spec),
      num_retries: spec.retries,
      timeout_s: spec.timeout,
      queue: spec.queue,
      retry_delay_s: spec.delay.s,
      retry_backoff: spec.delay.backoff,
      retry_max_delay_s: spec.delay.max,
    })),
  });
  if (!result.ok) throw new Error(`generator made an invalid workflow: ${JSON.stringify(result.issues)}`);
  let def = result.value;
  if (dag.fanIn !== null) {
    const seq = sequentializeFanIn(def, dag.fanIn);
    if (!seq.ok) throw new Error(`sequentializeFanIn: ${JSON.stringify(seq.issues)}`);
    def = seq.value;
  }
  useLayout(def, { chunkShift: dag.chunkShift, hubThreshold: dag.hubThreshold });
  definitions.set(dag, def);
  return def;
}

// ---------------------------------------------------------------------------------------------
// Comparing a live runtime with a reference runtime

/** The live runtime as the reference's plain data. */
function plain(rt: WorkflowRuntime): ReferenceRuntime {
  return {
    workflowId: rt.workflowId,
    definition: rt.definition,
    outputsContainer: rt.outputsContainer,
    status: rt.status,
    activated: rt.activated,
    cancelRequested: rt.cancelRequested,
    cancelAppliedAt: rt.cancelAppliedAt,
    retryAppliedAt: rt.retryAppliedAt,
    createdAt: rt.createdAt,
    updatedAt: rt.updatedAt,
    finishedAt: rt.finishedAt,
    corruptReason: rt.corruptReason,
    deadlineAt: rt.deadlineAt,
    cancelReason: rt.cancelReason,
    rerunsApplied: rt.rerunsApplied,
    traceparent: rt.traceparent,
    tasks: Object.fromEntries(tasksIn(rt)),
    counts: { ...rt.counts },
  };
}

/** A runtime's task states in definition order. */
function tasksInOrder(rt: WorkflowRuntime): TaskRuntime[] {
  return [...tasksIn(rt)].map(([, state]) => state);
}

/** A runtime's workflow-level fields other than the definition. */
function fieldsOf(rt: WorkflowRuntime): Omit<ReferenceRuntime, 'tasks' | 'counts' | 'definition'> {
  const { tasks: _tasks, counts: _counts, definition: _definition, ...fields } = plain(rt);
  return fields;
}

/** Names whose record the reference replaced between two of its runtimes, in definition order. */
function referenceChanged(before: ReferenceRuntime, after: ReferenceRuntime): string[] {
  return after.definition.tasks.map((t) => t.name).filter((name) => before.tasks[name] !== after.tasks[name]);
}

// ---------------------------------------------------------------------------------------------
// The world around the reducers: workers, blobs, requests

const OUTPUTS = ['{"ok":true}', '{"ok":false}', 'null', '{"ok":true,"n":2}', '{"n":0}', 'not json', '[1,2]'];
const VALUES: unknown[] = [{ ok: true }, { ok: false }, null, { ok: true, n: 2 }, { n: 0 }, 'not json', [1, 2]];

interface InFlight {
  task: string;
  attemptNo: number;
  /** Its worker saw a cancel and stopped it. */
  stopped: boolean;
}

interface Fetch {
  task: string;
  refs: Record<string, string>;
}

class World {
  clock = 0;
  inflight: InFlight[] = [];
  fetches: Fetch[] = [];
  delivered: CompletionEvent[] = [];
  blobs = new Map<string, unknown>();

  constructor(
    readonly def: WorkflowDefinition,
    private readonly take: () => number | undefined,
  ) {}

  now(): string {
    // Mostly forward one second; now and then a jump (so sweeps fire) or the same instant.
    const r = this.take() ?? 0;
    this.clock += r % 11 === 0 ? 0 : r % 13 === 0 ? 4 + (r % 5) : 1;
    return new Date(T0 + this.clock * 1000).toISOString();
  }

  absorb(effects: readonly Effect[], cancelled: boolean): void {
    for (const e of effects) {
      if (e.type === 'dispatch') this.inflight.push({ task: e.taskName, attemptNo: e.attemptNo, stopped: false });
      else if (e.type === 'fetch-condition-inputs') this.fetches.push({ task: e.taskName, refs: e.refs });
    }
    if (cancelled) for (const f of this.inflight) f.stopped = true;
  }

  taskName(r: number): string {
    const tasks = this.def.tasks;
    return r % 17 === 16 ? 'no-such-task' : tasks[r % tasks.length]!.name;
  }

  /** What a worker reports for an attempt; `r` picks the outcome. */
  completion(task: string, attemptNo: number | null, r: number, stopped = false): CompletionEvent {
    const now = this.now();
    const startedAt = r % 3 === 0 ? undefined : r % 3 === 1 ? null : now;
    if (stopped || r % 29 === 7) {
      const cancelled = r % 2 === 0 ? { cancelled: true } : {};
      const error = r % 4 < 2 ? 'stopped: workflow cancelled (SIGTERM)' : 'workflow cancelled';
      return {
        type: 'completion',
        now,
        taskName: task,
        attemptNo,
        success: false,
        outputRef: null,
        error,
        ...(startedAt === undefined ? {} : { startedAt }),
        ...cancelled,
      };
    }
    const success = r % 5 !== 0;
    if (!success)
      return {
        type: 'completion',
        now,
        taskName: task,
        attemptNo,
        success,
        outputRef: null,
        error: r % 7 === 0 ? null : 'exit code 1',
        ...(startedAt === undefined ? {} : { startedAt }),
      };
    const k = Math.floor(r / 5) % (OUTPUTS.length + 1);
    let outputRef: string | null = null;
    if (k < OUTPUTS.length) {
      if (Math.floor(r / 40) % 3 === 0) {
        const md5 = `${'A'.repeat(21)}${'ABCDEFGH'[k]}==`;
        outputRef = `blob:${CONTAINER}/outputs/${WORKFLOW_ID}/${task}/${attemptNo ?? 0}.json:${md5}`;
        this.blobs.set(outputRef, VALUES[k]);
      } else {
        outputRef = OUTPUTS[k]!;
      }
    }
    return {
      type: 'completion',
      now,
      taskName: task,
      attemptNo,
      success,
      outputRef,
      error: null,
      ...(startedAt === undefined ? {} : { startedAt }),
    };
  }

  /** The next event, built against `rt` (the state the event will meet); undefined when out of choices. */
  next(rt: ReferenceRuntime): WorkflowEvent | undefined {
    const kind = this.take();
    const r = this.take();
    if (kind === undefined || r === undefined) return undefined;
    const k = kind % 40;
    if (k < 20 && this.inflight.length > 0) {
      const [item] = this.inflight.splice(r % this.inflight.length, 1);
      const event = this.completion(item!.task, k === 19 ? null : item!.attemptNo, Math.floor(r / 7), item!.stopped);
      this.delivered.push(event);
      return event;
    }
    if (k < 24 && this.fetches.length > 0) {
      const [fetch] = this.fetches.splice(r % this.fetches.length, 1);
      const inputs: Record<string, unknown> = {};
      const errors: Record<string, string> = {};
      for (const [parent, ref] of Object.entries(fetch!.refs)) {
        if (r % 9 === 4 || !this.blobs.has(ref)) errors[parent] = 'blob read failed after retries';
        else inputs[parent] = this.blobs.get(ref);
      }
      return { type: 'condition-inputs', now: this.now(), taskName: fetch!.task, inputs, errors };
    }
    switch (k) {
      case 24:
      case 25: {
        const old = this.delivered[r % Math.max(this.delivered.length, 1)];
        return old ? { ...old, now: this.now() } : { type: 'activate', now: this.now() };
      }
      case 26:
      case 27: {
        // Any task, any attempt near the stored one (stale, current, lost flush, never dispatched), or none.
        const task = this.taskName(r);
        const stored = rt.tasks[task]?.attemptNo ?? 0;
        const pick = Math.floor(r / 17) % 6;
        const attemptNo = pick === 0 ? null : Math.max(pick === 5 ? 0 : 1, stored - 2 + pick);
        return this.completion(task, attemptNo, Math.floor(r / 101));
      }
      case 28:
      case 29:
        return { type: 'activate', now: this.now() };
      case 30:
      case 31: {
        const ttl = [undefined, 1_000, 0, null, Number.POSITIVE_INFINITY, 2_500][r % 6];
        const grace = [undefined, 1_000, 0][Math.floor(r / 6) % 3];
        return {
          type: 'timeout-sweep',
          now: this.now(),
          ...(ttl === undefined ? {} : { messageTtlInMs: ttl }),
          ...(grace === undefined ? {} : { graceInMs: grace }),
        };
      }
      case 32:
      case 33:
      case 34: {
        const type = k === 34 ? 'retry' : r % 2 === 0 ? 'cancel' : 'retry';
        const now = this.now();
        const when = Math.floor(r / 2) % 5;
        // Now and then a request that is not newer than one applied before.
        const requestedAt =
          when === 0
            ? new Date(T0 + (this.clock - 3) * 1000).toISOString()
            : when === 1
              ? (rt.cancelAppliedAt ?? rt.retryAppliedAt ?? now)
              : undefined;
        return requestedAt === undefined ? { type, now } : { type, now, requestedAt };
      }
      case 35: {
        // Inputs nobody asked for, or for a task that is waiting.
        const task = this.taskName(r);
        const parent = this.def.tasks[Math.floor(r / 3) % this.def.tasks.length]!.name;
        return r % 2 === 0
          ? { type: 'condition-inputs', now: this.now(), taskName: task, inputs: { [parent]: VALUES[r % VALUES.length] }, errors: {} }
          : { type: 'condition-inputs', now: this.now(), taskName: task, inputs: {}, errors: { [parent]: 'gone' } };
      }
      case 36:
        return r % 23 === 0
          ? { type: 'corrupt', now: this.now(), reason: r % 2 === 0 ? '  ' : 'a test said so' }
          : { type: 'activate', now: this.now() };
      case 37:
        return r % 19 === 0 ? ({ type: 'explode', now: this.now() } as unknown as WorkflowEvent) : { type: 'activate', now: this.now() };
      case 38:
      case 39: {
        // A re-run request: ids from a small pool (so some come again), any task (or none), what
        // the store still lists of them now and then (so applied ids are forgotten).
        const ids = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
        const listed = Math.floor(r / 7) % 3;
        const recorded = listed === 0 ? undefined : ids.filter((_, i) => (Math.floor(r / 21) >> i) % 2 === 1);
        const now = this.now();
        if (r % 5 === 0) this.clock += 700; // sometimes well past the time applied ids are kept
        return {
          type: 'rerun',
          now,
          requestId: ids[r % ids.length]!,
          taskName: this.taskName(Math.floor(r / 3)),
          downstream: Math.floor(r / 2) % 2 === 0,
          ...(recorded === undefined ? {} : { recorded }),
        };
      }
      default:
        return { type: 'activate', now: this.now() };
    }
  }

  /** Every attempt in flight completes, every fetch is answered. */
  drain(): WorkflowEvent | undefined {
    const fetch = this.fetches.shift();
    if (fetch) {
      const inputs: Record<string, unknown> = {};
      const errors: Record<string, string> = {};
      for (const [parent, ref] of Object.entries(fetch.refs)) {
        if (this.blobs.has(ref)) inputs[parent] = this.blobs.get(ref);
        else errors[parent] = 'missing';
      }
      return { type: 'condition-inputs', now: this.now(), taskName: fetch.task, inputs, errors };
    }
    const item = this.inflight.shift();
    return item ? this.completion(item.task, item.attemptNo, 3, item.stopped) : undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Driving both

interface Run {
  dag: DagSpec;
  choices: number[];
  outputsContainer: boolean;
}

const runArb = (maxChoices: number): fc.Arbitrary<Run> =>
  fc.record({
    dag: dagArb,
    choices: fc.array(fc.nat({ max: 1_000_000 }), { maxLength: maxChoices, size: 'max' }),
    outputsContainer: fc.boolean(),
  });

interface DriveOptions {
  /** Largest batch folded at once (1: every event through `reduce`). */
  maxBatch: number;
  /** Now and then replace the live runtime by an equal one built another way. */
  rebuild: boolean;
}

function drive(run: Run, options: DriveOptions): void {
  const def = definitionOf(run.dag);
  let cursor = 0;
  const take = (): number | undefined => run.choices[cursor++];
  const world = new World(def, take);
  const init = { workflowId: WORKFLOW_ID, now: new Date(T0).toISOString(), outputsContainer: run.outputsContainer ? CONTAINER : null };
  let live = createRuntime(def, init);
  let ref = referenceCreate(def, init);
  expect(plain(live)).toEqual(ref);
  const log: string[] = [];
  /** Earlier (live, reference) pairs: events applied to them again must still agree (persistence). */
  const history: Array<[WorkflowRuntime, ReferenceRuntime]> = [];

  const step = (events: WorkflowEvent[], single: boolean): void => {
    const refBefore = ref;
    const liveBefore = live;
    const snapshot = plain(liveBefore);
    const refResult = referenceFold(ref, events);
    const liveResult =
      single && events.length === 1
        ? (({ runtime, effects, changed }) => ({ runtime, effects: [effects], changed }))(reduce(live, events[0]!))
        : foldEvents(live, events);
    log.push(
      `${events.map((e) => (e.type === 'completion' ? `${e.type}(${e.taskName}#${e.attemptNo} ${e.success ? 'ok' : 'fail'})` : e.type)).join(' + ')} -> ${refResult.runtime.status}`,
    );
    const context = log.slice(-6).join('\n');
    expect({ context, effects: liveResult.effects }).toEqual({ context, effects: refResult.effects });
    expect({ context, runtime: plain(liveResult.runtime) }).toEqual({ context, runtime: refResult.runtime });
    expect({ context, same: liveResult.runtime === liveBefore }).toEqual({ context, same: refResult.runtime === refBefore });
    const changed = referenceChanged(refBefore, refResult.runtime);
    expect({ context, changed: changedTasks(liveBefore, liveResult.runtime) }).toEqual({ context, changed });
    expect({ context, changed: liveResult.changed.map((p) => def.tasks[p]!.name) }).toEqual({ context, changed });
    // The derived data (counts per chunk, parent counters, the ready hint) is what the states say.
    expect({ context, problems: checkCore(coreOf(liveResult.runtime)) }).toEqual({ context, problems: [] });
    // The runtime the events were applied to is untouched, derived data included.
    expect(plain(liveBefore)).toEqual(snapshot);
    expect(checkCore(coreOf(liveBefore))).toEqual([]);
    history.push([liveBefore, refBefore]);
    live = liveResult.runtime;
    ref = refResult.runtime;
    if (options.rebuild && liveResult.changed.length > 0 && (take() ?? 0) % 4 === 0) {
      // Replay the step as a log would: the changed records and the workflow fields onto the old runtime.
      const states = tasksInOrder(live);
      const replayed = withTaskStates(
        liveBefore,
        liveResult.changed.map((p) => [def.tasks[p]!.name, states[p]!] as const),
        fieldsOf(live),
      );
      expect(plain(replayed)).toEqual(plain(live));
      expect(checkCore(coreOf(replayed))).toEqual([]);
      live = replayed;
    }
  };

  const maybeRebuild = (r: number): void => {
    if (!options.rebuild) return;
    if (r % 53 === 0) {
      // Both through the codec: decoding reads a state with `started_at` but no `dispatched_at` (a
      // completion for an attempt whose dispatch was never recorded) as the old layout and moves it.
      live = decodedRuntime(encodeRuntime(live));
      ref = plain(decodedRuntime(encodeRuntime(ref)));
      expect(plain(live)).toEqual(ref);
    } else if (r % 53 === 1) live = { ...live };
    else if (r % 53 === 3) live = withTaskStates(createRuntime(def, init), tasksIn(live), fieldsOf(live));
    else if (r % 53 === 2 && history.length > 0) {
      // An older runtime takes another event: it must behave as it did, whatever came after it.
      const [oldLive, oldRef] = history[r % history.length]!;
      const event: WorkflowEvent = r % 2 === 0 ? { type: 'activate', now: world.now() } : world.completion(world.taskName(r), null, r);
      const a = reduce(oldLive, event);
      const b = referenceReduce(oldRef, event);
      expect(a.effects).toEqual(b.effects);
      expect(plain(a.runtime)).toEqual(b.runtime);
      expect(checkCore(coreOf(a.runtime))).toEqual([]);
    }
  };

  while (cursor < run.choices.length) {
    const size = 1 + ((take() ?? 0) % options.maxBatch);
    const events: WorkflowEvent[] = [];
    let probe = ref;
    for (let i = 0; i < size; i++) {
      const event = world.next(probe);
      if (!event) break;
      events.push(event);
      const r = referenceReduce(probe, event);
      world.absorb(r.effects, event.type === 'cancel' && r.runtime.cancelRequested && !probe.cancelRequested);
      probe = r.runtime;
    }
    if (events.length === 0) break;
    step(events, size === 1);
    maybeRebuild(take() ?? 1);
  }
  // Let everything in flight finish.
  for (let guard = 0; guard < 300; guard++) {
    const event = world.drain();
    if (!event) break;
    const r = referenceReduce(ref, event);
    world.absorb(r.effects, false);
    step([event], true);
  }
  // The lazily built view says what the accessors say.
  expect(live.tasks).toEqual(ref.tasks);
}

/** `JOBQ_EQUIVALENCE_SCALE=20 npx jest src/runtime/equivalence.test.ts` for a long run. */
const SCALE = Number(process.env.JOBQ_EQUIVALENCE_SCALE ?? '1') || 1;

describe('the live reducer equals the reference model', () => {
  it('one event at a time through reduce', () => {
    fc.assert(
      fc.property(runArb(160), (run) => drive(run, { maxBatch: 1, rebuild: false })),
      { numRuns: 250 * SCALE },
    );
  });

  it('batches through foldEvents', () => {
    fc.assert(
      fc.property(runArb(160), (run) => drive(run, { maxBatch: 5, rebuild: false })),
      { numRuns: 200 * SCALE },
    );
  });

  it('with runtimes rebuilt by the codec, spread copies and older runtimes taking events again', () => {
    fc.assert(
      fc.property(runArb(200), (run) => drive(run, { maxBatch: 3, rebuild: true })),
      { numRuns: 200 * SCALE },
    );
  });
});
