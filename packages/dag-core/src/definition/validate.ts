import type { Issue, Result } from '../result';
import { formatPath } from './path';
import type { RawIssue } from './raw-issue';
import { internalDefinitionSchema, userDefinitionSchema } from './schema';
import { checkSemantics } from './semantics';
import { fromRaw } from './convert';
import { MAX_DEFINITION_DEPTH } from './limits';
import { taskNameProblem } from './names';
import { fromZodIssues } from './zod-issues';
import type { WorkflowDefinition } from './types';

/** Where an issue sits in the source text, when the input came from text. */
export type Locate = (issue: RawIssue) => { line: number; column: number } | undefined;

/** @internal */
export interface ValidateOptions {
  /** Admit the engine's merge nodes, gates and `__` kwargs (output of the fan-in transform). */
  internal?: boolean;
  locate?: Locate;
}

function finish(raw: readonly RawIssue[], locate: Locate | undefined): Issue[] {
  return raw.map((r) => {
    const issue: Issue = { code: r.code, path: formatPath(r.path), message: r.message };
    const position = locate?.(r);
    if (position) {
      issue.line = position.line;
      issue.column = position.column;
    }
    return issue;
  });
}

/**
 * A definition must be plain, finite data: no deeper than {@link MAX_DEFINITION_DEPTH} and without
 * cycles (a YAML alias that contains itself). Checked without recursion, so a hostile document
 * cannot overflow the stack here or later (hashing, encoding); a value shared by several parents
 * (a YAML alias) is walked again only when met at a shallower depth. Returns the problem, or null.
 */
function plainDataProblem(value: unknown): string | null {
  type Frame = { value: object; depth: number; exit: boolean };
  const stack: Frame[] = [];
  const onPath = new Set<object>();
  const checkedAt = new Map<object, number>();
  const visit = (v: unknown, depth: number) => {
    if (v !== null && typeof v === 'object') stack.push({ value: v, depth, exit: false });
  };
  visit(value, 1);
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.exit) {
      onPath.delete(frame.value);
      continue;
    }
    if (onPath.has(frame.value)) return 'a value contains itself (a YAML alias used inside its own anchor)';
    if (frame.depth > MAX_DEFINITION_DEPTH) return `the definition nests deeper than ${MAX_DEFINITION_DEPTH} levels`;
    const before = checkedAt.get(frame.value);
    if (before !== undefined && before <= frame.depth) continue;
    checkedAt.set(frame.value, frame.depth);
    onPath.add(frame.value);
    stack.push({ ...frame, exit: true });
    for (const child of Array.isArray(frame.value) ? frame.value : Object.values(frame.value)) visit(child, frame.depth + 1);
  }
  return null;
}

/** @internal validateWorkflow with options. */
export function validateWith(value: unknown, options: ValidateOptions = {}): Result<WorkflowDefinition> {
  try {
    const problem = plainDataProblem(value);
    if (problem !== null) return { ok: false, issues: [{ code: 'type', path: '', message: problem }] };
    const internal = options.internal ?? false;
    const schema = internal ? internalDefinitionSchema : userDefinitionSchema;
    const parsed = schema.safeParse(value, { reportInput: true });
    const raw: RawIssue[] = parsed.success ? [] : fromZodIssues(parsed.error.issues, (n) => taskNameProblem(n, internal));
    const semantics = checkSemantics(value, { internal });
    raw.push(...semantics.issues);
    if (!parsed.success || raw.length > 0) return { ok: false, issues: finish(raw, options.locate) };
    return { ok: true, value: fromRaw(parsed.data), warnings: finish(semantics.warnings, options.locate) };
  } catch (error) {
    // Nothing above should throw; if something does, the caller still gets an issue, not a crash.
    return { ok: false, issues: [{ code: 'internal', path: '', message: `validation failed unexpectedly: ${String(error)}` }] };
  }
}

/**
 * Validates a parsed workflow file (the object from YAML or JSON, snake_case keys) and returns the
 * camelCase definition with defaults filled, or every issue found. Never throws.
 */
export function validateWorkflow(value: unknown): Result<WorkflowDefinition> {
  return validateWith(value);
}
