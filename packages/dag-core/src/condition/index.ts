/**
 * The workflow condition language: a Python-like expression subset deciding whether a task
 * runs, given the outputs of its direct dependencies, with three-valued logic for nulls
 * (docs/conditions.md). Compile once with {@link compileCondition}, store the plain-data
 * result, evaluate with {@link evaluateCondition}.
 */
export { compileCondition, type CompiledCondition } from './compile';
export { evaluateCondition, type ConditionEvaluation, type EvaluateConditionOptions } from './evaluate';
export type { Truth as ConditionTruth } from './explain';
export { fnmatch } from './glob';
export { conditionLiteral } from './literal';
export {
  MAX_CONDITION_DEPTH,
  MAX_CONDITION_LENGTH,
  type AggregateFunction,
  type AggregateNode,
  type CompareNode,
  type CompareOperator,
  type Comparison,
  type ConditionNode,
  type ListNode,
  type LiteralNode,
  type LiteralValue,
  type LogicalNode,
  type NotNode,
  type PathSegment,
  type ReferenceNode,
  type ReferenceRoot,
} from './parser';
export { boundSkipReason, conditionSkipReason, MAX_SKIP_REASON_LENGTH, skipReasonKind, type SkipKind } from './skip-reason';
