import { findSecretRefs } from '../wire/secret-refs';
import { formatPathForMessage, type PathSegment } from './path';
import type { RawIssue } from './raw-issue';

const PROTO = '__proto__';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Finds every own `__proto__` key in a task's kwargs, at any depth. YAML and `JSON.parse` keep
 * such a key as an ordinary property, but JavaScript drops it (or, worse, takes it as the object's
 * prototype) wherever an object is rebuilt by assignment: the zod model strips it from kwargs and
 * kwargs.env, and the worker would drop it from the task environment. Reporting it is the only
 * way the data does not change silently. Iterative: the depth was bounded before.
 */
function protoKeys(kwargs: Record<string, unknown>, at: readonly PathSegment[]): RawIssue[] {
  const issues: RawIssue[] = [];
  const stack: Array<{ value: unknown; path: PathSegment[] }> = [{ value: kwargs, path: ['kwargs'] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: [...path, i] });
      continue;
    }
    if (!isRecord(value)) continue;
    if (Object.hasOwn(value, PROTO)) {
      const where = [...path, PROTO];
      issues.push(
        path.length === 1
          ? {
              code: 'reserved-kwarg',
              path: [...at, ...where],
              message: 'kwargs keys starting with "__" are reserved for the engine',
              target: 'key',
            }
          : {
              code: 'bad-kwarg',
              path: [...at, ...where],
              message: `${formatPathForMessage(where)}: a key named "__proto__" would be dropped (JavaScript treats it as the prototype); rename it`,
              target: 'key',
            },
      );
    }
    const keys = Object.keys(value).filter((k) => k !== PROTO);
    for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: value[keys[i]!], path: [...path, keys[i]!] });
  }
  return issues;
}

/** A malformed `${{ … }}` in a kwargs.env value, with its column inside the value. */
function secretRefIssues(env: unknown, at: readonly PathSegment[]): RawIssue[] {
  if (!isRecord(env)) return [];
  const issues: RawIssue[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string' || name === PROTO) continue;
    for (const problem of findSecretRefs(value).problems) {
      const column = problem.index + 1;
      issues.push({
        code: 'secret-ref-syntax',
        path: [...at, 'kwargs', 'env', name],
        message: `${formatPathForMessage(['kwargs', 'env', name])}: ${problem.message} (column ${column} of the value)`,
        innerColumn: column,
      });
    }
  }
  return issues;
}

/**
 * The checks of a user task's kwargs that the zod model cannot make: no `__proto__` key at any
 * depth, and well-formed secret references in kwargs.env values. `at` is the task's path.
 */
export function checkKwargs(kwargs: Record<string, unknown>, at: readonly PathSegment[]): RawIssue[] {
  return [...protoKeys(kwargs, at), ...secretRefIssues(kwargs.env, at)];
}
