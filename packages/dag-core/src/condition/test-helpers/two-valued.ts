/**
 * The two-valued evaluator as it was before conditions became three-valued, kept only as the
 * oracle of a property test: for inputs where no null meets an ordering or `in`, the
 * three-valued evaluator must give exactly its answers (docs/conditions.md).
 */
import type { CompiledCondition } from '../compile';
import { matchingNames } from '../glob';
import type { AggregateNode, CompareOperator, ConditionNode, PathSegment, ReferenceNode } from '../parser';
import { dictGet, pythonCompare, pythonContains, pythonEquals, PythonTypeError, truthy } from '../python';
import { errorMessage } from '../../error-text';

/** The outcome of {@link evaluateTwoValued}: the condition's truth value, or why it has none. */
export type TwoValuedEvaluation = { ok: true; value: boolean } | { ok: false; error: string };

/** An error that makes the whole condition fail; its message is shown to the user. */
class EvaluationError extends Error {}

interface Scope {
  inputs: Readonly<Record<string, unknown>>;
  dependsOn: readonly string[];
  /** Inside an aggregate: the dependency currently substituted for its glob. */
  binding?: { glob: string; name: string };
}

/**
 * Evaluates a compiled condition against the outputs of the task's dependencies. `inputs`
 * maps a dependency name to its decoded output (any JSON value); an absent dependency reads
 * as None. Never throws: any evaluation error (e.g. `cannot compare NoneType and int with >`)
 * makes the whole condition an error. Otherwise the result is converted with Python truthiness.
 */
export function evaluateTwoValued(condition: CompiledCondition, inputs: Readonly<Record<string, unknown>>): TwoValuedEvaluation {
  try {
    const scope: Scope = {
      inputs: typeof inputs === 'object' && inputs !== null ? inputs : {},
      dependsOn: Array.isArray(condition.dependsOn) ? condition.dependsOn : [],
    };
    return { ok: true, value: truthy(evaluate(condition.ast, scope)) };
  } catch (error) {
    if (error instanceof EvaluationError) return { ok: false, error: error.message };
    // Only reachable with a hand-made or corrupted condition (or hostile getters in inputs).
    const detail = errorMessage(error);
    return { ok: false, error: `the condition could not be evaluated: ${detail}` };
  }
}

function evaluate(node: ConditionNode, scope: Scope): unknown {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'list':
      return node.items.map((item) => evaluate(item, scope));
    case 'reference':
      return readReference(node, scope);
    case 'not':
      return !truthy(evaluate(node.operand, scope));
    case 'and':
      for (const operand of node.operands) {
        if (!truthy(evaluate(operand, scope))) return false;
      }
      return true;
    case 'or':
      for (const operand of node.operands) {
        if (truthy(evaluate(operand, scope))) return true;
      }
      return false;
    case 'compare': {
      // Like Python: each operand is evaluated once, and the chain stops at the first false link.
      let left = evaluate(node.left, scope);
      for (const { op, right, column } of node.comparisons) {
        const value = evaluate(right, scope);
        if (!compare(op, left, value, column)) return false;
        left = value;
      }
      return true;
    }
    case 'aggregate':
      return evaluateAggregate(node, scope);
    default:
      throw new EvaluationError(`invalid compiled condition: unknown node type ${JSON.stringify((node as { type?: unknown }).type)}`);
  }
}

function compare(op: CompareOperator, left: unknown, right: unknown, column: number): boolean {
  try {
    switch (op) {
      case '==':
        return pythonEquals(left, right);
      case '!=':
        return !pythonEquals(left, right);
      case 'in':
        return pythonContains(right, left);
      case 'not in':
        return !pythonContains(right, left);
      default:
        return pythonCompare(op, left, right);
    }
  } catch (error) {
    if (error instanceof PythonTypeError) throw new EvaluationError(`${error.message} (column ${column})`);
    throw error;
  }
}

function readReference(node: ReferenceNode, scope: Scope): unknown {
  let name: string;
  if (node.root.kind === 'task') {
    name = node.root.name;
  } else if (scope.binding !== undefined && scope.binding.glob === node.root.pattern) {
    name = scope.binding.name;
  } else {
    throw new EvaluationError(`invalid compiled condition: glob ${JSON.stringify(node.root.pattern)} outside its aggregate`);
  }
  let value: unknown = Object.hasOwn(scope.inputs, name) ? scope.inputs[name] : null;
  for (const segment of node.path) value = step(value, segment);
  return value;
}

/** One lookup step; whatever Python would answer with KeyError/IndexError reads as None. */
function step(value: unknown, segment: PathSegment): unknown {
  if (typeof segment === 'string') return dictGet(value, segment);
  if (Array.isArray(value)) return at(value, segment);
  if (typeof value === 'string') return at(Array.from(value), segment);
  return null;
}

function at(items: readonly unknown[], index: number): unknown {
  const position = index < 0 ? items.length + index : index;
  return Number.isInteger(position) && position >= 0 && position < items.length ? items[position] : null;
}

function evaluateAggregate(node: AggregateNode, scope: Scope): boolean | number {
  // Every iteration runs (no short-circuit) so that an error anywhere is never hidden by
  // an earlier result; the order is sorted so the first error reported is deterministic.
  let truthyCount = 0;
  const names = matchingNames(node.glob, scope.dependsOn);
  for (const name of names) {
    let result: unknown;
    try {
      result = evaluate(node.argument, { ...scope, binding: { glob: node.glob, name } });
    } catch (error) {
      if (error instanceof EvaluationError) {
        throw new EvaluationError(`${error.message} in ${node.fn}() for ${JSON.stringify(name)}`);
      }
      throw error;
    }
    if (truthy(result)) truthyCount += 1;
  }
  const falsyCount = names.length - truthyCount;
  switch (node.fn) {
    case 'all':
      return falsyCount === 0;
    case 'any':
      return truthyCount > 0;
    case 'count':
      return truthyCount;
    case 'almost_all':
      return falsyCount <= (node.k ?? 0);
    default:
      throw new EvaluationError(`invalid compiled condition: unknown aggregate ${JSON.stringify(node.fn)}`);
  }
}
