import type { Issue, Result } from '../result';
import { formatPath } from './path';
import type { RawIssue } from './raw-issue';
import { internalDefinitionSchema, userDefinitionSchema } from './schema';
import { checkSemantics } from './semantics';
import { fromRaw } from './convert';
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

/** @internal validateWorkflow with options. */
export function validateWith(value: unknown, options: ValidateOptions = {}): Result<WorkflowDefinition> {
  try {
    const internal = options.internal ?? false;
    const schema = internal ? internalDefinitionSchema : userDefinitionSchema;
    const parsed = schema.safeParse(value, { reportInput: true });
    const raw: RawIssue[] = parsed.success ? [] : fromZodIssues(parsed.error.issues, (n) => taskNameProblem(n, internal));
    const semantics = checkSemantics(value);
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
