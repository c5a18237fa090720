import { conditionLiteral } from '../condition/literal';
import { expandMatrix, MATRIX_ENV_PREFIX } from './matrix';
import { PARAM_ENV_PREFIX, resolveParams, valueText, type ParamOverrides, type ParamValue, type ResolvedParams } from './params';
import { formatPath, formatPathForMessage, type PathSegment } from './path';
import type { RawIssue } from './raw-issue';
import { unknownNameHint } from './hints';
import { findReferences, hasReference, replaceReferences, type ReferenceSite } from './references';

/**
 * The expansion of a workflow file, before it is validated: parameters resolved, matrix tasks
 * made one task per combination, `${{ params.KEY }}` and `${{ matrix.KEY }}` replaced in kwargs
 * strings, queues and conditions (as literals there), and `JOBQ_PARAM_*` / `JOBQ_MATRIX_*` added
 * to each task's kwargs.env. What comes out is a plain definition: validating it again expands
 * nothing more. Pure; never throws on any input.
 */

/** Where an expanded task came from. */
export interface TaskOrigin {
  /** Its index in the file's task list. */
  source: number;
  /** True for a task made by a matrix. */
  matrix: boolean;
  /** For each entry of its depends_on, the index of the entry of the file it came from. */
  dependsOn: number[];
}

/** The outcome of {@link expandWorkflow}. */
export interface Expansion {
  /** The definition with everything expanded (a shallow copy of the input where nothing changed). */
  value: unknown;
  /** Problems found, at their paths in the file. */
  issues: RawIssue[];
  warnings: RawIssue[];
  /** One entry per task of `value`; empty when `value` has no task list. */
  tasks: TaskOrigin[];
  /** Paths (as {@link formatPath} writes them) of the strings of the file whose text a reference changed. */
  changed: Set<string>;
  /** The tasks each matrix task of the file was expanded into, by the task's name. */
  matrixTasks: Map<string, string[]>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What references in one task may read. */
interface Scope {
  params: ResolvedParams;
  /** The task's combination; null for a task without a matrix. */
  matrix: Map<string, ParamValue> | null;
  /** Every key the task's matrix knows (a combination may lack one an include brings); null without a matrix. */
  matrixKeys: Set<string> | null;
  /** The task's matrix is malformed (already reported): its references are not reported again. */
  matrixBroken: boolean;
  taskName: string;
}

type Place = 'text' | 'env' | 'condition';

/** Sets `key` as an own property, `__proto__` included (an assignment would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class Expander {
  readonly issues: RawIssue[] = [];
  readonly changed = new Set<string>();
  private readonly reported = new Set<string>();

  constructor(readonly params: ResolvedParams) {}

  private report(issue: RawIssue): void {
    const key = `${issue.code}\u0000${formatPath(issue.path)}\u0000${issue.message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.issues.push(issue);
  }

  /** What one reference reads in `scope`, as text for `place`; undefined when it cannot be read (reported). */
  private resolve(
    site: Extract<ReferenceSite, { ok: true }>,
    scope: Scope,
    place: Place,
    problem: (message: string, hint?: string) => void,
  ): string | undefined {
    const name = site.name;
    if (site.namespace === 'secrets') {
      if (place === 'env') return undefined;
      problem(
        `\${{ secrets.${name} }}: a secret is resolved only in a kwargs.env value (the worker reads JOBQ_SECRET_${name}); ` +
          `put it in an env variable and use "$VARIABLE" in the command`,
      );
      return undefined;
    }
    if (site.namespace === 'params') {
      const value = this.params.values.get(name);
      if (value !== undefined) return place === 'condition' ? conditionLiteral(value) : valueText(value);
      if (!this.params.broken.has(name)) {
        const known = this.params.declared;
        problem(
          `\${{ params.${name} }}: the workflow has no parameter "${name}" (${known.length === 0 ? 'it declares none under params' : `its parameters: ${known.join(', ')}`})`,
          unknownNameHint(name, known),
        );
      }
      return undefined;
    }
    if (scope.matrixBroken) return undefined;
    if (scope.matrix === null || scope.matrixKeys === null) {
      problem(`\${{ matrix.${name} }}: task "${scope.taskName}" has no matrix`);
      return undefined;
    }
    if (!scope.matrixKeys.has(name)) {
      problem(
        `\${{ matrix.${name} }}: the matrix of task "${scope.taskName}" has no key "${name}" (its keys: ${[...scope.matrixKeys].join(', ')})`,
        unknownNameHint(name, scope.matrixKeys),
      );
      return undefined;
    }
    const value = scope.matrix.get(name);
    // A key only some include entries bring reads as empty (None in a condition), as in GitHub Actions.
    if (value === undefined) return place === 'condition' ? 'None' : '';
    return place === 'condition' ? conditionLiteral(value) : valueText(value);
  }

  /** `text` (at `path` in the file, `label` naming it in messages) with its references replaced. */
  substitute(text: string, scope: Scope, place: Place, path: PathSegment[], label: string): string {
    if (!hasReference(text)) return text;
    const sites = findReferences(text);
    const noun = place === 'condition' ? 'condition' : 'value';
    for (const site of sites) {
      if (site.ok) continue;
      this.report({
        code: place === 'env' ? 'secret-ref-syntax' : 'bad-reference',
        path,
        message: `${label}: ${site.message} (column ${site.index + 1} of the ${noun})`,
        innerColumn: site.index + 1,
      });
    }
    const out = replaceReferences(text, sites, (site) =>
      this.resolve(site, scope, place, (message, hint) =>
        this.report({
          code: 'bad-reference',
          path,
          message: `${label}: ${message} (column ${site.index + 1} of the ${noun})`,
          innerColumn: site.index + 1,
          ...(hint === undefined ? {} : { hint }),
        }),
      ),
    );
    if (out !== text) this.changed.add(formatPath(path));
    return out;
  }

  /** A copy of `value` (kwargs, at `path` in the file) with the references of its strings replaced; shared where nothing changed. */
  kwargs(value: unknown, scope: Scope, path: PathSegment[], depth: number): unknown {
    if (typeof value === 'string') {
      const env = depth === 2 && path[path.length - 2] === 'env';
      return this.substitute(value, scope, env ? 'env' : 'text', path, formatPathForMessage(path.slice(2)));
    }
    if (Array.isArray(value)) {
      const list: readonly unknown[] = value;
      let copy: unknown[] | null = null;
      list.forEach((item, i) => {
        const next = this.kwargs(item, scope, [...path, i], depth + 1);
        if (next !== item) (copy ??= [...list])[i] = next;
      });
      return copy ?? list;
    }
    if (!isRecord(value)) return value;
    let copy: Record<string, unknown> | null = null;
    for (const key of Object.keys(value)) {
      const item = value[key];
      const next = this.kwargs(item, scope, [...path, key], depth + 1);
      if (next === item) continue;
      copy ??= { ...value };
      setOwn(copy, key, next);
    }
    return copy ?? value;
  }
}

/**
 * kwargs with `JOBQ_PARAM_*` and `JOBQ_MATRIX_*` added to its env; a variable the task sets
 * itself keeps its value. kwargs or an env that is not an object is left for validation to report.
 */
function withEnvironment(
  kwargs: unknown,
  params: ReadonlyMap<string, ParamValue>,
  matrix: ReadonlyMap<string, ParamValue> | null,
): unknown {
  if (params.size === 0 && (matrix === null || matrix.size === 0)) return kwargs;
  if (kwargs !== undefined && !isRecord(kwargs)) return kwargs;
  const env: unknown = kwargs?.env;
  if (env !== undefined && env !== null && !isRecord(env)) return kwargs;
  const next: Record<string, unknown> = { ...(env ?? {}) };
  const add = (name: string, value: ParamValue) => {
    if (!Object.hasOwn(next, name)) setOwn(next, name, valueText(value));
  };
  for (const [key, value] of params) add(`${PARAM_ENV_PREFIX}${key.toUpperCase()}`, value);
  for (const [key, value] of matrix ?? []) add(`${MATRIX_ENV_PREFIX}${key.toUpperCase()}`, value);
  const out: Record<string, unknown> = { ...(kwargs ?? {}) };
  setOwn(out, 'env', next);
  return out;
}

interface Built {
  task: unknown;
  origin: TaskOrigin;
  /** The matrix it belongs to (the file's task name), if any. */
  base: string | null;
}

/**
 * Expands a parsed workflow file (snake_case, as written) with the parameter overrides. Issues
 * and warnings are at their paths in the file; see {@link Expansion}.
 */
export function expandWorkflow(raw: unknown, overrides: ParamOverrides = {}): Expansion {
  const none: Expansion = { value: raw, issues: [], warnings: [], tasks: [], changed: new Set(), matrixTasks: new Map() };
  if (!isRecord(raw) || !Array.isArray(raw.tasks)) return none;
  const params = resolveParams(raw.params, overrides);
  const expander = new Expander(params);
  const warnings: RawIssue[] = [];
  const matrixTasks = new Map<string, string[]>();
  const built: Built[] = [];
  const noMatrix = (name: string, broken = false): Scope => ({
    params,
    matrix: null,
    matrixKeys: null,
    matrixBroken: broken,
    taskName: name,
  });

  raw.tasks.forEach((task: unknown, j) => {
    if (!isRecord(task)) {
      built.push({ task, origin: { source: j, matrix: false, dependsOn: [] }, base: null });
      return;
    }
    const name = typeof task.name === 'string' ? task.name : `#${j}`;
    const { matrix, ...plain } = task;
    let scopes: Array<{ name: string | undefined; scope: Scope }> = [{ name: undefined, scope: noMatrix(name) }];
    if (Object.hasOwn(task, 'matrix')) {
      const expanded = typeof task.name === 'string' ? expandMatrix(task.name, matrix, ['tasks', j, 'matrix']) : null;
      if (expanded?.ok) {
        warnings.push(...expanded.warnings);
        const keys = expanded.value.keys;
        scopes = expanded.value.combinations.map((c) => ({
          name: c.name,
          scope: { params, matrix: c.values, matrixKeys: keys, matrixBroken: false, taskName: name },
        }));
        matrixTasks.set(
          name,
          scopes.map((s) => s.name!),
        );
      } else {
        expander.issues.push(...(expanded?.issues ?? []));
        scopes = [{ name: undefined, scope: noMatrix(name, true) }];
      }
    }
    for (const { name: expandedName, scope } of scopes) {
      const out: Record<string, unknown> = { ...plain };
      if (expandedName !== undefined) out.name = expandedName;
      if (typeof plain.queue === 'string') out.queue = expander.substitute(plain.queue, scope, 'text', ['tasks', j, 'queue'], 'queue');
      if (typeof plain.condition === 'string')
        out.condition = expander.substitute(plain.condition, scope, 'condition', ['tasks', j, 'condition'], 'condition');
      if (plain.kwargs !== undefined) setOwn(out, 'kwargs', expander.kwargs(plain.kwargs, scope, ['tasks', j, 'kwargs'], 0));
      const kwargs = withEnvironment(out.kwargs, params.values, scope.matrix);
      if (kwargs !== undefined) setOwn(out, 'kwargs', kwargs);
      const dependsOn = Array.isArray(plain.depends_on) ? plain.depends_on.map((_: unknown, k) => k) : [];
      built.push({
        task: out,
        origin: { source: j, matrix: expandedName !== undefined, dependsOn },
        base: expandedName !== undefined ? name : null,
      });
    }
  });

  // A dependency on a matrix task is a dependency on every task it was expanded into.
  if (matrixTasks.size > 0) {
    const plainNames = new Map<string, number>();
    raw.tasks.forEach((task: unknown, j) => {
      if (isRecord(task) && typeof task.name === 'string' && !Object.hasOwn(task, 'matrix')) plainNames.set(task.name, j);
    });
    raw.tasks.forEach((task: unknown, j) => {
      if (!isRecord(task) || typeof task.name !== 'string' || !Object.hasOwn(task, 'matrix') || !matrixTasks.has(task.name)) return;
      const other = plainNames.get(task.name);
      if (other !== undefined) {
        expander.issues.push({
          code: 'duplicate-task',
          path: ['tasks', j, 'name'],
          message: `duplicate task name "${task.name}" (tasks[${other}] has it; this one is a matrix task)`,
        });
      }
    });
    for (const entry of built) {
      if (!isRecord(entry.task) || !Array.isArray(entry.task.depends_on)) continue;
      const list: unknown[] = [];
      const origins: number[] = [];
      entry.task.depends_on.forEach((dep: unknown, k) => {
        const expansions = typeof dep === 'string' ? matrixTasks.get(dep) : undefined;
        if (expansions === undefined) {
          list.push(dep);
          origins.push(k);
        } else if (dep === entry.base) {
          expander.issues.push({
            code: 'self-dependency',
            path: ['tasks', entry.origin.source, 'depends_on', k],
            message: `matrix task "${entry.base}" depends on itself`,
          });
        } else {
          for (const name of expansions) {
            list.push(name);
            origins.push(k);
          }
        }
      });
      entry.task = { ...entry.task, depends_on: list };
      entry.origin.dependsOn = origins;
    }
  }

  const value: Record<string, unknown> = { ...raw, tasks: built.map((b) => b.task) };
  const scope = noMatrix('');
  if (typeof raw.default_queue === 'string')
    value.default_queue = expander.substitute(raw.default_queue, scope, 'text', ['default_queue'], 'default_queue');
  // The values used replace the declarations: what is stored says what ran.
  if (params.values.size > 0) value.params = Object.fromEntries(params.values);
  else delete value.params;
  return {
    value,
    issues: [...params.issues, ...expander.issues],
    warnings,
    tasks: built.map((b) => b.origin),
    changed: expander.changed,
    matrixTasks,
  };
}

/** The path in the file that a path into an expanded definition comes from. */
export function originPath(path: readonly PathSegment[], tasks: readonly TaskOrigin[]): PathSegment[] {
  if (path[0] !== 'tasks' || typeof path[1] !== 'number') return [...path];
  const origin = tasks[path[1]];
  if (origin === undefined) return [...path];
  const out: PathSegment[] = ['tasks', origin.source, ...path.slice(2)];
  if (path[2] === 'depends_on' && typeof path[3] === 'number') out[3] = origin.dependsOn[path[3]] ?? path[3];
  return out;
}
