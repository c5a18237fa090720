/**
 * Why a condition came out as it did: the facts the evaluator keeps (which references and
 * comparisons decided the result, with their values) and their rendering as one line of words.
 * The wording is described in docs/conditions.md.
 */
import type { CompareOperator, ConditionNode, ReferenceNode } from './parser';
import { MAX_VALUE_TEXT, renderKeys, renderLiteral, renderNode, renderReference, renderValue, shorten, type Binding } from './render';
import { pythonType } from './python';

/** The truth of a condition or of one of its parts: Kleene's three values. */
export type Truth = boolean | 'unknown';

/** Marks a value that is unknown (a comparison with a null operand); never a JSON value. */
export const UNKNOWN: unique symbol = Symbol('unknown');

/** Why a reference reads null. `depth` counts the path segments read before. */
export type NullOrigin =
  /** The parent's output is null: it did not complete, or completed without an output. */
  | { kind: 'no-output' }
  /** The output holds null at the first `depth` segments. */
  | { kind: 'explicit'; depth: number }
  /** Segment `depth` cannot be looked up in `owner` (the value at the first `depth` segments). */
  | { kind: 'no-field'; depth: number; owner: unknown }
  /** Index `depth` is past the end of a list or string of `length` items. */
  | { kind: 'out-of-range'; depth: number; length: number };

/** One side of a comparison, or a reference read for its truth. */
export interface Operand {
  node: ConditionNode;
  value: unknown;
  binding: Binding | undefined;
  /** For a reference: the task it reads. */
  task?: string;
  /** For a reference reading null: why. */
  origin?: NullOrigin;
}

/** Something that decided a result. */
export type Fact = { kind: 'value'; operand: Operand } | { kind: 'link'; op: CompareOperator; left: Operand; right: Operand; truth: Truth };

/** A bounded list of facts: the first few kept, all of them counted. */
export interface Facts {
  items: readonly Fact[];
  total: number;
}

/** Facts kept per list; only these can be shown. */
export const MAX_FACTS = 5;

export const NO_FACTS: Facts = { items: [], total: 0 };

export function oneFact(fact: Fact): Facts {
  return { items: [fact], total: 1 };
}

/** Several lists as one, keeping at most {@link MAX_FACTS}. */
export function joinFacts(lists: readonly Facts[]): Facts {
  if (lists.length === 1) return lists[0]!;
  const items: Fact[] = [];
  let total = 0;
  for (const list of lists) {
    total += list.total;
    for (const fact of list.items) if (items.length < MAX_FACTS) items.push(fact);
  }
  return { items, total };
}

/** What the evaluation knows about the tasks it read, for the words of a reason. */
export interface ExplainContext {
  /** The status of a parent (`failed`, `completed`…), when known. */
  statusOf(name: string): string | undefined;
}

/** The rendered facts: one line, and whether one of them is a field missing from an output. */
export interface Explanation {
  text: string;
  missingField: boolean;
}

/** The facts as `fact; fact; and N more`, each rendered once. */
export function explain(facts: Facts, context: ExplainContext): Explanation {
  const seen = new Set<string>();
  const parts: string[] = [];
  let missingField = false;
  for (const fact of facts.items) {
    for (const part of renderFact(fact, context)) {
      missingField ||= part.missingField;
      if (seen.has(part.text)) continue;
      seen.add(part.text);
      parts.push(part.text);
    }
  }
  const more = facts.total - facts.items.length;
  if (more > 0) parts.push(`and ${more} more`);
  return { text: parts.join('; '), missingField };
}

function renderFact(fact: Fact, context: ExplainContext): Explanation[] {
  if (fact.kind === 'value') {
    const { operand } = fact;
    if (operand.value === null && operand.origin !== undefined) return [describeNull(operand, operand.origin, context)];
    return [{ text: describeOperand(operand, 'left'), missingField: false }];
  }
  const { left, right, op, truth } = fact;
  const nulls = [left, right].filter((o) => o.value === null && o.origin !== undefined);
  if (truth === 'unknown') {
    if (nulls.length > 0) return nulls.map((o) => describeNull(o, o.origin!, context));
    return [{ text: `${text(left)} ${op} ${text(right)} is unknown (a null operand)`, missingField: false }];
  }
  // A null that is not simply in the output (a parent that did not complete, a missing field)
  // explains more than the comparison it made false or true.
  const informative = nulls.filter((o) => o.origin!.kind !== 'explicit');
  if (informative.length > 0) return informative.map((o) => describeNull(o, o.origin!, context));
  const verdict = truth ? '' : 'not ';
  return [{ text: `${describeOperand(left, 'left')}, ${verdict}${op} ${describeOperand(right, 'right')}`, missingField: false }];
}

function text(operand: Operand): string {
  return operand.node.type === 'reference' ? renderReference(operand.node, operand.binding) : renderNode(operand.node, operand.binding);
}

/** `inputs.a.x = 0.85` on the left, `inputs.b.y (= 2)` on the right, a literal as written. */
function describeOperand(operand: Operand, side: 'left' | 'right'): string {
  if (operand.node.type === 'literal') return renderLiteral(operand.node.value);
  if (isConstant(operand.node)) return renderNode(operand.node);
  if (operand.value === UNKNOWN) return `${text(operand)} (unknown)`;
  const value = renderValue(operand.value);
  return side === 'left' ? `${text(operand)} = ${value}` : `${text(operand)} (= ${value})`;
}

/** A literal, or a list of them: written as it is, its value adds nothing. */
function isConstant(node: ConditionNode): boolean {
  return node.type === 'literal' || (node.type === 'list' && node.items.every(isConstant));
}

const STATUS_WORDS: Readonly<Record<string, string>> = {
  failed: 'failed',
  upstream_failed: 'is upstream_failed',
  cancelled: 'was cancelled',
  skipped: 'was skipped',
  pending: 'has not finished',
  ready: 'has not finished',
  running: 'has not finished',
};

function describeNull(operand: Operand, origin: NullOrigin, context: ExplainContext): Explanation {
  const node = operand.node as ReferenceNode;
  const task = operand.task ?? '?';
  const whole = renderReference(node, operand.binding);
  switch (origin.kind) {
    case 'no-output': {
      const status = context.statusOf(task);
      if (status === 'completed') {
        const first = node.path[0];
        if (first === undefined) return plain(`${whole} is null (${task} completed without an output)`);
        return {
          text: `output of ${JSON.stringify(task)} has no field ${renderKey(first)}; ${task} completed without an output`,
          missingField: true,
        };
      }
      const words = status === undefined ? undefined : STATUS_WORDS[status];
      return plain(`${whole} is null (${words === undefined ? `no output of ${task}` : `${task} ${words}`})`);
    }
    case 'explicit':
      if (origin.depth >= node.path.length) return plain(`${whole} is null`);
      return plain(`${whole} is null (${renderReference(node, operand.binding, origin.depth)} is null)`);
    case 'no-field': {
      const owner = origin.depth === 0 ? `output of ${JSON.stringify(task)}` : renderReference(node, operand.binding, origin.depth);
      const key = renderKey(node.path[origin.depth]!);
      let has: string;
      if (pythonType(origin.owner) === 'dict') {
        const keys = Object.keys(origin.owner as object);
        has = keys.length === 0 ? 'it has no fields' : `it has: ${renderKeys(keys)}`;
      } else {
        has = `it is ${renderValue(origin.owner)}`;
      }
      return { text: `${owner} has no field ${key}; ${has}`, missingField: true };
    }
    case 'out-of-range': {
      const owner = renderReference(node, operand.binding, origin.depth);
      return plain(`${whole} is null (${owner} has ${origin.length} item${origin.length === 1 ? '' : 's'})`);
    }
  }
}

function renderKey(segment: string | number): string {
  return typeof segment === 'number' ? `[${segment}]` : shorten(JSON.stringify(segment), MAX_VALUE_TEXT);
}

function plain(text: string): Explanation {
  return { text, missingField: false };
}
