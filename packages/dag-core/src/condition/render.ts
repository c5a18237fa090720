/**
 * Text for skip reasons: expressions printed back from the tree, and values shortened to one
 * bounded line. Everything a user controls (task names, keys, strings) is printed quoted and
 * escaped, so a reason is always one line and its fixed words cannot be forged by data.
 */
import type { ConditionNode, LiteralValue, PathSegment, ReferenceNode } from './parser';
import { pythonType } from './python';

/** Longest value shown in a reason, in characters; longer ones end in `…`. */
export const MAX_VALUE_TEXT = 60;

/** Longest printed expression in a reason. */
const MAX_EXPRESSION_TEXT = 120;

/** Inside an aggregate: the dependency printed in place of its glob. */
export interface Binding {
  glob: string;
  name: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `.field` for identifiers, `["k-1"]` for other keys, `[0]` for indexes. */
export function renderSegment(segment: PathSegment): string {
  if (typeof segment === 'number') return `[${segment}]`;
  return IDENTIFIER.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
}

/** `inputs.a` or `inputs["train-gpu"]`. */
export function renderRoot(name: string): string {
  return IDENTIFIER.test(name) ? `inputs.${name}` : `inputs[${JSON.stringify(name)}]`;
}

/** A reference with only its first `depth` path segments (all of them by default). */
export function renderReference(node: ReferenceNode, binding: Binding | undefined, depth = node.path.length): string {
  let root: string;
  if (node.root.kind === 'task') root = renderRoot(node.root.name);
  else if (binding !== undefined && binding.glob === node.root.pattern) root = renderRoot(binding.name);
  else root = `inputs[${JSON.stringify(node.root.pattern)}]`;
  return shorten(root + node.path.slice(0, depth).map(renderSegment).join(''), MAX_EXPRESSION_TEXT);
}

/** A literal as it would be written: `None`, `True`, `0.9`, `"x"`. */
export function renderLiteral(value: LiteralValue): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  return typeof value === 'string' ? shorten(JSON.stringify(value), MAX_VALUE_TEXT) : String(value);
}

/** An expression printed back from its tree, compound operands in parentheses. */
export function renderNode(node: ConditionNode, binding?: Binding): string {
  return shorten(print(node, binding), MAX_EXPRESSION_TEXT);
}

function print(node: ConditionNode, binding: Binding | undefined): string {
  const operand = (child: ConditionNode): string => {
    const text = print(child, binding);
    return child.type === 'and' || child.type === 'or' || child.type === 'not' || child.type === 'compare' ? `(${text})` : text;
  };
  switch (node.type) {
    case 'literal':
      return renderLiteral(node.value);
    case 'list':
      return `[${node.items.map((item) => print(item, binding)).join(', ')}]`;
    case 'reference':
      return renderReference(node, binding);
    case 'not':
      return `not ${operand(node.operand)}`;
    case 'and':
    case 'or':
      return node.operands.map(operand).join(` ${node.type} `);
    case 'compare':
      return [operand(node.left), ...node.comparisons.map((c) => `${c.op} ${operand(c.right)}`)].join(' ');
    case 'aggregate': {
      // The aggregate's own glob is printed, not the binding of an enclosing one (they cannot nest).
      const argument = print(node.argument, undefined);
      return `${node.fn}(${argument}${node.k === undefined ? '' : `, ${node.k}`})`;
    }
    default:
      return '?';
  }
}

/**
 * A value on one line, at most `max` characters: JSON for outputs (`0.85`, `"a"`, `null`,
 * `{"k": [1, 2]}`), built with a budget so that a large output costs only what is shown.
 */
export function renderValue(value: unknown, max = MAX_VALUE_TEXT): string {
  const out: string[] = [];
  const budget = { left: max + 1 };
  write(value, out, budget, 0);
  const text = out.join('');
  return shorten(text, max);
}

function write(value: unknown, out: string[], budget: { left: number }, depth: number): void {
  if (budget.left <= 0) return;
  const push = (text: string): void => {
    out.push(text.length > budget.left ? text.slice(0, budget.left) : text);
    budget.left -= text.length;
  };
  switch (pythonType(value)) {
    case 'NoneType':
      push('null');
      return;
    case 'bool':
    case 'int':
    case 'float':
      push(String(value));
      return;
    case 'str':
      push(JSON.stringify((value as string).slice(0, budget.left + 1)));
      return;
    case 'list': {
      if (depth > 20) return push('[…]');
      push('[');
      const items = value as unknown[];
      for (let i = 0; i < items.length && budget.left > 0; i++) {
        if (i > 0) push(', ');
        write(items[i], out, budget, depth + 1);
      }
      push(']');
      return;
    }
    case 'dict': {
      if (depth > 20) return push('{…}');
      push('{');
      let first = true;
      for (const key of Object.keys(value as object)) {
        if (budget.left <= 0) break;
        if (!first) push(', ');
        first = false;
        push(`${JSON.stringify(key.slice(0, budget.left + 1))}: `);
        write((value as Record<string, unknown>)[key], out, budget, depth + 1);
      }
      push('}');
      return;
    }
  }
}

/** The keys of an output, for "it has: accuracy, loss": plain keys bare, others quoted; bounded. */
export function renderKeys(keys: readonly string[], max = MAX_VALUE_TEXT): string {
  const shown: string[] = [];
  let length = 0;
  for (const key of keys) {
    const text = /^[A-Za-z0-9_.-]+$/.test(key) ? key : JSON.stringify(key);
    if (shown.length > 0 && length + text.length + 2 > max) {
      shown.push('…');
      break;
    }
    shown.push(shorten(text, max));
    length += text.length + 2;
  }
  return shown.join(', ');
}

/** Text cut to `max` characters, ending in `…` when cut. */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  // Never split a surrogate pair: half an emoji is not text.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}
