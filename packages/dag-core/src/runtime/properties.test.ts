// Property-based tests of the runtime reducer (docs/design.md#how-a-workflow-moves): random valid DAGs, random outcomes per
// (task, attempt), and a simulator that delivers the completions of dispatched attempts in an order
// chosen by fast-check, with duplicates, stale and attempt-less completions, lost-flush completions,
// repeated activations, timeout sweeps, cancels and retries mixed in.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { validateWorkflow } from '../definition/validate';
import { canonicalOutputAttempt, encodeTaskMessage, taskMessageId, type CompactUpstreamRefs } from '../wire/index';
import type { WorkflowDefinition } from '../definition/types';
import {
  TASK_STATUSES,
  createRuntime,
  encodeRuntime,
  foldEvents,
  isBlocking,
  isTerminalTaskStatus,
  isTerminalWorkflowStatus,
  reduce,
  type CompletionEvent,
  type Effect,
  type ReduceResult,
  type TaskCounts,
  type TaskRuntime,
  type TaskStatus,
  type WorkflowEvent,
  type WorkflowRuntime,
  type WorkflowStatus,
} from '../index';
import { decodedRuntime } from './test-helpers/build';

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const WORKFLOW_ID = 'wf1';
const CONTAINER = 'p-outputs';
const T0 = Date.UTC(2026, 0, 1);
const MAX_TASKS = 10;
/** Outcome slots per task: attempts beyond the last slot reuse it. */
const SLOTS = 4;
/** How much more often the simulator delivers than it does any one other thing. */
const DELIVER_WEIGHT = 6;

/** Second `i` after 2026-01-01T00:00:00Z. */
function at(i: number): string {
  return new Date(T0 + i * 1000).toISOString();
}

type Policy = 'all' | 'any' | 'all_settled' | number;
type OutputKind = 'none' | 'ok' | 'not-ok' | 'n2';
type ConditionKind = 'ok' | 'not-ok' | 'eq-true' | 'n-gt-1' | 'or';

interface ConditionSpec {
  kind: ConditionKind;
  refs: [string, string];
}

interface TaskSpec {
  name: string;
  deps: string[];
  policy: Policy;
  retries: number;
  condition: ConditionSpec | null;
  timeout: number | null;
  /** Reading this task's blob condition inputs fails. */
  fetchFails: boolean;
}

interface DagSpec {
  tasks: TaskSpec[];
  maxParallelism: number | null;
  resultPolicy: 'all_sinks_succeed' | 'all_tasks_succeed';
}

interface Outcome {
  success: boolean;
  output: OutputKind;
  /** The output travels as a blob ref (fetched for conditions) rather than inline JSON. */
  blob: boolean;
}

/**
 * `none`: no conditions; `order-safe`: conditions only on `all`/`all_settled` tasks (which see
 * every parent finished, so the result cannot depend on delivery order); `any`: anywhere.
 */
type ConditionMode = 'none' | 'order-safe' | 'any';

interface DagOptions {
  conditions: ConditionMode;
  timeouts: boolean;
}

const OUTPUT_JSON: Record<Exclude<OutputKind, 'none'>, unknown> = {
  ok: { ok: true },
  'not-ok': { ok: false },
  n2: { ok: true, n: 2 },
};

function conditionText(c: ConditionSpec): string {
  const [a, b] = c.refs;
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
  }
}

const rawTaskArb = (opts: DagOptions) =>
  fc.record({
    depMask: fc.nat({ max: (1 << MAX_TASKS) - 1 }),
    policyPick: fc.nat({ max: 3 }),
    nPick: fc.nat({ max: 3 }),
    retries: fc.nat({ max: 2 }),
    condition:
      opts.conditions === 'none'
        ? fc.constant(null)
        : fc.option(
            fc.record({
              kind: fc.constantFrom<ConditionKind>('ok', 'not-ok', 'eq-true', 'n-gt-1', 'or'),
              a: fc.nat({ max: 3 }),
              b: fc.nat({ max: 3 }),
            }),
            { nil: null, freq: 2 },
          ),
    timeout: opts.timeouts ? fc.option(fc.integer({ min: 1, max: 4 }), { nil: null, freq: 2 }) : fc.constant(null),
    fetchFails: fc.nat({ max: 5 }).map((x) => x === 5),
  });

/** Random valid DAGs: task `ti` depends on up to four of `t0..t(i-1)`. */
function dagArb(opts: DagOptions): fc.Arbitrary<DagSpec> {
  return fc
    .record({
      raw: fc.array(rawTaskArb(opts), { minLength: 1, maxLength: MAX_TASKS, size: 'max' }),
      maxParallelism: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      resultPolicy: fc.constantFrom<DagSpec['resultPolicy']>('all_sinks_succeed', 'all_tasks_succeed'),
    })
    .map(({ raw, maxParallelism, resultPolicy }) => ({
      maxParallelism,
      resultPolicy,
      tasks: raw.map((r, i): TaskSpec => {
        const deps: string[] = [];
        for (let j = i - 1; j >= 0 && deps.length < 4; j--) if (r.depMask & (1 << j)) deps.push(`t${j}`);
        deps.reverse();
        const n = deps.length;
        const policy: Policy = n === 0 ? 'all' : (['all', 'any', 'all_settled', 1 + (r.nPick % n)] as const)[r.policyPick]!;
        const orderSafe = policy === 'all' || policy === 'all_settled';
        const condition: ConditionSpec | null =
          r.condition !== null && n > 0 && (opts.conditions === 'any' || orderSafe)
            ? { kind: r.condition.kind, refs: [deps[r.condition.a % n]!, deps[r.condition.b % n]!] }
            : null;
        return { name: `t${i}`, deps, policy, retries: r.retries, condition, timeout: r.timeout, fetchFails: r.fetchFails };
      }),
    }));
}

/** The snake_case workflow file of a spec. */
function rawDefinition(dag: DagSpec): Record<string, unknown> {
  return {
    name: 'properties',
    max_parallelism: dag.maxParallelism,
    result_policy: dag.resultPolicy,
    tasks: dag.tasks.map((t) => ({
      name: t.name,
      kwargs: { cmd: `echo ${t.name}` },
      depends_on: t.deps,
      dep_policy: t.policy,
      condition: t.condition === null ? null : conditionText(t.condition),
      num_retries: t.retries,
      timeout_s: t.timeout,
    })),
  };
}

const definitions = new WeakMap<DagSpec, WorkflowDefinition>();

function definitionOf(dag: DagSpec): WorkflowDefinition {
  let def = definitions.get(dag);
  if (!def) {
    const result = validateWorkflow(rawDefinition(dag));
    if (!result.ok) throw new Error(`generator made an invalid workflow: ${JSON.stringify(result.issues)}`);
    def = result.value;
    definitions.set(dag, def);
  }
  return def;
}

const outcomeArb: fc.Arbitrary<Outcome> = fc.record({
  // Mostly successes; shrinks towards success.
  success: fc.nat({ max: 3 }).map((x) => x < 3),
  output: fc.constantFrom<OutputKind>('ok', 'not-ok', 'none', 'n2'),
  blob: fc.nat({ max: 2 }).map((x) => x === 2),
});

/** Outcome of every (task, attempt): `SLOTS` per task. */
const outcomesArb = fc.array(outcomeArb, { minLength: MAX_TASKS * SLOTS, maxLength: MAX_TASKS * SLOTS });

function outcomeOf(outcomes: readonly Outcome[], taskIndex: number, attemptNo: number): Outcome {
  const slot = Math.min(Math.max(attemptNo, 1), SLOTS) - 1;
  return outcomes[taskIndex * SLOTS + slot] ?? { success: true, output: 'ok', blob: false };
}

// ---------------------------------------------------------------------------------------------
// Simulator
// ---------------------------------------------------------------------------------------------

/** Things the simulator may do besides delivering an in-flight completion or fetch. */
type Extra = 'duplicate' | 'null-attempt' | 'lost-flush' | 'activate' | 'sweep' | 'cancel' | 'retry';

interface Run {
  dag: DagSpec;
  outcomes: Outcome[];
  /** Each choice picks an action and an argument (which in-flight item, which task, ...). */
  choices: number[];
  activateFirst: boolean;
  outputsContainer: boolean;
}

function runArb(opts: DagOptions, maxChoices = 60): fc.Arbitrary<Run> {
  return fc.record({
    dag: dagArb(opts),
    outcomes: outcomesArb,
    choices: fc.array(fc.nat({ max: 10_000 }), { maxLength: maxChoices, size: 'max' }),
    activateFirst: fc.nat({ max: 5 }).map((x) => x !== 5),
    outputsContainer: fc.boolean(),
  });
}

interface Step {
  before: WorkflowRuntime;
  event: WorkflowEvent;
  result: ReduceResult;
}

interface SimOptions {
  extras: readonly Extra[];
  /** Deep-freeze runtime and event before each call and compare snapshots after (property d). */
  freeze?: boolean;
  /** Called after every reduce with the step (for probes that need the live runtime). */
  onStep?: (step: Step) => void;
}

interface Trace {
  initial: WorkflowRuntime;
  steps: Step[];
  final: WorkflowRuntime;
  /** True when every dispatched attempt and every fetch was answered before the step budget ran out. */
  drained: boolean;
}

/** A completion still to deliver (`stopped`: its worker saw a cancel and stopped it), or a fetch to answer. */
type Pending =
  | { kind: 'completion'; task: string; attemptNo: number; stopped?: boolean }
  | { kind: 'fetch'; task: string; refs: Record<string, string> };

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A blob ref unique to (task, attempt, output). */
function blobRef(taskIndex: number, attemptNo: number, output: OutputKind): string {
  const md5 = `${'A'.repeat(18)}${B64[taskIndex % 64]}${B64[Math.min(attemptNo, 63)]}${B64[['none', 'ok', 'not-ok', 'n2'].indexOf(output)]}A==`;
  return `blob:${CONTAINER}/outputs/${WORKFLOW_ID}/t${taskIndex}/${attemptNo}.json:${md5}`;
}

function deepFreeze(value: unknown, seen = new WeakSet<object>()): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key], seen);
}

function simulate(run: Run, options: SimOptions): Trace {
  const { dag, outcomes } = run;
  const def = definitionOf(dag);
  const taskIndex = new Map(dag.tasks.map((t, i) => [t.name, i]));
  const fetchFails = new Set(dag.tasks.filter((t) => t.fetchFails).map((t) => t.name));
  let clock = 0;
  const initial = createRuntime(def, {
    workflowId: WORKFLOW_ID,
    now: at(clock),
    outputsContainer: run.outputsContainer ? CONTAINER : null,
  });
  let rt = initial;
  const steps: Step[] = [];
  const pending: Pending[] = [];
  const delivered: CompletionEvent[] = [];
  const blobs = new Map<string, unknown>();
  const tick = (extra = 0) => at((clock += 1 + extra));

  const send = (event: WorkflowEvent): void => {
    const before = rt;
    let snapshot: { runtime: WorkflowRuntime; event: WorkflowEvent } | undefined;
    if (options.freeze) {
      deepFreeze(before);
      deepFreeze(event);
      snapshot = structuredClone({ runtime: before, event });
    }
    const result = reduce(before, event);
    if (snapshot) expect({ runtime: before, event }).toEqual(snapshot);
    const step = { before, event, result };
    steps.push(step);
    options.onStep?.(step);
    rt = result.runtime;
    for (const effect of result.effects) {
      if (effect.type === 'dispatch') pending.push({ kind: 'completion', task: effect.taskName, attemptNo: effect.attemptNo });
      else if (effect.type === 'fetch-condition-inputs') pending.push({ kind: 'fetch', task: effect.taskName, refs: effect.refs });
    }
  };

  /** The completion a worker sends for an attempt, per the outcome table. */
  const completion = (task: string, attemptNo: number, attemptField: number | null, stopped = false): CompletionEvent => {
    const i = taskIndex.get(task) ?? 0;
    const o = outcomeOf(outcomes, i, attemptNo);
    let outputRef: string | null = null;
    if (o.success && o.output !== 'none') {
      const value = OUTPUT_JSON[o.output];
      if (o.blob) {
        outputRef = blobRef(i, attemptNo, o.output);
        blobs.set(outputRef, value);
      } else {
        outputRef = JSON.stringify(value);
      }
    }
    if (stopped)
      return {
        type: 'completion',
        now: tick(),
        taskName: task,
        attemptNo: attemptField,
        success: false,
        outputRef: null,
        error: 'stopped: workflow cancelled',
        cancelled: true,
      };
    return {
      type: 'completion',
      now: tick(),
      taskName: task,
      attemptNo: attemptField,
      success: o.success,
      outputRef,
      error: o.success ? null : 'exit code 1',
    };
  };

  const deliver = (index: number, nullAttempt = false): void => {
    const [item] = pending.splice(index % pending.length, 1);
    if (!item) return;
    if (item.kind === 'completion') {
      const event = completion(item.task, item.attemptNo, nullAttempt ? null : item.attemptNo, item.stopped === true);
      delivered.push(event);
      send(event);
    } else {
      const inputs: Record<string, unknown> = {};
      const errors: Record<string, string> = {};
      for (const [parent, ref] of Object.entries(item.refs)) {
        if (fetchFails.has(item.task) || !blobs.has(ref)) errors[parent] = 'blob read failed after retries';
        else inputs[parent] = blobs.get(ref);
      }
      send({ type: 'condition-inputs', now: tick(), taskName: item.task, inputs, errors });
    }
  };

  if (run.activateFirst) send({ type: 'activate', now: tick() });
  // Deliveries weigh DELIVER_WEIGHT, each extra action 1.
  const width = DELIVER_WEIGHT + options.extras.length;
  for (const choice of run.choices) {
    const k = choice % width;
    const arg = Math.floor(choice / width);
    const action = k < DELIVER_WEIGHT ? 'deliver' : options.extras[k - DELIVER_WEIGHT]!;
    switch (action) {
      case 'deliver':
        if (pending.length > 0) deliver(arg);
        break;
      case 'null-attempt': {
        const index = pending.findIndex((p, j) => p.kind === 'completion' && j >= arg % Math.max(pending.length, 1));
        if (index >= 0) deliver(index, true);
        break;
      }
      case 'duplicate': {
        const old = delivered[arg % Math.max(delivered.length, 1)];
        if (old) send({ ...old, now: tick() });
        break;
      }
      case 'lost-flush': {
        // The push of the next attempt happened but the runtime that said so was lost.
        const task = dag.tasks[arg % dag.tasks.length]!.name;
        const stored = rt.tasks[task]?.attemptNo ?? 0;
        const attemptNo = stored + 1 + (Math.floor(arg / 16) % 2);
        send(completion(task, attemptNo, attemptNo));
        break;
      }
      case 'activate':
        send({ type: 'activate', now: tick() });
        break;
      case 'sweep':
        send({ type: 'timeout-sweep', now: tick(arg % 4), messageTtlInMs: SWEEP_TTL_MS, graceInMs: SWEEP_GRACE_MS });
        break;
      case 'cancel':
      case 'retry': {
        const now = tick();
        // Now and then a request that is not newer than the one applied before.
        send(arg % 4 === 0 ? { type: action, now, requestedAt: at(clock - 3) } : { type: action, now });
        // Workers that see the cancel stop their tasks: those attempts end as cancel-caused failures,
        // which may arrive after a later retry has lifted the cancel.
        if (action === 'cancel' && rt.cancelRequested) {
          for (const item of pending) if (item.kind === 'completion') item.stopped = true;
        }
        break;
      }
    }
  }
  // Every dispatched attempt eventually completes, every fetch is answered.
  if (!rt.activated) send({ type: 'activate', now: tick() });
  let guard = 0;
  while (pending.length > 0 && guard++ < 400) deliver(0);
  return { initial, steps, final: rt, drained: pending.length === 0 };
}

// ---------------------------------------------------------------------------------------------
// Helpers for the checks
// ---------------------------------------------------------------------------------------------

function tally(rt: WorkflowRuntime): TaskCounts {
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as TaskCounts;
  for (const t of Object.values(rt.tasks)) counts[t.status]++;
  return counts;
}

function dispatches(effects: readonly Effect[]) {
  return effects.flatMap((e) => (e.type === 'dispatch' ? [e] : []));
}

function finishedEffects(trace: Trace) {
  return trace.steps.flatMap((s) => s.result.effects.flatMap((e) => (e.type === 'workflow-finished' ? [e] : [])));
}

function snapshotTasks(rt: WorkflowRuntime): Record<string, [TaskStatus, number]> {
  return Object.fromEntries(Object.entries(rt.tasks).map(([n, t]) => [n, [t.status, t.attemptNo]]));
}

/** The final-status rule (docs/workflow-language.md#workflow-status-and-result_policy), for a workflow whose tasks are all terminal. */
function expectedEndStatus(dag: DagSpec, statuses: Record<string, TaskStatus>): WorkflowStatus {
  const all = Object.values(statuses);
  if (!all.includes('completed')) return 'failed';
  if (dag.resultPolicy === 'all_tasks_succeed') return all.some(isBlocking) ? 'failed' : 'completed';
  const parents = new Set(dag.tasks.flatMap((t) => t.deps));
  const sinks = dag.tasks.filter((t) => !parents.has(t.name));
  return sinks.some((t) => isBlocking(statuses[t.name]!)) ? 'failed' : 'completed';
}

function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** The reference model: final (status, attempt) of every task when all parents are known. */
function referenceModel(
  dag: DagSpec,
  outcomes: readonly Outcome[],
): { tasks: Record<string, [TaskStatus, number]>; status: WorkflowStatus } {
  const tasks: Record<string, [TaskStatus, number]> = {};
  const outputs: Record<string, { value: unknown; blob: boolean } | null> = {};
  dag.tasks.forEach((t, i) => {
    const parents = t.deps.map((d) => tasks[d]![0]);
    const n = parents.length;
    const s = parents.filter((p) => p === 'completed' || p === 'skipped').length;
    const b = n - s;
    let blocked = false;
    if (n > 0) {
      if (t.policy === 'all') blocked = b > 0;
      else if (t.policy === 'any') blocked = b === n;
      else if (t.policy === 'all_settled') blocked = s === 0;
      else blocked = n - b < t.policy;
    }
    outputs[t.name] = null;
    if (blocked) {
      tasks[t.name] = ['upstream_failed', 0];
      return;
    }
    if (t.condition) {
      const refs = t.condition.kind === 'or' ? t.condition.refs : [t.condition.refs[0]];
      const input = (name: string): unknown => (tasks[name]![0] === 'completed' ? (outputs[name]?.value ?? null) : null);
      const needsFetch = refs.some((r) => tasks[r]![0] === 'completed' && outputs[r]?.blob === true);
      let pass: boolean;
      if (needsFetch && t.fetchFails) pass = false;
      else {
        const field = (name: string, key: string): unknown => {
          const v = input(name);
          return typeof v === 'object' && v !== null ? ((v as Record<string, unknown>)[key] ?? null) : null;
        };
        const [a, bRef] = t.condition.refs;
        switch (t.condition.kind) {
          case 'ok':
            pass = truthy(field(a, 'ok'));
            break;
          case 'not-ok':
            pass = !truthy(field(a, 'ok'));
            break;
          case 'eq-true':
            pass = field(a, 'ok') === true;
            break;
          case 'n-gt-1': {
            const v = field(a, 'n');
            pass = typeof v === 'number' && v > 1; // null > 1 is an error: skipped as well
            break;
          }
          case 'or':
            pass = truthy(field(a, 'ok')) || truthy(field(bRef, 'ok'));
            break;
        }
      }
      if (!pass) {
        tasks[t.name] = ['skipped', 0];
        return;
      }
    }
    for (let attempt = 1; ; attempt++) {
      const o = outcomeOf(outcomes, i, attempt);
      if (o.success) {
        tasks[t.name] = ['completed', attempt];
        outputs[t.name] = o.output === 'none' ? null : { value: OUTPUT_JSON[o.output], blob: o.blob };
        return;
      }
      if (attempt > t.retries) {
        tasks[t.name] = ['failed', attempt];
        return;
      }
    }
  });
  const statuses = Object.fromEntries(Object.entries(tasks).map(([n, [s]]) => [n, s]));
  return { tasks, status: expectedEndStatus(dag, statuses) };
}

/** Where a failing property's counterexample shows up readably. */
function describeRun(trace: Trace): string {
  return trace.steps
    .map((s) => {
      const e = s.event;
      const what =
        e.type === 'completion'
          ? `${e.taskName}#${e.attemptNo} ${e.success ? 'ok' : 'fail'} ${e.outputRef ?? ''}`
          : e.type === 'condition-inputs'
            ? `${e.taskName} ${JSON.stringify(e.errors)}`
            : '';
      const eff = s.result.effects.map((x) => (x.type === 'dispatch' ? `dispatch ${x.taskName}#${x.attemptNo}` : x.type)).join(', ');
      return `${e.type} ${what} -> ${s.result.runtime.status} [${eff}]`;
    })
    .join('\n');
}

const ALL_EXTRAS: readonly Extra[] = ['duplicate', 'null-attempt', 'lost-flush', 'activate', 'sweep', 'cancel', 'retry'];
/** The task-message lifetime and grace of the simulated lost-task sweeps (short, so they fire). */
const SWEEP_TTL_MS = 1_000;
const SWEEP_GRACE_MS = 1_000;

const CHAOS: DagOptions = { conditions: 'any', timeouts: true };
const ORDER_SAFE: DagOptions = { conditions: 'order-safe', timeouts: false };

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

describe('reduce: properties (docs/design.md#how-a-workflow-moves)', () => {
  it('(a) applying a completion twice equals applying it once', () => {
    const probeArb = fc.record({
      task: fc.nat({ max: MAX_TASKS - 1 }),
      attempt: fc.nat({ max: 4 }),
      success: fc.boolean(),
      output: fc.constantFrom<OutputKind>('ok', 'none', 'not-ok'),
    });
    fc.assert(
      fc.property(runArb(CHAOS, 40), fc.array(probeArb, { minLength: 1, maxLength: 8 }), (run, probes) => {
        let n = 0;
        const check = (rt: WorkflowRuntime, e: CompletionEvent): void => {
          const first = reduce(rt, e);
          const second = reduce(first.runtime, { ...e, now: at(100_000) });
          const firstIgnored = first.effects.some((x) => x.type === 'ignored');
          const after = first.runtime.tasks[e.taskName];
          // An attempt-less completion means "the current attempt" (docs/design.md#which-completions-apply): after a re-arm
          // it legitimately applies again, to the next attempt. Explicit attempts never do.
          const mustIgnore = firstIgnored || e.attemptNo !== null || (after !== undefined && isTerminalTaskStatus(after.status));
          if (!mustIgnore) return;
          const context = `${JSON.stringify(e)} on ${JSON.stringify(snapshotTasks(rt))}`;
          expect({ context, effects: second.effects }).toEqual({ context, effects: [{ type: 'ignored', reason: expect.any(String) }] });
          expect(second.runtime).toBe(first.runtime);
        };
        simulate(run, {
          extras: ALL_EXTRAS,
          onStep: ({ before, event }) => {
            // The event just delivered, applied once more to the state it was applied to...
            if (event.type === 'completion') check(before, event);
            // ...and a random completion, explicit or attempt-less, on the state reached.
            const p = probes[n++ % probes.length]!;
            const task = run.dag.tasks[p.task % run.dag.tasks.length]!.name;
            const stored = before.tasks[task]?.attemptNo ?? 0;
            const attemptNo = p.attempt === 0 ? null : Math.max(1, stored - 2 + p.attempt);
            check(before, {
              type: 'completion',
              now: at(99_999),
              taskName: task,
              attemptNo,
              success: p.success,
              outputRef: p.success && p.output !== 'none' ? JSON.stringify(OUTPUT_JSON[p.output]) : null,
              error: p.success ? null : 'boom',
            });
          },
        });
      }),
      { numRuns: 150 },
    );
  });

  it('(b) sibling completions in any order give the same task statuses and attempts', () => {
    fc.assert(
      fc.property(
        runArb(ORDER_SAFE),
        fc.array(fc.nat({ max: 10_000 }), { maxLength: 60, size: 'max' }),
        fc.boolean(),
        (run, otherChoices, otherActivateFirst) => {
          const extras: Extra[] = ['duplicate', 'activate'];
          const one = simulate(run, { extras });
          const two = simulate({ ...run, choices: otherChoices, activateFirst: otherActivateFirst }, { extras });
          expect(one.drained && two.drained).toBe(true);
          expect(snapshotTasks(two.final)).toEqual(snapshotTasks(one.final));
          expect(two.final.status).toBe(one.final.status);
        },
      ),
      { numRuns: 250 },
    );
  });

  it('(c) every run whose dispatched tasks all complete terminates, with exactly one workflow-finished', () => {
    fc.assert(
      fc.property(runArb({ conditions: 'any', timeouts: true }), fc.boolean(), (run, withCancel) => {
        const extras: Extra[] = withCancel
          ? ['duplicate', 'null-attempt', 'activate', 'sweep', 'cancel']
          : ['duplicate', 'null-attempt', 'activate', 'sweep'];
        const trace = simulate(run, { extras });
        const final = trace.final;
        const finished = finishedEffects(trace);
        const log = describeRun(trace);
        expect({ log, drained: trace.drained, status: final.status, terminal: isTerminalWorkflowStatus(final.status) }).toEqual({
          log,
          drained: true,
          status: final.status,
          terminal: true,
        });
        expect({ log, finished }).toEqual({ log, finished: [{ type: 'workflow-finished', status: final.status }] });
        // A cancel applied before the end makes it `cancelled`; otherwise the final-status rule decides.
        const cancelledInFlight = trace.steps.some(
          (s) =>
            s.event.type === 'cancel' && !s.result.effects.some((e) => e.type === 'ignored') && !isTerminalWorkflowStatus(s.before.status),
        );
        const statuses = Object.fromEntries(Object.entries(final.tasks).map(([n, t]) => [n, t.status]));
        expect({ log, status: final.status }).toEqual({
          log,
          status: cancelledInFlight ? 'cancelled' : expectedEndStatus(run.dag, statuses),
        });
      }),
      { numRuns: 250 },
    );
  });

  it('(d) reduce never mutates its input (deep-frozen runtime and event)', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        simulate(run, { extras: ALL_EXTRAS, freeze: true });
      }),
      { numRuns: 60 },
    );
  });

  it('(e) no (task, attempt) is dispatched twice and every message id is unique', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        const keys = new Set<string>();
        const ids = new Set<string>();
        for (const { result } of trace.steps) {
          for (const d of dispatches(result.effects)) {
            const key = `${d.taskName}#${d.attemptNo}`;
            expect(keys.has(key)).toBe(false);
            expect(ids.has(d.messageId)).toBe(false);
            keys.add(key);
            ids.add(d.messageId);
            expect(d.messageId).toBe(`${WORKFLOW_ID}/${d.taskName}/${d.attemptNo}`);
            expect(result.runtime.tasks[d.taskName]).toMatchObject({ status: 'running', attemptNo: d.attemptNo });
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('(f) decodedRuntime(encodeRuntime(r)) equals r for every runtime reached', () => {
    fc.assert(
      fc.property(runArb(CHAOS, 30), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        const seen = new Set<WorkflowRuntime>([trace.initial]);
        for (const s of trace.steps) seen.add(s.result.runtime);
        for (const rt of seen) expect(decodedRuntime(encodeRuntime(rt))).toEqual(rt);
      }),
      { numRuns: 50 },
    );
  });

  it('(g) counts always equal the tally of task statuses', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        expect(trace.initial.counts).toEqual(tally(trace.initial));
        for (const s of trace.steps) expect(s.result.runtime.counts).toEqual(tally(s.result.runtime));
      }),
      { numRuns: 200 },
    );
  });

  it('(h) a terminal task becomes non-terminal only through a retry event', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        for (const { before, event, result } of trace.steps) {
          for (const [name, t] of Object.entries(before.tasks)) {
            const next = result.runtime.tasks[name]!;
            if (!isTerminalTaskStatus(t.status) || isTerminalTaskStatus(next.status)) continue;
            expect({ name, from: t.status, to: next.status, event: event.type }).toEqual({
              name,
              from: t.status,
              to: next.status,
              event: 'retry',
            });
            // Only failed, upstream_failed and cancelled tasks are retried (docs/design.md#cancel-and-retry-requests).
            expect(['failed', 'upstream_failed', 'cancelled']).toContain(t.status);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('(i) max_parallelism is never exceeded', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const limit = run.dag.maxParallelism;
        const trace = simulate(run, { extras: ALL_EXTRAS });
        if (limit === null) return;
        for (const s of trace.steps) expect(tally(s.result.runtime).running).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 200 },
    );
  });

  it('(j) final statuses and attempts match a sequential reference model of docs/workflow-language.md#dependency-policies, docs/design.md#which-completions-apply, docs/workflow-language.md#workflow-status-and-result_policy', () => {
    fc.assert(
      fc.property(runArb(ORDER_SAFE), (run) => {
        const trace = simulate(run, { extras: ['duplicate', 'activate'] });
        const model = referenceModel(run.dag, run.outcomes);
        expect({ tasks: snapshotTasks(trace.final), status: trace.final.status }).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });

  it('(k) a retry newer than the applied cancel lifts the cancel (docs/design.md#cancel-and-retry-requests)', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        for (const s of trace.steps) {
          const rt = s.result.runtime;
          const retryWins =
            rt.retryAppliedAt !== null && (rt.cancelAppliedAt === null || Date.parse(rt.retryAppliedAt) > Date.parse(rt.cancelAppliedAt));
          if (!retryWins) continue;
          const log = describeRun(trace);
          expect({ log, cancelRequested: rt.cancelRequested }).toEqual({ log, cancelRequested: false });
        }
      }),
      { numRuns: 100 },
    );
  });

  it('(l) a failed or timed-out attempt is re-armed iff attempt − retry_base ≤ num_retries and no cancel (docs/design.md#which-completions-apply, docs/failure-model.md#timeouts-and-lost-tasks)', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        const specs = new Map(run.dag.tasks.map((t) => [t.name, t]));
        /** What becomes of a task whose attempt `applied` failed. */
        const afterFailure = (
          before: WorkflowRuntime,
          name: string,
          applied: number,
          now: TaskRuntime,
          byCancel = false,
        ): Partial<TaskRuntime> => {
          if (before.cancelRequested) return { status: 'cancelled', attemptNo: applied };
          // A cancel-caused failure once a retry lifted the cancel: re-armed, the attempt given back to the budget.
          if (byCancel)
            return now.status === 'running' ? { status: 'running', attemptNo: applied + 1 } : { status: 'ready', attemptNo: applied };
          if (applied - before.tasks[name]!.retryBase > specs.get(name)!.retries) return { status: 'failed', attemptNo: applied };
          // Re-armed: still ready at that attempt, or already dispatched as the next one.
          return now.status === 'running' ? { status: 'running', attemptNo: applied + 1 } : { status: 'ready', attemptNo: applied };
        };
        for (const { before, event, result } of trace.steps) {
          const ignored = result.effects.some((e) => e.type === 'ignored');
          if (event.type === 'completion' && !ignored) {
            const was = before.tasks[event.taskName]!;
            const now = result.runtime.tasks[event.taskName]!;
            const applied = event.attemptNo ?? was.attemptNo;
            const context = `${JSON.stringify(event)} on ${JSON.stringify(was)}`;
            const expected = event.success
              ? { status: 'completed', attemptNo: applied, outputRef: event.outputRef, error: null }
              : afterFailure(before, event.taskName, applied, now, event.cancelled === true);
            expect({ context, task: now }).toEqual({ context, task: expect.objectContaining(expected) });
          }
          if (event.type === 'timeout-sweep') {
            // Exactly the attempts running for longer than timeout_s fail; an ignored sweep found none.
            for (const [name, was] of Object.entries(before.tasks)) {
              if (was.status !== 'running') continue;
              const limit = specs.get(name)!.timeout;
              const late =
                limit !== null && Date.parse(event.now) - Date.parse(was.dispatchedAt!) > SWEEP_TTL_MS + limit * 1000 + SWEEP_GRACE_MS;
              const now = result.runtime.tasks[name]!;
              const context = `sweep at ${event.now} of ${name} ${JSON.stringify(was)} (timeout ${limit})`;
              const expected = late
                ? {
                    ...afterFailure(before, name, was.attemptNo, now),
                    error: expect.stringContaining(`timeout_s ${limit}`) as unknown as string,
                  }
                : { status: 'running', attemptNo: was.attemptNo };
              expect({ context, ignored: ignored && late, task: now }).toEqual({
                context,
                ignored: false,
                task: expect.objectContaining(expected),
              });
            }
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('(m) every dispatch round runs each ready task that may run, in definition order (docs/design.md#how-a-workflow-moves)', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        const position = new Map(run.dag.tasks.map((t, i) => [t.name, i]));
        const limit = run.dag.maxParallelism ?? Number.POSITIVE_INFINITY;
        for (const { event, result } of trace.steps) {
          const rt = result.runtime;
          const ready = Object.entries(rt.tasks)
            .filter(([, t]) => t.status === 'ready')
            .map(([n]) => position.get(n)!);
          const running = tally(rt).running;
          const context = `${event.type} -> ${JSON.stringify(snapshotTasks(rt))}`;
          // A ready task stays behind only before activation, or when max_parallelism is reached.
          if (ready.length > 0 && rt.activated) {
            expect({ context, cancelRequested: rt.cancelRequested, full: running >= limit }).toEqual({
              context,
              cancelRequested: false,
              full: true,
            });
          }
          const sent = dispatches(result.effects).map((d) => position.get(d.taskName)!);
          expect(sent).toEqual([...sent].sort((x, y) => x - y));
          if (sent.length > 0 && ready.length > 0) expect(Math.min(...ready)).toBeGreaterThan(Math.max(...sent));
        }
      }),
      { numRuns: 200 },
    );
  });
  it('(n) a task message carries the envelope, attempt and the outputs of finished parents (docs/design.md#task-message)', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        const deps = new Map(run.dag.tasks.map((t) => [t.name, t.deps]));
        for (const { result } of trace.steps) {
          const rt = result.runtime;
          for (const d of dispatches(result.effects)) {
            const message = d.message;
            expect(taskMessageId(message.workflowId, message.taskName, message.attemptNo)).toBe(d.messageId);
            expect(message).toMatchObject({ workflowId: WORKFLOW_ID, taskName: d.taskName, attemptNo: d.attemptNo });
            expect(message.upstreamBlob).toBeUndefined();
            expect(message.kwargs).toEqual({ cmd: `echo ${d.taskName}` });
            // The coordinator encodes it (with `num_retries` 0): it must encode.
            expect(() => encodeTaskMessage(message)).not.toThrow();
            const parents = deps.get(d.taskName)!;
            // Only parents that completed or were skipped appear; failed or unfinished ones do not.
            const expected: CompactUpstreamRefs = {};
            for (const p of parents) {
              const t = rt.tasks[p]!;
              if (t.status === 'skipped' || (t.status === 'completed' && t.outputRef === null)) (expected.n ??= []).push(p);
              else if (t.status !== 'completed') continue;
              else {
                // A canonical blob ref travels as the attempt that wrote it, which need not be the
                // task's latest attempt (a late success of an earlier attempt is kept).
                const attempt = rt.outputsContainer === null ? null : canonicalOutputAttempt(t.outputRef!, WORKFLOW_ID, p, CONTAINER);
                if (attempt !== null) {
                  ((expected.s ??= {}) as Record<string, string[]>)[String(attempt)] ??= [];
                  (expected.s as Record<string, string[]>)[String(attempt)]!.push(p);
                } else (expected.i ??= {})[p] = t.outputRef!;
              }
            }
            expect({ task: d.taskName, upstream: message.upstream ?? null }).toEqual({
              task: d.taskName,
              upstream: parents.length === 0 ? null : expected,
            });
          }
        }
      }),
      { numRuns: 120 },
    );
  });
  it('(o) cancel and retry requests do what docs/design.md#cancel-and-retry-requests says', () => {
    fc.assert(
      fc.property(runArb(CHAOS), (run) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        for (const { before, event, result } of trace.steps) {
          if (event.type !== 'cancel' && event.type !== 'retry') continue;
          const rt = result.runtime;
          const at = event.requestedAt ?? event.now;
          const lastApplied = event.type === 'cancel' ? before.cancelAppliedAt : before.retryAppliedAt;
          const newer = lastApplied === null || Date.parse(at) > Date.parse(lastApplied);
          const context = `${JSON.stringify(event)} on ${before.status} ${JSON.stringify(snapshotTasks(before))}`;
          const kinds = result.effects.map((e) => e.type);
          // A request not newer than the one last applied is ignored; any other is recorded.
          expect({ context, ignored: kinds.includes('ignored') }).toEqual({ context, ignored: !newer });
          if (!newer) continue;
          expect(event.type === 'cancel' ? rt.cancelAppliedAt : rt.retryAppliedAt).toBe(at);
          if (kinds.includes('notice')) {
            // A no-op: no task moves.
            expect({ context, tasks: snapshotTasks(rt) }).toEqual({ context, tasks: snapshotTasks(before) });
            continue;
          }
          for (const [name, was] of Object.entries(before.tasks)) {
            const now = rt.tasks[name]!;
            if (event.type === 'cancel') {
              // Pending and ready tasks are cancelled; running and terminal ones stay as they were.
              const expected = was.status === 'pending' || was.status === 'ready' ? 'cancelled' : was.status;
              expect({ context, name, status: now.status }).toEqual({ context, name, status: expected });
            } else if (was.status === 'failed' || was.status === 'upstream_failed' || was.status === 'cancelled') {
              // Retried with a fresh budget and re-evaluated at once; nothing it waits for is blocking any more.
              expect({ context, name, retryBase: now.retryBase, blocking: isBlocking(now.status) }).toEqual({
                context,
                name,
                retryBase: was.attemptNo,
                blocking: false,
              });
            } else {
              // Completed outputs are kept; running and waiting tasks are left alone.
              if (isTerminalTaskStatus(was.status)) expect({ context, name, task: now }).toEqual({ context, name, task: was });
              expect({ context, name, retryBase: now.retryBase }).toEqual({ context, name, retryBase: was.retryBase });
            }
          }
          if (event.type === 'cancel') {
            expect({ context, dispatched: dispatches(result.effects).length, status: rt.status }).toEqual({
              context,
              dispatched: 0,
              status: rt.counts.running > 0 ? 'cancelling' : 'cancelled',
            });
          } else {
            expect({ context, cancelRequested: rt.cancelRequested }).toEqual({ context, cancelRequested: false });
          }
        }
      }),
      { numRuns: 200 },
    );
  });
  it('(p) foldEvents over any batching of a run equals reduce once per event', () => {
    fc.assert(
      fc.property(runArb(CHAOS), fc.array(fc.nat({ max: 6 }), { maxLength: 30 }), (run, cuts) => {
        const trace = simulate(run, { extras: ALL_EXTRAS });
        let rt = trace.initial;
        let i = 0;
        for (let c = 0; i < trace.steps.length; c++) {
          const batch = trace.steps.slice(i, i + 1 + (cuts[c % Math.max(cuts.length, 1)] ?? 0));
          i += batch.length;
          const events = batch.map((s) => s.event);
          const expectedRuntime = batch[batch.length - 1]!.result.runtime;
          const unchanged = batch.every((s) => s.result.runtime === s.before);
          deepFreeze(rt);
          const folded = foldEvents(rt, events);
          const context = events.map((e) => e.type).join(',');
          expect({ context, effects: folded.effects }).toEqual({ context, effects: batch.map((s) => s.result.effects) });
          expect(folded.runtime).toEqual(expectedRuntime);
          if (unchanged) expect(folded.runtime).toBe(rt);
          rt = expectedRuntime;
        }
      }),
      { numRuns: 120 },
    );
  });
});
