import { boundSkipReason, conditionSkipReason, evaluateCondition } from '../condition';
import type { DepPolicy, TaskDefinition } from '../definition/types';
import { decodeInlineOutput, parseOutputRef } from '../wire/output-ref';
import { C_DEP_BLOCKING, C_DEP_SATISFIED, C_GATE_BLOCKING, C_GATE_SATISFIED } from './core';
import { transition, type Step } from './step';
import { isBlocking, isSatisfying, type TaskStatus } from './types';

export type Verdict = 'ready' | 'blocked' | 'wait';

/**
 * docs/workflow-language.md#dependency-policies: n dependencies, s satisfying, b blocking. The failure test comes first. A task
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
  const shown = first
    .slice(0, 3)
    .map((n) => `"${n}"`)
    .join(', ');
  return total > 3 ? `${shown} and ${total - 3} more` : shown;
}

/** What a task's parents say: satisfying and blocking dependencies, and whether its gates hold it. */
interface Parents {
  satisfied: number;
  blocking: number;
  /** A gate that is blocking: the task becomes upstream_failed naming it. */
  blockingGate: number;
  /** Some gate is not yet satisfying. */
  waitingForGate: boolean;
}

/**
 * Re-evaluates one `pending` task whose parents changed: gates, then its policy, then its
 * condition. Anything else is left alone (once a task leaves `pending`, later parent results do
 * not change it). A hub (a task with many parents) reads the counts of its parents that satisfy
 * and block it from the counters the draft keeps along each edge, so this costs O(1) whatever the
 * fan-in; a task with few parents reads them. Only a task that becomes upstream_failed looks for
 * the first blocking parents, to name them.
 */
export function settle(step: Step, position: number): void {
  const d = step.d;
  const task = d.task(position);
  if (task.status !== 'pending' || task.awaitingInputs) return;
  const def = step.index.tasks[position]!;
  const parents = step.index.hubSlot[position]! >= 0 ? fromCounters(step, position) : readParents(step, position);

  if (parents.blockingGate >= 0) {
    const gate = step.index.gateParent[step.index.gateStart[position]! + parents.blockingGate]!;
    transition(step, position, {
      status: 'upstream_failed',
      error: `gate "${def.gates![parents.blockingGate]}" is ${d.task(gate).status}`,
    });
    return;
  }
  const verdict = policyVerdict(def.depPolicy, def.dependsOn.length, parents.satisfied, parents.blocking);
  if (verdict === 'blocked') {
    transition(step, position, {
      status: 'upstream_failed',
      error: `upstream failed: ${describeBlockers(firstBlockers(step, position, 3), parents.blocking)}`,
    });
    return;
  }
  if (verdict === 'wait' || parents.waitingForGate) return;

  if (step.index.merge[position] === 1) {
    // Merge nodes only join batches: they complete where they become ready, without running.
    transition(step, position, { status: 'completed', outputRef: null, error: null, dispatchedAt: step.now, startedAt: step.now });
  } else if (def.condition !== null) {
    startCondition(step, position, def);
  } else {
    transition(step, position, { status: 'ready' });
  }
}

/** The status of the parent at `position` (-1: a name the definition does not have, read as pending). */
function parentStatus(step: Step, position: number): TaskStatus {
  return position < 0 ? 'pending' : step.d.task(position).status;
}

/** A hub's parents, from its counters; the gates are read only when one of them is blocking. */
function fromCounters(step: Step, position: number): Parents {
  const d = step.d;
  const { gateStart, gateParent } = step.index;
  const gates = gateStart[position + 1]! - gateStart[position]!;
  let blockingGate = -1;
  if (d.counter(position, C_GATE_BLOCKING) > 0) {
    for (let k = 0; k < gates && blockingGate < 0; k++)
      if (isBlocking(parentStatus(step, gateParent[gateStart[position]! + k]!))) blockingGate = k;
  }
  return {
    satisfied: d.counter(position, C_DEP_SATISFIED),
    blocking: d.counter(position, C_DEP_BLOCKING),
    blockingGate,
    waitingForGate: d.counter(position, C_GATE_SATISFIED) < gates,
  };
}

/** A task's few parents, read one by one. */
function readParents(step: Step, position: number): Parents {
  const { gateStart, gateParent, depStart, depParent } = step.index;
  let blockingGate = -1;
  let waitingForGate = false;
  for (let k = 0, e = gateStart[position]!; e < gateStart[position + 1]!; k++, e++) {
    const status = parentStatus(step, gateParent[e]!);
    if (isBlocking(status)) {
      blockingGate = k;
      break;
    }
    if (!isSatisfying(status)) waitingForGate = true;
  }
  let satisfied = 0;
  let blocking = 0;
  for (let e = depStart[position]!; e < depStart[position + 1]!; e++) {
    const status = parentStatus(step, depParent[e]!);
    if (isSatisfying(status)) satisfied++;
    else if (isBlocking(status)) blocking++;
  }
  return { satisfied, blocking, blockingGate, waitingForGate };
}

/** The names of the first `limit` dependencies of a task that block it, in the order of the definition. */
function firstBlockers(step: Step, position: number, limit: number): string[] {
  const { depStart, depParent } = step.index;
  const names = step.index.tasks[position]!.dependsOn;
  const found: string[] = [];
  for (let k = 0, e = depStart[position]!; e < depStart[position + 1]! && found.length < limit; k++, e++) {
    if (isBlocking(parentStatus(step, depParent[e]!))) found.push(names[k]!);
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
 * True → ready; false or unknown → skipped (`condition false: …` naming what decided it); an
 * error → skipped with the error (docs/conditions.md).
 */
export function finishCondition(step: Step, position: number, fetched: Readonly<Record<string, unknown>>): void {
  const def = step.index.tasks[position]!;
  const compiled = step.index.condition(def);
  if (!compiled.ok) {
    transition(step, position, { status: 'skipped', error: compiled.error, awaitingInputs: false });
    return;
  }
  const inputs: Record<string, unknown> = {};
  const parentStatus: Record<string, string> = {};
  for (const parent of compiled.value.references) {
    const at = step.d.positionOf(parent);
    if (at !== undefined) parentStatus[parent] = step.d.task(at).status;
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
      transition(step, position, { status: 'skipped', error: boundSkipReason(`the output of "${parent}" is not JSON: ${decoded.error}`) });
      return;
    }
    inputs[parent] = decoded.value;
  }
  const reason = conditionSkipReason(evaluateCondition(compiled.value, inputs, { parentStatus }));
  if (reason === null) transition(step, position, { status: 'ready', awaitingInputs: false });
  else transition(step, position, { status: 'skipped', error: reason });
}

/** Re-evaluates every task on the worklist until nothing more moves. */
export function drain(step: Step): void {
  // Index-based, so the list can grow while it is walked without quadratic shifting.
  for (let i = 0; i < step.worklist.length; i++) settle(step, step.worklist[i]!);
  step.worklist.length = 0;
}
