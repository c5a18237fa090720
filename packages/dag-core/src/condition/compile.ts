/**
 * Compilation: parse, then check the expression against the task's dependencies.
 */
import { failure, success, type Issue, type Result } from '../result';
import { compareCodeUnits, matchingNames } from './glob';
import { parseCondition, type ConditionNode } from './parser';
import { closestName, didYouMean } from '../suggest';
import { errorMessage } from '../error-text';

/**
 * A checked condition, ready for {@link evaluateCondition}. Plain data (JSON-serialisable),
 * so it can be stored with the workflow and evaluated later.
 */
export interface CompiledCondition {
  /** The expression as written. */
  source: string;
  /** The parsed expression; contains only constructs of the subset. */
  ast: ConditionNode;
  /** The task's dependencies, as given to {@link compileCondition}; globs are matched against them. */
  dependsOn: string[];
  /**
   * Sorted (by code units), distinct dependencies whose outputs the condition may read: the
   * exact names it mentions plus every dependency matched by one of its globs.
   */
  references: string[];
}

/**
 * Compiles a condition written in the workflow condition language for a task whose direct
 * dependencies are `dependsOn`. Never throws. Issues have `path: ''` (the caller prefixes
 * it), a 1-based `column` inside the expression and one of the codes `condition-syntax`,
 * `condition-disallowed`, `condition-unknown-input`, `condition-no-input`.
 */
export function compileCondition(expression: string, dependsOn: readonly string[]): Result<CompiledCondition> {
  try {
    return compile(expression, dependsOn);
  } catch (error) {
    // Unreachable by design; the promise never to throw also covers our own bugs.
    return failure([
      {
        code: 'condition-syntax',
        path: '',
        column: 1,
        message: `internal error while compiling the condition: ${errorMessage(error)}`,
      },
    ]);
  }
}

function compile(expression: string, dependsOn: readonly string[]): Result<CompiledCondition> {
  if (typeof expression !== 'string') {
    return failure([{ code: 'condition-syntax', path: '', column: 1, message: 'the condition must be a string' }]);
  }
  const parents = Array.isArray(dependsOn) ? dependsOn.filter((name): name is string => typeof name === 'string') : [];
  const parsed = parseCondition(expression);
  if (!parsed.ok) return failure([parsed.issue]);

  const known = new Set(parents);
  const issues: Issue[] = [...parsed.disallowed];
  const unknown = new Set<string>();
  const references = new Set<string>();
  for (const site of parsed.references) {
    if (site.glob) {
      for (const name of matchingNames(site.name, parents)) references.add(name);
    } else if (known.has(site.name)) {
      references.add(site.name);
    } else if (!unknown.has(site.name)) {
      // One issue per name: repeating it for each occurrence adds nothing.
      unknown.add(site.name);
      // A few hints are enough, and each compares the name with every parent.
      const near = unknown.size <= MAX_INPUT_HINTS ? closestName(site.name, parents) : undefined;
      issues.push({
        code: 'condition-unknown-input',
        path: '',
        column: site.column,
        message: `unknown input ${JSON.stringify(site.name)}: a condition can only read the tasks in depends_on (${describeParents(parents)})`,
        ...(near === undefined ? {} : { hint: didYouMean(near) }),
      });
    }
  }
  if (parsed.references.length === 0) {
    issues.push({
      code: 'condition-no-input',
      path: '',
      column: 1,
      message: 'the condition reads no input (such as inputs.TASK.field), so its value could never change',
    });
  }
  if (issues.length > 0) return failure(issues.sort((a, b) => (a.column ?? 0) - (b.column ?? 0)));
  return success({
    source: expression,
    ast: parsed.ast,
    dependsOn: [...parents],
    references: [...references].sort(compareCodeUnits),
  });
}

/** Unknown inputs of one condition that get a "did you mean" hint. */
const MAX_INPUT_HINTS = 3;

function describeParents(parents: readonly string[]): string {
  if (parents.length === 0) return 'none';
  const shown = parents.slice(0, 10).map((name) => JSON.stringify(name));
  return parents.length > shown.length ? `${shown.join(', ')}, ...` : shown.join(', ');
}
