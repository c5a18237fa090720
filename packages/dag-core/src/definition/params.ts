import { describeValue, quoteShort } from '../wire/internal';
import type { PathSegment } from './path';
import type { RawIssue } from './raw-issue';
import { unknownNameHint } from './hints';

function hintOf(hint: string | undefined): { hint?: string } {
  return hint === undefined ? {} : { hint };
}
import { REFERENCE_NAME_PATTERN } from './references';

/**
 * Workflow parameters: `params:` declares each with its default (or, in the long form, its type
 * and no default: the parameter must then be given), `--param KEY=VALUE` and a params file
 * override them, and the resolved values are put into the definition where `${{ params.KEY }}`
 * stands and into every task's environment as `JOBQ_PARAM_<KEY>`.
 */

/** A parameter or matrix value: a scalar. */
export type ParamValue = string | number | boolean;

/** The type of a parameter: named in the long form, else the type of its default. */
export type ParamType = 'string' | 'number' | 'integer' | 'boolean';

/** Overrides of a workflow's parameter defaults (`workflow submit`/`run`/`validate --param`, `--params-file`). */
export interface ParamOverrides {
  /** Typed values, as read from a params file; each must have its parameter's type. */
  values?: Readonly<Record<string, unknown>>;
  /** How messages name where `values` came from (default "the params file"). */
  valuesSource?: string;
  /** `--param KEY=VALUE` texts, read as each parameter's type; they win over `values`. */
  text?: Readonly<Record<string, string>>;
}

/** Every task gets parameter KEY in its environment as `JOBQ_PARAM_<KEY upper-cased>`. */
export const PARAM_ENV_PREFIX = 'JOBQ_PARAM_';

const PARAM_TYPES: readonly ParamType[] = ['string', 'number', 'integer', 'boolean'];
const LONG_FORM_KEYS = ['type', 'default', 'description'];
const NAME = new RegExp(REFERENCE_NAME_PATTERN);
/** A decimal number as a `--param` text: no hex, no `Infinity`, no spaces. */
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why `value` cannot be a parameter or matrix value (a scalar that fits an environment variable), or null. */
export function scalarProblem(value: unknown): string | null {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return 'contains a NUL character (U+0000), which no environment variable can hold';
    if (value.includes('${{')) return 'contains "${{": a value is put in as it is, never read as a reference';
    return null;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? null : `must be a finite number, got ${String(value)}`;
  if (typeof value === 'boolean') return null;
  return `must be a string, a number or a boolean, got ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : typeof value}`;
}

/** A value as text: in kwargs strings, queues and environment variables. */
export function valueText(value: ParamValue): string {
  return typeof value === 'string' ? value : String(value);
}

function typeOf(value: ParamValue): ParamType {
  return typeof value === 'string' ? 'string' : typeof value === 'boolean' ? 'boolean' : 'number';
}

function fitsType(value: ParamValue, type: ParamType): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isSafeInteger(value);
  return typeOf(value) === type;
}

const TYPE_WORDS: Record<ParamType, string> = { string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean' };

/** A `--param` text read as `type`, or undefined when it is not one. */
function fromText(text: string, type: ParamType): ParamValue | undefined {
  switch (type) {
    case 'string':
      return text;
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : undefined;
    case 'integer':
      return /^[+-]?[0-9]+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined;
    case 'number':
      return DECIMAL.test(text) && Number.isFinite(Number(text)) ? Number(text) : undefined;
  }
}

interface Declaration {
  type: ParamType;
  default: ParamValue | undefined;
}

/** The outcome of {@link resolveParams}. */
export interface ResolvedParams {
  /** The value of each declared parameter that has one, in declaration order. */
  values: Map<string, ParamValue>;
  /** The names of the parameters declared, in order. */
  declared: string[];
  /** Declared parameters without a usable value (a problem was reported): references to them are not reported again. */
  broken: Set<string>;
  issues: RawIssue[];
}

function readDeclaration(name: string, spec: unknown, at: PathSegment[], issues: RawIssue[]): Declaration | null {
  const bad = (message: string, path: PathSegment[] = at): null => {
    issues.push({ code: 'bad-param', path, message: `parameter "${name}": ${message}` });
    return null;
  };
  if (!isRecord(spec)) {
    const problem = scalarProblem(spec);
    if (problem !== null) return bad(`${problem} (or {type, default, description})`);
    return { type: typeOf(spec as ParamValue), default: spec as ParamValue };
  }
  for (const key of Object.keys(spec)) {
    if (!LONG_FORM_KEYS.includes(key))
      return bad(`unknown field ${quoteShort(key)} (a parameter has type, default and description)`, [...at, key]);
  }
  if (spec.description !== undefined && typeof spec.description !== 'string')
    return bad('description must be a string', [...at, 'description']);
  const declared = spec.type;
  if (declared !== undefined && !PARAM_TYPES.includes(declared as ParamType)) {
    return bad(`type must be "string", "number", "integer" or "boolean", got ${describeValue(declared)}`, [...at, 'type']);
  }
  if (spec.default === undefined || spec.default === null)
    return { type: (declared as ParamType | undefined) ?? 'string', default: undefined };
  const problem = scalarProblem(spec.default);
  if (problem !== null) return bad(`the default ${problem}`, [...at, 'default']);
  const dflt = spec.default as ParamValue;
  const type = (declared as ParamType | undefined) ?? typeOf(dflt);
  if (!fitsType(dflt, type)) return bad(`the default must be ${TYPE_WORDS[type]}, got ${describeValue(dflt)}`, [...at, 'default']);
  return { type, default: dflt };
}

/**
 * Reads the `params` declarations of a workflow file and applies the overrides: every value has
 * its parameter's type, every parameter without a default is given, no override names an
 * undeclared parameter. Issues sit at `params` (an override of an unknown parameter) or at the
 * parameter's declaration.
 */
export function resolveParams(declared: unknown, overrides: ParamOverrides = {}): ResolvedParams {
  const issues: RawIssue[] = [];
  const values = new Map<string, ParamValue>();
  const broken = new Set<string>();
  const declarations = new Map<string, Declaration>();
  if (declared !== undefined && declared !== null && !isRecord(declared)) {
    issues.push({
      code: 'bad-param',
      path: ['params'],
      message: `params must be an object of parameters with their defaults, got ${describeValue(declared)}`,
    });
  }
  const envNames = new Map<string, string>();
  for (const [name, spec] of Object.entries(isRecord(declared) ? declared : {})) {
    const at: PathSegment[] = ['params', name];
    if (!NAME.test(name)) {
      issues.push({
        code: 'bad-param',
        path: at,
        target: 'key',
        message: `${quoteShort(name)} is not a parameter name: use letters, digits and "_", not starting with a digit`,
      });
      continue;
    }
    const env = name.toUpperCase();
    const clash = envNames.get(env);
    if (clash !== undefined) {
      issues.push({
        code: 'bad-param',
        path: at,
        target: 'key',
        message: `parameters "${clash}" and "${name}" would both be ${PARAM_ENV_PREFIX}${env}: rename one`,
      });
      broken.add(name);
      continue;
    }
    envNames.set(env, name);
    const declaration = readDeclaration(name, spec, at, issues);
    if (declaration === null) broken.add(name);
    else declarations.set(name, declaration);
  }

  const known = [...envNames.values()];
  const unknown = (name: string, source: string, path: PathSegment[]) => {
    issues.push({
      code: 'unknown-param',
      path,
      ...(path.length > 0 ? { target: 'key' as const } : {}),
      message: `${source}: the workflow has no parameter ${quoteShort(name)} (${known.length === 0 ? 'it declares none' : `its parameters: ${known.join(', ')}`})`,
      ...hintOf(unknownNameHint(name, known)),
    });
  };
  const where: PathSegment[] = isRecord(declared) ? ['params'] : [];
  const given = new Map<string, ParamValue>();
  const source = overrides.valuesSource ?? 'the params file';
  for (const [name, value] of Object.entries(overrides.values ?? {})) {
    const declaration = declarations.get(name);
    if (declaration === undefined) {
      if (!broken.has(name)) unknown(name, source, where);
      continue;
    }
    const problem = scalarProblem(value);
    if (problem !== null || !fitsType(value as ParamValue, declaration.type)) {
      issues.push({
        code: 'bad-param',
        path: ['params', name],
        message: `${source}: parameter "${name}" ${problem ?? `must be ${TYPE_WORDS[declaration.type]}, got ${describeValue(value)}`}`,
      });
      broken.add(name);
      continue;
    }
    given.set(name, value as ParamValue);
  }
  for (const [name, text] of Object.entries(overrides.text ?? {})) {
    const declaration = declarations.get(name);
    if (declaration === undefined) {
      if (!broken.has(name)) unknown(name, `--param ${name}`, where);
      continue;
    }
    const value = fromText(text, declaration.type);
    const problem =
      value === undefined
        ? `is ${TYPE_WORDS[declaration.type]} parameter; ${quoteShort(text)} is not ${TYPE_WORDS[declaration.type]}`
        : scalarProblem(value);
    if (problem !== null || value === undefined) {
      issues.push({
        code: 'bad-param',
        path: ['params', name],
        message: `--param ${name}=${quoteShort(text).slice(1, -1)}: "${name}" ${problem}`,
      });
      broken.add(name);
      continue;
    }
    given.set(name, value);
  }
  for (const [name, declaration] of declarations) {
    if (broken.has(name)) continue;
    const value = given.get(name) ?? declaration.default;
    if (value === undefined) {
      issues.push({
        code: 'missing-param',
        path: ['params', name],
        message: `parameter "${name}" has no default and was not given: pass --param ${name}=VALUE or set it in a --params-file`,
      });
      broken.add(name);
      continue;
    }
    values.set(name, value);
  }
  return { values, broken, issues, declared: [...envNames.values()] };
}
