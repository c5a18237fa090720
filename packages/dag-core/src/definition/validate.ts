import type { Issue, Result } from '../result';
import { expandWorkflow, originPath, type Expansion } from './expand';
import type { ParamOverrides } from './params';
import { formatPath, type PathSegment } from './path';
import type { RawIssue } from './raw-issue';
import { internalDefinitionSchema, userDefinitionSchema } from './schema';
import { checkSemantics, isMergeNode } from './semantics';
import { fromRaw, toRawDefinition } from './convert';
import { MAX_DEFINITION_DEPTH } from './limits';
import { taskNameProblem } from './names';
import { fromZodIssues } from './zod-issues';
import type { WorkflowDefinition } from './types';
import { errorMessage } from '../error-text';

/** Where an issue sits in the source text, when the input came from text. */
export type Locate = (issue: RawIssue) => { line: number; column: number } | undefined;

/** The fields allowed in the object at `path` of a definition the model checks (for "did you mean"). */
function fieldsOf(schema: typeof userDefinitionSchema): (path: readonly PathSegment[]) => readonly string[] {
  const workflow = Object.keys(schema.shape);
  const task = Object.keys(schema.shape.tasks.element.shape);
  return (path) => (path.length === 0 ? workflow : path.length === 2 && path[0] === 'tasks' ? task : []);
}
const userFields = fieldsOf(userDefinitionSchema);
const internalFields = fieldsOf(internalDefinitionSchema);

/** @internal */
export interface ValidateOptions {
  /** Admit the engine's merge nodes, gates and `__` kwargs (output of the fan-in transform). */
  internal?: boolean;
  locate?: Locate;
  /** Overrides of the workflow's parameter defaults (user definitions only). */
  params?: ParamOverrides;
}

/** Options of {@link validateWorkflow}. */
export interface ValidateWorkflowOptions {
  /** Overrides of the defaults of the workflow's `params` (`--param`, `--params-file`). */
  params?: ParamOverrides;
}

/** Codes of the expansion's problems with a reference: validation issues at the same place follow from them. */
const REFERENCE_CODES = new Set(['bad-reference', 'secret-ref-syntax']);

function startsWith(path: readonly PathSegment[], prefix: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => path[i] === segment);
}

/**
 * Validation issues of an expanded definition, moved to where they come from in the file: a task
 * made by a matrix reports at the matrix task, once per problem (with how many more of its tasks
 * have it), a position inside a string a reference changed is dropped, and what a reported
 * reference problem causes is left out.
 */
function toFile(raw: readonly RawIssue[], expansion: Expansion): RawIssue[] {
  const references = expansion.issues.filter((i) => REFERENCE_CODES.has(i.code)).map((i) => i.path);
  const out: RawIssue[] = [];
  const folded = new Map<string, { issue: RawIssue; more: number }>();
  for (const issue of raw) {
    const path = originPath(issue.path, expansion.tasks);
    if (references.some((p) => startsWith(path, p))) continue;
    const moved: RawIssue = { ...issue, path };
    if (moved.innerColumn !== undefined && expansion.changed.has(formatPath(path))) delete moved.innerColumn;
    const task = issue.path[0] === 'tasks' && typeof issue.path[1] === 'number' ? expansion.tasks[issue.path[1]] : undefined;
    if (task?.matrix) {
      const key = `${issue.code}\u0000${formatPath(path)}`;
      const seen = folded.get(key);
      if (seen !== undefined) {
        seen.more++;
        continue;
      }
      folded.set(key, { issue: moved, more: 0 });
    }
    out.push(moved);
  }
  for (const { issue, more } of folded.values()) {
    if (more > 0) issue.message = `${issue.message} (and ${more} more task${more === 1 ? '' : 's'} of this matrix)`;
  }
  return out;
}

function finish(raw: readonly RawIssue[], locate: Locate | undefined): Issue[] {
  return raw.map((r) => {
    const issue: Issue = { code: r.code, path: formatPath(r.path), message: r.message };
    if (r.hint !== undefined) issue.hint = r.hint;
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
    // A user's file is expanded first (parameters, matrices, references); the engine's own definitions are already.
    const expansion = internal ? null : expandWorkflow(value, options.params);
    const expanded = expansion === null ? value : expansion.value;
    const schema = internal ? internalDefinitionSchema : userDefinitionSchema;
    const parsed = schema.safeParse(expanded, { reportInput: true });
    let raw: RawIssue[] = parsed.success
      ? []
      : fromZodIssues(parsed.error.issues, (n) => taskNameProblem(n, internal), internal ? internalFields : userFields);
    const semantics = checkSemantics(expanded, { internal, matrixTasks: expansion?.matrixTasks });
    raw.push(...semantics.issues);
    let warnings = semantics.warnings;
    if (expansion !== null) {
      raw = [...toFile(raw, expansion), ...expansion.issues];
      warnings = [...toFile(warnings, expansion), ...expansion.warnings];
    }
    if (!parsed.success || raw.length > 0) {
      // Warnings go along with the errors, so one pass shows everything (sorted by the reader).
      return warnings.length > 0
        ? { ok: false, issues: finish(raw, options.locate), warnings: finish(warnings, options.locate) }
        : { ok: false, issues: finish(raw, options.locate) };
    }
    return { ok: true, value: fromRaw(parsed.data), warnings: finish(warnings, options.locate) };
  } catch (error) {
    // Nothing above should throw; if something does, the caller still gets an issue, not a crash.
    return { ok: false, issues: [{ code: 'internal', path: '', message: `validation failed unexpectedly: ${String(error)}` }] };
  }
}

/**
 * Validates a parsed workflow file (the object from YAML or JSON, snake_case keys) and returns the
 * camelCase definition with defaults filled, or every issue found. Parameters are resolved (with
 * `options.params` overriding their defaults) and matrix tasks expanded first: the definition
 * returned is the resolved one. Never throws.
 */
export function validateWorkflow(value: unknown, options: ValidateWorkflowOptions = {}): Result<WorkflowDefinition> {
  return validateWith(value, options.params === undefined ? {} : { params: options.params });
}

/**
 * Validates a definition in hand (camelCase: what {@link validateWorkflow} returns, or one built in
 * code) before it is submitted: with a user's rules, or, when it holds the merge nodes of
 * `sequentializeFanIn`, with the engine's own rules (those a stored definition is read with). One
 * path for both: nothing reaches a runtime unchecked. Never throws.
 */
export function validateDefinition(definition: WorkflowDefinition): Result<WorkflowDefinition> {
  let raw: Record<string, unknown>;
  let internal: boolean;
  try {
    internal = definition.tasks.some((t) => isMergeNode(t.name, t.kwargs));
    raw = toRawDefinition(definition);
  } catch (error) {
    return {
      ok: false,
      issues: [{ code: 'type', path: '', message: `not a workflow definition: ${errorMessage(error)}` }],
    };
  }
  return internal ? validateWith(raw, { internal: true }) : validateWorkflow(raw);
}
