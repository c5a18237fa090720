import type { Result } from '../result';
import { describeValue, quoteShort } from '../wire/internal';
import { MAX_MATRIX_AXIS_PRODUCT, MAX_MATRIX_TASKS } from './limits';
import { taskNameProblem } from './names';
import { scalarProblem, valueText, type ParamValue } from './params';
import type { PathSegment } from './path';
import type { RawIssue } from './raw-issue';
import { REFERENCE_NAME_PATTERN } from './references';

/**
 * Matrix tasks: `matrix: { lr: [0.1, 0.01], seed: [1, 2, 3] }` on a task makes one task per
 * combination of the axes, with `include` and `exclude` lists read as GitHub Actions reads them.
 * Each task is named `NAME(KEY=VALUE,…)`, its values written so that the name holds no glob
 * character, and gets each value in its environment as `JOBQ_MATRIX_<KEY>`.
 */

/** Every matrix task gets its combination's value of KEY as `JOBQ_MATRIX_<KEY upper-cased>`. */
export const MATRIX_ENV_PREFIX = 'JOBQ_MATRIX_';

/** One task of an expanded matrix. */
export interface MatrixCombination {
  name: string;
  /** The combination's values: the axes in the order written, then the keys only `include` brings. */
  values: Map<string, ParamValue>;
}

/** A matrix, expanded. */
export interface ExpandedMatrix {
  /** Every key a combination may have (axes and the keys of include entries). */
  keys: Set<string>;
  combinations: MatrixCombination[];
}

const RESERVED = ['include', 'exclude'];
const NAME = new RegExp(REFERENCE_NAME_PATTERN);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Characters a value keeps in a task name; every other one is written %XX (its UTF-8 bytes). */
const NAME_SAFE = /^[A-Za-z0-9._+:@~-]$/;

/**
 * A matrix value as it appears in a task name: numbers and booleans as written out, strings with
 * every character but letters, digits and `._+:@~-` percent-encoded (UTF-8). So names hold no
 * `*`, `?`, `[`, `/`, `,`, `=`, `(` or `)` from a value, and two strings never read the same.
 */
export function matrixNameValue(value: ParamValue): string {
  const text = valueText(value);
  let out = '';
  for (const ch of text) {
    if (NAME_SAFE.test(ch)) {
      out += ch;
      continue;
    }
    let code = ch.codePointAt(0) ?? 0xfffd;
    // A lone surrogate has no UTF-8 form: write the replacement character, as encoders do.
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    for (const byte of utf8Bytes(code)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function utf8Bytes(code: number): number[] {
  if (code < 0x80) return [code];
  if (code < 0x800) return [0xc0 | (code >> 6), 0x80 | (code & 0x3f)];
  if (code < 0x10000) return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
  return [0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
}

/** The name of the task of a combination: `train(lr=0.1,seed=1)`. */
export function matrixTaskName(base: string, values: Iterable<[string, ParamValue]>): string {
  const parts: string[] = [];
  for (const [key, value] of values) parts.push(`${key}=${matrixNameValue(value)}`);
  return `${base}(${parts.join(',')})`;
}

/** The `include` or `exclude` entries, checked: objects of key → scalar. */
function readEntries(
  field: 'include' | 'exclude',
  list: unknown,
  axes: ReadonlySet<string>,
  at: PathSegment[],
  issues: RawIssue[],
): Array<Map<string, ParamValue>> {
  const path = [...at, field];
  if (!Array.isArray(list)) {
    issues.push({
      code: 'bad-matrix',
      path,
      message: `matrix.${field} must be a list of objects (KEY: VALUE), got ${describeValue(list)}`,
    });
    return [];
  }
  const entries: Array<Map<string, ParamValue>> = [];
  list.forEach((entry: unknown, i) => {
    if (!isRecord(entry) || Object.keys(entry).length === 0) {
      issues.push({
        code: 'bad-matrix',
        path: [...path, i],
        message: `matrix.${field}[${i}] must be a non-empty object of KEY: VALUE, got ${isRecord(entry) ? 'an empty object' : describeValue(entry)}`,
      });
      return;
    }
    const values = new Map<string, ParamValue>();
    for (const [key, value] of Object.entries(entry)) {
      if (!NAME.test(key) || RESERVED.includes(key)) {
        issues.push({
          code: 'bad-matrix',
          path: [...path, i, key],
          target: 'key',
          message: `${quoteShort(key)} is not a matrix key: use letters, digits and "_", not starting with a digit (include and exclude are reserved)`,
        });
        continue;
      }
      if (field === 'exclude' && !axes.has(key)) {
        issues.push({
          code: 'bad-matrix',
          path: [...path, i, key],
          target: 'key',
          message: `matrix.exclude[${i}] names "${key}", which is not an axis of the matrix (${[...axes].join(', ') || 'it has none'})`,
        });
        continue;
      }
      const problem = scalarProblem(value);
      if (problem !== null) {
        issues.push({ code: 'bad-matrix', path: [...path, i, key], message: `matrix.${field}[${i}].${key} ${problem}` });
        continue;
      }
      values.set(key, value as ParamValue);
    }
    entries.push(values);
  });
  return entries;
}

function matches(
  combination: ReadonlyMap<string, ParamValue>,
  entry: ReadonlyMap<string, ParamValue>,
  only?: ReadonlyMap<string, unknown>,
): boolean {
  for (const [key, value] of entry) {
    if (only !== undefined && !only.has(key)) continue;
    if (combination.get(key) !== value) return false;
  }
  return true;
}

/** The outcome of {@link expandMatrix}. */
export type MatrixResult = Result<ExpandedMatrix, { issues: RawIssue[] }, { warnings: RawIssue[] }>;

/**
 * Expands the `matrix` of task `base` (at path `at`): the product of the axes (the first axis
 * varying slowest), without the combinations an `exclude` entry matches (every key it names
 * equal), then each `include` entry added to every combination whose axis values it does not
 * contradict (its other keys set, overwriting what an earlier include set), or, when it fits
 * none, added as a combination of its own. Never throws.
 */
export function expandMatrix(base: string, matrix: unknown, at: PathSegment[]): MatrixResult {
  const issues: RawIssue[] = [];
  const warnings: RawIssue[] = [];
  if (!isRecord(matrix)) {
    return {
      ok: false,
      issues: [
        {
          code: 'bad-matrix',
          path: at,
          message: `matrix must be an object of axes (KEY: [VALUES…]) with optional include and exclude lists, got ${describeValue(matrix)}`,
        },
      ],
    };
  }
  const axes = new Map<string, ParamValue[]>();
  /** Every axis written, a malformed one included (an exclude may name it). */
  const written = new Set<string>();
  for (const [key, list] of Object.entries(matrix)) {
    if (RESERVED.includes(key)) continue;
    written.add(key);
    const path = [...at, key];
    if (!NAME.test(key)) {
      issues.push({
        code: 'bad-matrix',
        path,
        target: 'key',
        message: `${quoteShort(key)} is not a matrix key: use letters, digits and "_", not starting with a digit`,
      });
      continue;
    }
    if (!Array.isArray(list)) {
      issues.push({ code: 'bad-matrix', path, message: `matrix axis "${key}" must be a list of values, got ${describeValue(list)}` });
      continue;
    }
    if (list.length === 0) {
      issues.push({ code: 'bad-matrix', path, message: `matrix axis "${key}" is empty: it would give no task at all` });
      continue;
    }
    const values: ParamValue[] = [];
    list.forEach((value: unknown, i) => {
      const problem = scalarProblem(value);
      if (problem !== null)
        issues.push({ code: 'bad-matrix', path: [...path, i], message: `matrix axis "${key}", value ${i + 1}: ${problem}` });
      else if (values.includes(value as ParamValue))
        issues.push({ code: 'bad-matrix', path: [...path, i], message: `matrix axis "${key}" lists ${describeValue(value)} twice` });
      else values.push(value as ParamValue);
    });
    axes.set(key, values);
  }
  const exclude = matrix.exclude === undefined ? [] : readEntries('exclude', matrix.exclude, written, at, issues);
  const include = matrix.include === undefined ? [] : readEntries('include', matrix.include, written, at, issues);
  if (axes.size === 0 && include.length === 0 && issues.length === 0) {
    issues.push({ code: 'bad-matrix', path: at, message: 'a matrix needs at least one axis (KEY: [VALUES…]) or an include entry' });
  }
  const keys = new Set<string>(axes.keys());
  for (const entry of include) for (const key of entry.keys()) keys.add(key);
  const envNames = new Map<string, string>();
  for (const key of keys) {
    const clash = envNames.get(key.toUpperCase());
    if (clash !== undefined)
      issues.push({
        code: 'bad-matrix',
        path: at,
        message: `matrix keys "${clash}" and "${key}" would both be ${MATRIX_ENV_PREFIX}${key.toUpperCase()}: rename one`,
      });
    envNames.set(key.toUpperCase(), key);
  }
  if (issues.length > 0) return { ok: false, issues };

  let product = axes.size === 0 ? 0 : 1;
  for (const values of axes.values()) product *= values.length;
  const sizes = [...axes.values()].map((v) => v.length).join(' × ');
  if (product > MAX_MATRIX_AXIS_PRODUCT) {
    return {
      ok: false,
      issues: [
        {
          code: 'matrix-too-large',
          path: at,
          message: `the matrix of task "${base}" has ${sizes} = ${product} combinations; a matrix makes at most ${MAX_MATRIX_TASKS} tasks`,
        },
      ],
    };
  }

  const originals: Array<Map<string, ParamValue>> = [];
  const usedExcludes = new Set<number>();
  const entries = [...axes.entries()];
  for (let n = 0; n < product; n++) {
    const combination = new Map<string, ParamValue>();
    let rest = n;
    for (let a = entries.length - 1; a >= 0; a--) {
      const [key, values] = entries[a]!;
      combination.set(key, values[rest % values.length]!);
      rest = Math.floor(rest / values.length);
    }
    const ordered = new Map(entries.map(([key]) => [key, combination.get(key)!]));
    const excludedBy = exclude.findIndex((entry) => matches(ordered, entry));
    if (excludedBy >= 0) usedExcludes.add(excludedBy);
    else originals.push(ordered);
  }
  exclude.forEach((_, i) => {
    if (!usedExcludes.has(i))
      warnings.push({
        code: 'unused-exclude',
        path: [...at, 'exclude', i],
        message: `matrix.exclude[${i}] of task "${base}" matches no combination of the axes`,
      });
  });

  const added = originals.map(() => new Map<string, ParamValue>());
  const extra: Array<Map<string, ParamValue>> = [];
  for (const entry of include) {
    let fitted = false;
    originals.forEach((combination, i) => {
      if (!matches(combination, entry, axes)) return;
      fitted = true;
      for (const [key, value] of entry) if (!axes.has(key)) added[i]!.set(key, value);
    });
    if (!fitted) extra.push(entry);
  }
  const order = [...keys];
  const combinations = [...originals.map((c, i) => new Map([...c, ...added[i]!])), ...extra].map((values) => {
    const sorted = new Map(order.filter((k) => values.has(k)).map((k) => [k, values.get(k)!]));
    return { name: matrixTaskName(base, sorted), values: sorted };
  });
  if (combinations.length > MAX_MATRIX_TASKS) {
    const counted = `${sizes || '0 axes'}${exclude.length > 0 ? ` − ${product - originals.length} excluded` : ''}${extra.length > 0 ? ` + ${extra.length} included` : ''}`;
    return {
      ok: false,
      issues: [
        {
          code: 'matrix-too-large',
          path: at,
          message: `the matrix of task "${base}" makes ${combinations.length} tasks (${counted}); a matrix makes at most ${MAX_MATRIX_TASKS}`,
        },
      ],
    };
  }
  if (combinations.length === 0) {
    return {
      ok: false,
      issues: [{ code: 'bad-matrix', path: at, message: `the matrix of task "${base}" makes no task: exclude removes every combination` }],
    };
  }
  const seen = new Set<string>();
  for (const { name } of combinations) {
    const problem = taskNameProblem(name);
    if (problem !== null) {
      issues.push({ code: 'bad-matrix', path: at, message: `task name ${quoteShort(name)} of this matrix: ${problem}` });
      break;
    }
    if (seen.has(name)) {
      issues.push({
        code: 'bad-matrix',
        path: at,
        message: `two combinations of this matrix make the task ${quoteShort(name)} (a value written as a string and as a number, or an include entry repeated?)`,
      });
      break;
    }
    seen.add(name);
  }
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, value: { keys, combinations }, warnings };
}
