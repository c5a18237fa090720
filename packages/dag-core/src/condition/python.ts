/**
 * A small model of Python's semantics over JSON values: type names, truthiness, equality,
 * ordering and `in`. Values arrive as `unknown` (decoded task outputs) and are classified
 * lazily rather than normalised up front, because outputs may be large.
 */

/** The Python type a JSON value maps to; used for dispatch and in error messages. */
export type PythonType = 'NoneType' | 'bool' | 'int' | 'float' | 'str' | 'list' | 'dict';

/** An ordering operator. */
export type OrderOperator = '<' | '<=' | '>' | '>=';

/** A Python-style TypeError: the message is what the user sees. */
export class PythonTypeError extends Error {}

/**
 * The TypeError Python raises when an ordering meets None (`None > 0`, or `[1, None] < [1, 2]`,
 * where the first unequal pair holds a None). The condition language reads it as unknown rather
 * than as an error (docs/conditions.md).
 */
export class PythonNoneOrderingError extends PythonTypeError {}

/** Python's recursion limit is about 1000 too; it also stops cycles in non-JSON objects. */
const MAX_VALUE_DEPTH = 1000;

/**
 * The Python type of a value. Anything that is not JSON (undefined, functions, symbols,
 * bigints) counts as `None`; a JS number is `int` when it is an integer, else `float`.
 */
export function pythonType(value: unknown): PythonType {
  switch (typeof value) {
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) ? 'int' : 'float';
    case 'string':
      return 'str';
    case 'object':
      if (value === null) return 'NoneType';
      return Array.isArray(value) ? 'list' : 'dict';
    default:
      return 'NoneType';
  }
}

/** Python truthiness: None, False, 0, 0.0, "", [] and {} are false (NaN is true, as in Python). */
export function truthy(value: unknown): boolean {
  switch (pythonType(value)) {
    case 'NoneType':
      return false;
    case 'bool':
      return value === true;
    case 'int':
    case 'float':
      return value !== 0;
    case 'str':
      return (value as string).length > 0;
    case 'list':
      return (value as unknown[]).length > 0;
    case 'dict':
      return Object.keys(value as object).length > 0;
  }
}

/** Reads an own key of a dict; inherited properties such as `constructor` are not keys. */
export function dictGet(value: unknown, key: string): unknown {
  if (pythonType(value) !== 'dict') return null;
  const dict = value as Record<string, unknown>;
  return Object.hasOwn(dict, key) ? dict[key] : null;
}

function isNumeric(type: PythonType): boolean {
  return type === 'bool' || type === 'int' || type === 'float';
}

function toNumber(value: unknown): number {
  return typeof value === 'boolean' ? Number(value) : (value as number);
}

function checkDepth(depth: number): void {
  if (depth > MAX_VALUE_DEPTH) throw new PythonTypeError('values are nested too deeply to compare');
}

/**
 * Python `==`: bools and numbers compare as numbers (`True == 1`, `1 == 1.0`), a string
 * never equals a number, lists and dicts compare deeply with the same rules.
 */
export function pythonEquals(a: unknown, b: unknown, depth = 0): boolean {
  checkDepth(depth);
  const typeA = pythonType(a);
  const typeB = pythonType(b);
  if (isNumeric(typeA) && isNumeric(typeB)) return toNumber(a) === toNumber(b);
  if (typeA !== typeB) return false;
  switch (typeA) {
    case 'NoneType':
      return true;
    case 'list': {
      const listA = a as unknown[];
      const listB = b as unknown[];
      if (listA.length !== listB.length) return false;
      for (let i = 0; i < listA.length; i += 1) {
        if (!pythonEquals(listA[i], listB[i], depth + 1)) return false;
      }
      return true;
    }
    case 'dict': {
      const keysA = Object.keys(a as object);
      if (keysA.length !== Object.keys(b as object).length) return false;
      return keysA.every((key) => Object.hasOwn(b as object, key) && pythonEquals(dictGet(a, key), dictGet(b, key), depth + 1));
    }
    default:
      return a === b;
  }
}

/**
 * Python ordering: numbers and bools together, strings by code point, lists
 * lexicographically (the first unequal pair decides). Anything else raises, like Python 3.
 * @throws PythonNoneOrderingError when the deciding pair holds a None
 * @throws PythonTypeError when the operands cannot be ordered otherwise
 */
export function pythonCompare(op: OrderOperator, a: unknown, b: unknown, depth = 0): boolean {
  checkDepth(depth);
  const typeA = pythonType(a);
  const typeB = pythonType(b);
  if (isNumeric(typeA) && isNumeric(typeB)) return applyOrder(op, toNumber(a), toNumber(b));
  if (typeA === 'str' && typeB === 'str') return applyOrder(op, compareCodePoints(a as string, b as string), 0);
  if (typeA === 'list' && typeB === 'list') {
    const listA = a as unknown[];
    const listB = b as unknown[];
    const common = Math.min(listA.length, listB.length);
    for (let i = 0; i < common; i += 1) {
      if (!pythonEquals(listA[i], listB[i], depth + 1)) return pythonCompare(op, listA[i], listB[i], depth + 1);
    }
    return applyOrder(op, listA.length, listB.length);
  }
  const message = `cannot compare ${typeA} and ${typeB} with ${op}`;
  if (typeA === 'NoneType' || typeB === 'NoneType') throw new PythonNoneOrderingError(message);
  throw new PythonTypeError(message);
}

function applyOrder(op: OrderOperator, a: number, b: number): boolean {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

/**
 * Compares by code point, as Python does; plain `<` compares UTF-16 code units, which puts
 * astral characters (emoji…) before U+E000–U+FFFF.
 */
function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  while (i < a.length && i < b.length) {
    const ca = a.codePointAt(i) ?? 0;
    const cb = b.codePointAt(i) ?? 0;
    if (ca !== cb) return ca < cb ? -1 : 1;
    // Equal code points have equal lengths, so one index serves both strings.
    i += ca > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}

/**
 * Python `item in container`: substring for strings (item must be a string), membership by
 * `==` for lists, key membership for dicts (non-string keys are never present; lists and
 * dicts are unhashable).
 * @throws PythonTypeError for the combinations Python rejects
 */
export function pythonContains(container: unknown, item: unknown): boolean {
  const containerType = pythonType(container);
  switch (containerType) {
    case 'str':
      if (typeof item !== 'string') {
        throw new PythonTypeError(`'in <string>' requires string as left operand, not ${pythonType(item)}`);
      }
      return (container as string).includes(item);
    case 'list':
      return (container as unknown[]).some((element) => pythonEquals(element, item));
    case 'dict': {
      const itemType = pythonType(item);
      if (itemType === 'list' || itemType === 'dict') throw new PythonTypeError(`unhashable type: '${itemType}'`);
      return typeof item === 'string' && Object.hasOwn(container as object, item);
    }
    default:
      throw new PythonTypeError(`argument of type '${containerType}' is not iterable`);
  }
}
