import { evaluateCondition } from '../condition';
import type { DepPolicy, TaskDefinition } from '../definition/types';
import { decodeInlineOutput, parseOutputRef } from '../wire/output-ref';
import { C_DEP_BLOCKING, C_DEP_SATISFIED, C_GATE_BLOCKING, C_GATE_SATISFIED } from './core';
import { transition, type Step } from './step';
import { isBlocking } from './types';

type Verdict = 'ready' | 'blocked' | 'wait';

/**
 * SPEC §3.2: n dependencies, s satisfying, b blocking. The failure test comes first. A task
 * without dependencies has nothing to wait for.
 */
export function policyVerdict(policy: DepPolicy, n: number, s: number, b: number): Verdict {
  if (n === 0) return 'ready';
  switch (policy) {
    case 'all':
      return b > 0 ? 'blocked' : s === n ? 'ready' : 'wait';
    case 'any':
      return b === n ? 'blocked' : s >= 1 ? 'ready' : 'wait';
    case 'all_settled':
      return s + b < n ? 'wait' : s === 0 ? 'blocked' : 'ready';
    default:
      return n - b < policy ? 'blocked' : s >= policy ? 'ready' : 'wait';
  }
}

/** `"a", "b", "c" and 4 more`: the first blockers by name, and how many there are in all. */
function describeBlockers(first: readonly string[], total: number): string {
  const shown = first.slice(0, 3).map((n) => `"${n}"`).join(', ');
  return total > 3 ? `${shown} and ${total - 3} more` : shown;
}

/**
 * Re-evaluates one `pending` task whose parents changed: gates, then its policy, then its
 * condition. Anything else is left alone (once a task leaves `pending`, later parent results do
 * not change it). The parent counts come from the counters the draft keeps along each edge, so this
 * costs O(1) whatever the fan-in; only a task that becomes upstream_failed reads its parents, to
 * name the first blocking ones.
 */
export function settle(step: Step, position: number): void {
  const d = step.d;
  const task = d.task(position);
  if (task.status !== 'pending' || task.awaitingInputs) return;
  const def = step.index.tasks[position]!;

  const gates = def.gates ?? [];
  if (gates.length > 0 && d.counter(position, C_GATE_BLOCKING) > 0) {
    // The first blocking gate, in the order of the definition.
    for (const gate of gates) {
      const at = d.positionOf(gate);
      const status = at === undefined ? 'pending' : d.task(at).status;
      if (isBlocking(status)) {
        transition(step, position, { status: 'upstream_failed', error: `gate "${gate}" is ${status}` });
        return;
      }
    }
  }
  const waitingForGate = d.counter(position, C_GATE_SATISFIED) < gates.length;

  const blocking = d.counter(position, C_DEP_BLOCKING);
  const verdict = policyVerdict(def.depPolicy, def.dependsOn.length, d.counter(position, C_DEP_SATISFIED), blocking);
  if (verdict === 'blocked') {
    transition(step, position, { status: 'upstream_failed', error: `upstream failed: ${describeBlockers(firstBlockers(step, def, 3), blocking)}` });
    return;
  }
  if (verdict === 'wait' || waitingForGate) return;

  if (step.index.merge[position] === 1) {
    // Merge nodes only join batches: they complete where they become ready, without running.
    transition(step, position, { status: 'completed', outputRef: null, error: null, dispatchedAt: step.now, startedAt: step.now });
  } else if (def.condition !== null) {
    startCondition(step, position, def);
  } else {
    transition(step, position, { status: 'ready' });
  }
}

/** The first `limit` dependencies of `def` that block it, in the order of the definition. */
function firstBlockers(step: Step, def: TaskDefinition, limit: number): string[] {
  const found: string[] = [];
  for (const parent of def.dependsOn) {
    const at = step.d.positionOf(parent);
    if (at !== undefined && isBlocking(step.d.task(at).status)) found.push(parent);
    if (found.length === limit) break;
  }
  return found;
}

/** Parent → output ref of the blob outputs a condition reads; or why an output cannot be read. */
function blobInputs(step: Step, def: TaskDefinition, references: readonly string[]): { refs: Record<string, string> } | { error: string } {
  const refs: Record<string, string> = {};
  for (const parent of references) {
    const ref = outputOf(step, parent);
    if (ref === null) continue;
    const parsed = parseOutputRef(ref);
    if (parsed.kind === 'blob') refs[parent] = ref;
    else if (parsed.kind === 'unknown') return { error: `the output of "${parent}" is not inline JSON or a blob ref` };
  }
  return { refs };
}

/** A parent's output ref when it completed; parents without output or not finished read as null. */
function outputOf(step: Step, parent: string): string | null {
  const at = step.d.positionOf(parent);
  if (at === undefined) return null;
  const task = step.d.task(at);
  return task.status === 'completed' ? task.outputRef : null;
}

/** Starts evaluating a task's condition: at once when every input is inline, else after a fetch. */
function startCondition(step: Step, position: number, def: TaskDefinition): void {
  const compiled = step.index.condition(def);
  if (!compiled.ok) {
    transition(step, position, { status: 'skipped', error: compiled.error });
    return;
  }
  const needed = blobInputs(step, def, compiled.value.references);
  if ('error' in needed) {
    transition(step, position, { status: 'skipped', error: needed.error });
    return;
  }
  if (Object.keys(needed.refs).length > 0) {
    step.d.updateTask(position, { awaitingInputs: true });
    step.effects.push({ type: 'fetch-condition-inputs', taskName: def.name, refs: needed.refs });
    return;
  }
  finishCondition(step, position, {});
}

/** The refs a task waiting for inputs asked for, to ask again after a restart. */
export function pendingFetch(step: Step, def: TaskDefinition): Record<string, string> | null {
  const compiled = step.index.condition(def);
  if (!compiled.ok) return null;
  const needed = blobInputs(step, def, compiled.value.references);
  return 'refs' in needed && Object.keys(needed.refs).length > 0 ? needed.refs : null;
}

/**
 * Evaluates a condition with `fetched` (parent → decoded blob output) and the inline outputs.
 * True → ready; false → skipped (`condition false`); an error → skipped with the error.
 */
export function finishCondition(step: Step, position: number, fetched: Readonly<Record<string, unknown>>): void {
  const def = step.index.tasks[position]!;
  const compiled = step.index.condition(def);
  if (!compiled.ok) {
    transition(step, position, { status: 'skipped', error: compiled.error, awaitingInputs: false });
    return;
  }
  const inputs: Record<string, unknown> = {};
  for (const parent of compiled.value.references) {
    if (Object.prototype.hasOwnProperty.call(fetched, parent)) {
      inputs[parent] = fetched[parent];
      continue;
    }
    const ref = outputOf(step, parent);
    if (ref === null) {
      inputs[parent] = null;
      continue;
    }
    const parsed = parseOutputRef(ref);
    if (parsed.kind === 'blob') {
      transition(step, position, { status: 'skipped', error: `the output of "${parent}" was not fetched` });
      return;
    }
    const decoded = decodeInlineOutput(ref);
    if (!decoded.ok) {
      transition(step, position, { status: 'skipped', error: `the output of "${parent}" is not JSON: ${decoded.error}` });
      return;
    }
    inputs[parent] = decoded.value;
  }
  const result = evaluateCondition(compiled.value, inputs);
  if (!result.ok) transition(step, position, { status: 'skipped', error: `condition error: ${result.error}` });
  else if (result.value) transition(step, position, { status: 'ready', awaitingInputs: false });
  else transition(step, position, { status: 'skipped', error: 'condition false' });
}

/** Re-evaluates every task on the worklist until nothing more moves. */
export function drain(step: Step): void {
  // Index-based, so the list can grow while it is walked without quadratic shifting.
  for (let i = 0; i < step.worklist.length; i++) settle(step, step.worklist[i]!);
  step.worklist.length = 0;
}
