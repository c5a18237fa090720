/**
 * Evaluation of compiled conditions: Python semantics over JSON values, with SQL's
 * three-valued logic where a null meets an ordering or `in` (docs/conditions.md).
 */
import type { Failed, Result } from '../result';
import type { CompiledCondition } from './compile';
import {
  explain,
  joinFacts,
  MAX_FACTS,
  NO_FACTS,
  oneFact,
  UNKNOWN,
  type Fact,
  type Facts,
  type NullOrigin,
  type Operand,
  type Truth,
} from './explain';
import { matchingNames } from './glob';
import type { AggregateNode, CompareNode, CompareOperator, ConditionNode, LogicalNode, ReferenceNode } from './parser';
import { pythonCompare, pythonContains, pythonEquals, PythonNoneOrderingError, PythonTypeError, pythonType, truthy } from './python';
import type { Binding } from './render';
import { errorMessage } from '../error-text';

/**
 * The outcome of {@link evaluateCondition}. `truth` is true, false or `'unknown'`; `value` is
 * whether the task runs (`truth === true`: an unknown condition skips the task like a false
 * one). For a condition that is not true, `explanation` names on one line the references and
 * comparisons that decided it, with their values, and `missingField` says that one of them is a
 * field missing from an output; for a true one they are `''` and false.
 * An evaluation error (a type error between non-null values) gives `ok: false` and its message.
 */
export type ConditionEvaluation = Result<boolean, Failed, { truth: Truth; explanation: string; missingField: boolean }>;

/** Options of {@link evaluateCondition}. */
export interface EvaluateConditionOptions {
  /**
   * The status of each parent (`completed`, `failed`, `skipped`…). Only words depend on it: the
   * explanation says why a parent's output is null (`train-gpu failed`) and, for a completed
   * parent, that a field is missing from its output.
   */
  parentStatus?: Readonly<Record<string, string>>;
}

/** An error that makes the whole condition fail; its message is shown to the user. */
class EvaluationError extends Error {}

interface Scope {
  inputs: Readonly<Record<string, unknown>>;
  dependsOn: readonly string[];
  /** Inside an aggregate: the dependency currently substituted for its glob. */
  binding?: Binding;
}

/** A node's value (a JSON value, or {@link UNKNOWN}) and the facts that decided it. */
interface Outcome {
  value: unknown;
  facts: Facts;
  /** For a reference: what it read, to describe it. */
  operand?: Operand;
}

/**
 * Evaluates a compiled condition against the outputs of the task's dependencies. `inputs`
 * maps a dependency name to its decoded output (any JSON value); an absent dependency reads
 * as None. An ordering (`<`, `<=`, `>`, `>=`) or `in`/`not in` with a null operand is unknown;
 * `and`, `or`, `not` and the aggregates follow Kleene's logic. Never throws: an evaluation error
 * (e.g. `cannot compare str and int with >`) makes the whole condition an error. Values that
 * are not unknown are converted with Python truthiness.
 */
export function evaluateCondition(
  condition: CompiledCondition,
  inputs: Readonly<Record<string, unknown>>,
  options: EvaluateConditionOptions = {},
): ConditionEvaluation {
  try {
    const scope: Scope = {
      inputs: typeof inputs === 'object' && inputs !== null ? inputs : {},
      dependsOn: Array.isArray(condition.dependsOn) ? condition.dependsOn : [],
    };
    const outcome = evaluate(condition.ast, scope);
    const truth = truthOf(outcome.value);
    // A task that runs needs no reason: only a false or unknown result is put into words.
    if (truth === true) return { ok: true, value: true, truth, explanation: '', missingField: false };
    const statuses = options.parentStatus ?? {};
    const explanation = explain(outcome.facts, {
      statusOf: (name) => (Object.hasOwn(statuses, name) ? statuses[name] : undefined),
    });
    return { ok: true, value: false, truth, explanation: explanation.text, missingField: explanation.missingField };
  } catch (error) {
    if (error instanceof EvaluationError) return { ok: false, error: error.message };
    // Only reachable with a hand-made or corrupted condition (or hostile getters in inputs).
    const detail = errorMessage(error);
    return { ok: false, error: `the condition could not be evaluated: ${detail}` };
  }
}

function truthOf(value: unknown): Truth {
  return value === UNKNOWN ? 'unknown' : truthy(value);
}

function evaluate(node: ConditionNode, scope: Scope): Outcome {
  switch (node.type) {
    case 'literal':
      return { value: node.value, facts: NO_FACTS };
    case 'list': {
      // A list holding an unknown is unknown as a whole.
      const items = node.items.map((item) => evaluate(item, scope));
      const unknown = items.filter((item) => item.value === UNKNOWN);
      if (unknown.length > 0) return { value: UNKNOWN, facts: joinFacts(unknown.map((item) => item.facts)) };
      return { value: items.map((item) => item.value), facts: NO_FACTS };
    }
    case 'reference':
      return readReference(node, scope);
    case 'not': {
      const operand = evaluate(node.operand, scope);
      const truth = truthOf(operand.value);
      return { value: truth === 'unknown' ? UNKNOWN : !truth, facts: operand.facts };
    }
    case 'and':
    case 'or':
      return evaluateLogical(node, scope);
    case 'compare':
      return evaluateCompare(node, scope);
    case 'aggregate':
      return evaluateAggregate(node, scope);
    default:
      throw new EvaluationError(`invalid compiled condition: unknown node type ${JSON.stringify((node as { type?: unknown }).type)}`);
  }
}

/**
 * Kleene's `and`/`or`, short-circuiting like Python: `and` stops at the first false operand,
 * `or` at the first true one; an unknown operand does not stop either.
 */
function evaluateLogical(node: LogicalNode, scope: Scope): Outcome {
  const deciding = node.type === 'or';
  const all: Facts[] = [];
  const unknown: Facts[] = [];
  for (const operand of node.operands) {
    const outcome = evaluate(operand, scope);
    const truth = truthOf(outcome.value);
    if (truth === deciding) return { value: deciding, facts: outcome.facts };
    if (truth === 'unknown') unknown.push(outcome.facts);
    all.push(outcome.facts);
  }
  if (unknown.length > 0) {
    // `and`: the unknown operands kept it from being true; `or`: none was true, so all count.
    return { value: UNKNOWN, facts: joinFacts(deciding ? all : unknown) };
  }
  return { value: !deciding, facts: joinFacts(all) };
}

/**
 * `a < b <= c`: each operand is evaluated once; the chain stops at the first false link, like
 * Python, and is unknown when no link is false and one is unknown.
 */
function evaluateCompare(node: CompareNode, scope: Scope): Outcome {
  let leftNode = node.left;
  let left = evaluate(leftNode, scope);
  const all: Facts[] = [];
  const unknown: Facts[] = [];
  for (const { op, right: rightNode, column } of node.comparisons) {
    const right = evaluate(rightNode, scope);
    const result = compare(op, left.value, right.value, column);
    let facts: Facts;
    if (left.value === UNKNOWN || right.value === UNKNOWN) {
      // The operands' own facts say why they are unknown.
      facts = joinFacts([left.value === UNKNOWN ? left.facts : NO_FACTS, right.value === UNKNOWN ? right.facts : NO_FACTS]);
    } else {
      const fact: Fact = {
        kind: 'link',
        op,
        left: operandOf(leftNode, left, scope),
        right: operandOf(rightNode, right, scope),
        truth: result === UNKNOWN ? 'unknown' : result,
      };
      facts = oneFact(fact);
    }
    if (result === false) return { value: false, facts };
    if (result === UNKNOWN) unknown.push(facts);
    all.push(facts);
    left = right;
    leftNode = rightNode;
  }
  return unknown.length > 0 ? { value: UNKNOWN, facts: joinFacts(unknown) } : { value: true, facts: joinFacts(all) };
}

function operandOf(node: ConditionNode, outcome: Outcome, scope: Scope): Operand {
  return outcome.operand ?? { node, value: outcome.value, binding: scope.binding };
}

function isNull(value: unknown): boolean {
  return pythonType(value) === 'NoneType';
}

/** One comparison: true, false or {@link UNKNOWN}; a type error between non-null values throws. */
function compare(op: CompareOperator, left: unknown, right: unknown, column: number): boolean | typeof UNKNOWN {
  if (left === UNKNOWN || right === UNKNOWN) return UNKNOWN;
  try {
    switch (op) {
      case '==':
        return pythonEquals(left, right);
      case '!=':
        return !pythonEquals(left, right);
      case 'in':
      case 'not in':
        if (isNull(left) || isNull(right)) return UNKNOWN;
        return pythonContains(right, left) === (op === 'in');
      default:
        if (isNull(left) || isNull(right)) return UNKNOWN;
        return pythonCompare(op, left, right);
    }
  } catch (error) {
    // `[1, None] < [1, 2]`: the pair that decides holds a null, so the order is unknown too.
    if (error instanceof PythonNoneOrderingError) return UNKNOWN;
    if (error instanceof PythonTypeError) throw new EvaluationError(`${error.message} (column ${column})`);
    throw error;
  }
}

/**
 * Reads a reference. Whatever Python would answer with KeyError/IndexError reads as None, and a
 * null read says where it came from, for the explanation.
 */
function readReference(node: ReferenceNode, scope: Scope): Outcome {
  let name: string;
  if (node.root.kind === 'task') {
    name = node.root.name;
  } else if (scope.binding !== undefined && scope.binding.glob === node.root.pattern) {
    name = scope.binding.name;
  } else {
    throw new EvaluationError(`invalid compiled condition: glob ${JSON.stringify(node.root.pattern)} outside its aggregate`);
  }
  let value: unknown = Object.hasOwn(scope.inputs, name) ? scope.inputs[name] : null;
  let origin: NullOrigin | undefined;
  if (isNull(value)) origin = { kind: 'no-output' };
  for (let depth = 0; origin === undefined && depth < node.path.length; depth++) {
    const segment = node.path[depth]!;
    const owner = value;
    const type = pythonType(owner);
    if (typeof segment === 'string' && type === 'dict' && Object.hasOwn(owner as object, segment)) {
      value = (owner as Record<string, unknown>)[segment];
    } else if (typeof segment === 'number' && (type === 'list' || type === 'str')) {
      const items = type === 'list' ? (owner as unknown[]) : Array.from(owner as string);
      const position = segment < 0 ? items.length + segment : segment;
      if (Number.isInteger(position) && position >= 0 && position < items.length) {
        value = items[position];
      } else {
        origin = { kind: 'out-of-range', depth, length: items.length };
      }
    } else {
      origin = { kind: 'no-field', depth, owner };
    }
    if (origin === undefined && isNull(value)) origin = { kind: 'explicit', depth: depth + 1 };
  }
  if (origin !== undefined) value = null;
  const operand: Operand = { node, value, binding: scope.binding, task: name };
  if (origin !== undefined) operand.origin = origin;
  return { value, facts: oneFact({ kind: 'value', operand }), operand };
}

function evaluateAggregate(node: AggregateNode, scope: Scope): Outcome {
  // Every iteration runs (no short-circuit) so that an error anywhere is never hidden by
  // an earlier result; the order is sorted so the first error reported is deterministic.
  const names = matchingNames(node.glob, scope.dependsOn);
  // Per truth value, how many elements had it and the facts of their total; the facts of the
  // first few of each are kept, in name order, since no more can be shown.
  const count = { true: 0, false: 0, unknown: 0 };
  const totals = { true: 0, false: 0, unknown: 0 };
  const kept: Array<{ key: keyof typeof count; facts: Facts }> = [];
  for (const name of names) {
    let outcome: Outcome;
    try {
      outcome = evaluate(node.argument, { inputs: scope.inputs, dependsOn: scope.dependsOn, binding: { glob: node.glob, name } });
    } catch (error) {
      if (error instanceof EvaluationError) {
        throw new EvaluationError(`${error.message} in ${node.fn}() for ${JSON.stringify(name)}`);
      }
      throw error;
    }
    const key = String(truthOf(outcome.value)) as keyof typeof count;
    if (count[key] < MAX_FACTS) kept.push({ key, facts: outcome.facts });
    count[key] += 1;
    totals[key] += outcome.facts.total;
  }
  /** The facts of the elements whose truth is one of `keys`, in name order. */
  const factsOf = (...keys: Array<keyof typeof count>): Facts => {
    const joined = joinFacts(kept.filter((e) => keys.includes(e.key)).map((e) => e.facts));
    return { items: joined.items, total: keys.reduce((sum, key) => sum + totals[key], 0) };
  };
  switch (node.fn) {
    case 'any':
      if (count.true > 0) return { value: true, facts: factsOf('true') };
      return { value: count.unknown > 0 ? UNKNOWN : false, facts: factsOf('false', 'unknown') };
    case 'all':
      if (count.false > 0) return { value: false, facts: factsOf('false') };
      if (count.unknown > 0) return { value: UNKNOWN, facts: factsOf('unknown') };
      return { value: true, facts: factsOf('true') };
    case 'count':
      return { value: count.true, facts: count.true > 0 ? factsOf('true') : factsOf('false', 'unknown') };
    case 'almost_all':
      if (names.length - count.true <= (node.k ?? 0)) return { value: true, facts: factsOf('true', 'false', 'unknown') };
      return { value: false, facts: factsOf('false', 'unknown') };
    default:
      throw new EvaluationError(`invalid compiled condition: unknown aggregate ${JSON.stringify(node.fn)}`);
  }
}
