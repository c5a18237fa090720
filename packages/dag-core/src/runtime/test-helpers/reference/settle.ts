import { boundSkipReason, conditionSkipReason, evaluateCondition } from '../../../condition';
import type { DepPolicy, TaskDefinition } from '../../../definition/types';
import { decodeInlineOutput, parseOutputRef } from '../../../wire/output-ref';
import { transition, type Step } from './step';
import { isBlocking, isSatisfying } from './types';

type Verdict = 'ready' | 'blocked' | 'wait';

/**
 * The dependency policy: n dependencies, s satisfying, b blocking. The failure test comes first. A task
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

function describeBlockers(names: readonly string[]): string {
  const shown = names
    .slice(0, 3)
    .map((n) => `"${n}"`)
    .join(', ');
  return names.length > 3 ? `${shown} and ${names.length - 3} more` : shown;
}

/**
 * Re-evaluates one `pending` task whose parents changed: gates, then its policy, then its
 * condition. Anything else is left alone (once a task leaves `pending`, later parent results do
 * not change it).
 */
export function settle(step: Step, name: string): void {
  const task = step.d.task(name);
  if (!task || task.status !== 'pending' || task.awaitingInputs) return;
  const position = step.index.position.get(name);
  const def = position === undefined ? undefined : step.index.tasks[position];
  if (!def) return;

  let waitingForGate = false;
  for (const gate of def.gates ?? []) {
    const status = step.d.task(gate)?.status ?? 'pending';
    if (isBlocking(status)) {
      transition(step, name, { status: 'upstream_failed', error: `gate "${gate}" is ${status}` });
      return;
    }
    if (!isSatisfying(status)) waitingForGate = true;
  }

  let s = 0;
  const blockers: string[] = [];
  for (const parent of def.dependsOn) {
    const status = step.d.task(parent)?.status ?? 'pending';
    if (isSatisfying(status)) s++;
    else if (isBlocking(status)) blockers.push(parent);
  }
  const verdict = policyVerdict(def.depPolicy, def.dependsOn.length, s, blockers.length);
  if (verdict === 'blocked') {
    transition(step, name, { status: 'upstream_failed', error: `upstream failed: ${describeBlockers(blockers)}` });
    return;
  }
  if (verdict === 'wait' || waitingForGate) return;

  if (step.index.merge.has(name)) {
    // Merge nodes only join batches: they complete where they become ready, without running.
    transition(step, name, { status: 'completed', outputRef: null, error: null, dispatchedAt: step.now, startedAt: step.now });
  } else if (def.condition !== null) {
    startCondition(step, def);
  } else {
    transition(step, name, { status: 'ready' });
  }
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
  const task = step.d.task(parent);
  return task?.status === 'completed' ? task.outputRef : null;
}

/** Starts evaluating a task's condition: at once when every input is inline, else after a fetch. */
function startCondition(step: Step, def: TaskDefinition): void {
  const compiled = step.index.condition(def);
  if (!compiled.ok) {
    transition(step, def.name, { status: 'skipped', error: compiled.error });
    return;
  }
  const needed = blobInputs(step, def, compiled.value.references);
  if ('error' in needed) {
    transition(step, def.name, { status: 'skipped', error: needed.error });
    return;
  }
  if (Object.keys(needed.refs).length > 0) {
    step.d.updateTask(def.name, { awaitingInputs: true });
    step.effects.push({ type: 'fetch-condition-inputs', taskName: def.name, refs: needed.refs });
    return;
  }
  finishCondition(step, def, {});
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
 * True → ready; false or unknown → skipped (`condition false: …`); an error → skipped with the error.
 */
export function finishCondition(step: Step, def: TaskDefinition, fetched: Readonly<Record<string, unknown>>): void {
  const compiled = step.index.condition(def);
  if (!compiled.ok) {
    transition(step, def.name, { status: 'skipped', error: compiled.error, awaitingInputs: false });
    return;
  }
  const inputs: Record<string, unknown> = {};
  const parentStatus: Record<string, string> = {};
  for (const parent of compiled.value.references) {
    const task = step.d.task(parent);
    if (task !== undefined) parentStatus[parent] = task.status;
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
      transition(step, def.name, { status: 'skipped', error: `the output of "${parent}" was not fetched` });
      return;
    }
    const decoded = decodeInlineOutput(ref);
    if (!decoded.ok) {
      transition(step, def.name, { status: 'skipped', error: boundSkipReason(`the output of "${parent}" is not JSON: ${decoded.error}`) });
      return;
    }
    inputs[parent] = decoded.value;
  }
  const reason = conditionSkipReason(evaluateCondition(compiled.value, inputs, { parentStatus }));
  if (reason === null) transition(step, def.name, { status: 'ready', awaitingInputs: false });
  else transition(step, def.name, { status: 'skipped', error: reason });
}

/** Re-evaluates every task on the worklist until nothing more moves. */
export function drain(step: Step): void {
  // Index-based, so the list can grow while it is walked without quadratic shifting.
  for (let i = 0; i < step.worklist.length; i++) settle(step, step.worklist[i]!);
  step.worklist.length = 0;
}
