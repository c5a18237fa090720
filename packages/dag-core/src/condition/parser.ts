/**
 * AST and recursive-descent parser for condition expressions.
 *
 * The parser follows Python's expression grammar (precedence included) well beyond the
 * condition subset: constructs outside the subset are parsed fully, reported as
 * `condition-disallowed` with their column, and replaced by a placeholder so parsing can go
 * on and report every independent problem. Only grammar errors stop the parse.
 */
import type { Issue } from '../result';
import { describeText, tokenize, type Keyword, type Operator, type Token } from './tokenizer';
import { didYouMean } from '../suggest';

/** Longest expression accepted, in UTF-16 code units; bounds parse and evaluation cost. */
export const MAX_CONDITION_LENGTH = 10_000;

/**
 * Deepest nesting accepted (brackets, calls, `not`, unary operators…). Recursive descent
 * uses the JS stack, so this cap is what keeps hostile input from overflowing it.
 */
export const MAX_CONDITION_DEPTH = 100;

/** A value written literally in the expression. */
export type LiteralValue = null | boolean | number | string;

/** Comparison operators of the subset (`is`/`is not` are not part of it). */
export type CompareOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not in';

/** The aggregate functions; the only callable names. */
export type AggregateFunction = 'all' | 'any' | 'count' | 'almost_all';

/** The task a reference reads: a fixed name, or the glob an enclosing aggregate iterates over. */
export type ReferenceRoot = { kind: 'task'; name: string } | { kind: 'glob'; pattern: string };

/** One lookup step after the task: a key (`.field`, `["field"]`) or a list index (`[-1]`). */
export type PathSegment = string | number;

/** `1`, `"a"`, `True`, `None`… */
export interface LiteralNode {
  type: 'literal';
  value: LiteralValue;
  column: number;
}

/** A list or tuple display; tuples evaluate exactly like lists. */
export interface ListNode {
  type: 'list';
  items: ConditionNode[];
  column: number;
}

/** `inputs.TASK.a[0]`, `inputs["TASK"]["a"]`, `inputs["train-*"].score`… */
export interface ReferenceNode {
  type: 'reference';
  root: ReferenceRoot;
  path: PathSegment[];
  column: number;
}

/** `not X`; always yields a boolean. */
export interface NotNode {
  type: 'not';
  operand: ConditionNode;
  column: number;
}

/** `A and B and …` / `A or B or …`, kept flat so long chains do not deepen the tree. */
export interface LogicalNode {
  type: 'and' | 'or';
  operands: ConditionNode[];
  column: number;
}

/** One link of a comparison chain; `column` is the operator's, for evaluation errors. */
export interface Comparison {
  op: CompareOperator;
  right: ConditionNode;
  column: number;
}

/** `a < b <= c`: every operand is evaluated at most once, links short-circuit like Python. */
export interface CompareNode {
  type: 'compare';
  left: ConditionNode;
  comparisons: Comparison[];
  column: number;
}

/**
 * `all(E)`, `any(E)`, `count(E)`, `almost_all(E, k)`: `argument` is evaluated once for each
 * dependency matching `glob`, with that name substituted for the glob.
 */
export interface AggregateNode {
  type: 'aggregate';
  fn: AggregateFunction;
  glob: string;
  argument: ConditionNode;
  /** Only for `almost_all`: how many falsy results are tolerated. */
  k?: number;
  column: number;
}

/** A node of a compiled condition. Plain data: it survives `JSON.stringify`/`JSON.parse`. */
export type ConditionNode = LiteralNode | ListNode | ReferenceNode | NotNode | LogicalNode | CompareNode | AggregateNode;

/** Where the expression reads a task: an exact name or a glob pattern. */
export interface ReferenceSite {
  name: string;
  glob: boolean;
  /** Column of the task name (or of the string literal holding it). */
  column: number;
}

/**
 * The outcome of {@link parseCondition}: a tree plus every reference and every disallowed
 * construct, or the first syntax error.
 */
export type ParseResult = { ok: true; ast: ConditionNode; references: ReferenceSite[]; disallowed: Issue[] } | { ok: false; issue: Issue };

const AGGREGATES: ReadonlySet<string> = new Set<AggregateFunction>(['all', 'any', 'count', 'almost_all']);
const COMPARE_OPERATORS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=']);
const LITERAL_KEYWORDS: Readonly<Partial<Record<Keyword, LiteralValue>>> = {
  True: true,
  true: true,
  False: false,
  false: false,
  None: null,
  null: null,
};

// Python's binary operator levels between comparisons and unary operators, loosest first.
const BINARY_LEVELS: readonly (readonly Operator[])[] = [['|'], ['^'], ['&'], ['<<', '>>'], ['+', '-'], ['*', '/', '//', '%']];
const BITWISE_OPERATORS: ReadonlySet<string> = new Set(['|', '^', '&', '<<', '>>']);
const BITWISE_HINTS: Readonly<Partial<Record<Operator, string>>> = { '|': 'or', '&': 'and' };
const C_LOGICAL: Readonly<Record<'and' | 'or', Operator>> = { and: '&&', or: '||' };

const LAMBDA_PARAMETER_OPERATORS: ReadonlySet<string> = new Set(['*', '**', ',', '/']);

/** Characters that make a string subscript on `inputs` a glob (as in fnmatch). */
const GLOB_CHARACTERS = /[*?[]/;

/** Parses a condition expression. Never throws. */
export function parseCondition(source: string): ParseResult {
  if (source.length > MAX_CONDITION_LENGTH) {
    return syntaxError(
      MAX_CONDITION_LENGTH + 1,
      `the condition is too long (${source.length} characters; the limit is ${MAX_CONDITION_LENGTH})`,
    );
  }
  const lexed = tokenize(source);
  if (!lexed.ok) return syntaxError(lexed.error.column, lexed.error.message);
  if (lexed.tokens.length === 1) return syntaxError(1, 'the condition is empty');
  const parser = new Parser(lexed.tokens);
  try {
    const ast = parser.parseCondition();
    return { ok: true, ast, references: parser.references, disallowed: parser.disallowed };
  } catch (error) {
    if (error instanceof ParseFailure) return syntaxError(error.column, error.message);
    throw error;
  }
}

function syntaxError(column: number, message: string): ParseResult {
  return { ok: false, issue: { code: 'condition-syntax', path: '', message, column } };
}

/** Thrown inside the parser to unwind on a grammar error; never escapes {@link parseCondition}. */
class ParseFailure extends Error {
  constructor(
    readonly column: number,
    message: string,
  ) {
    super(message);
  }
}

interface AggregateContext {
  fn: string;
  /** The first glob met inside the aggregate: its iteration variable. */
  glob: string | undefined;
}

interface Argument {
  node: ConditionNode;
  /** Token range, to recognise literals such as almost_all's K. */
  start: number;
  end: number;
  column: number;
  /** No disallowed construct inside: a further complaint about it would only be noise. */
  clean: boolean;
}

function describeToken(token: Token): string {
  switch (token.kind) {
    case 'eof':
      return 'the end of the expression';
    case 'string':
      return `string ${shorten(token.text)}`;
    case 'number':
      return `number ${shorten(token.text)}`;
    case 'name':
      return `name '${token.text}'`;
    case 'keyword':
      return `keyword '${token.text}'`;
    case 'op':
      return `'${token.text}'`;
  }
}

function shorten(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

class Parser {
  readonly references: ReferenceSite[] = [];
  readonly disallowed: Issue[] = [];
  private pos = 0;
  private depth = 0;
  private readonly aggregates: AggregateContext[] = [];
  // Placeholders standing for disallowed constructs; postfix operations on them stay silent
  // because the construct has already been reported.
  private readonly placeholders = new Set<ConditionNode>();

  constructor(private readonly tokens: readonly Token[]) {}

  parseCondition(): ConditionNode {
    const ast = this.parseExpression();
    const token = this.peek();
    if (token.kind !== 'eof') {
      this.fail(token, `expected an operator or the end of the expression, found ${describeToken(token)}`);
    }
    return ast;
  }

  // ---- token helpers ------------------------------------------------------------------

  private peek(offset = 0): Token {
    // The eof token is last, so clamping keeps every lookahead in range.
    const token = this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)];
    if (token === undefined) throw new ParseFailure(1, 'the condition is empty');
    return token;
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== 'eof') this.pos += 1;
    return token;
  }

  private isOp(token: Token, op: Operator): boolean {
    return token.kind === 'op' && token.value === op;
  }

  private isKeyword(token: Token, keyword: Keyword): boolean {
    return token.kind === 'keyword' && token.value === keyword;
  }

  private expectOp(op: Operator, context: string): Token {
    const token = this.peek();
    if (!this.isOp(token, op)) this.fail(token, `expected '${op}' ${context}, found ${describeToken(token)}`);
    return this.next();
  }

  private fail(token: Token, message: string): never {
    throw new ParseFailure(token.column, message);
  }

  private disallow(column: number, message: string, hint?: string): void {
    this.disallowed.push({ code: 'condition-disallowed', path: '', message, column, ...(hint === undefined ? {} : { hint }) });
  }

  private placeholder(column: number): ConditionNode {
    const node: ConditionNode = { type: 'literal', value: null, column };
    this.placeholders.add(node);
    return node;
  }

  /** Runs a production one nesting level deeper, failing past {@link MAX_CONDITION_DEPTH}. */
  private nested<T>(parse: () => T): T {
    this.depth += 1;
    if (this.depth > MAX_CONDITION_DEPTH) {
      this.fail(this.peek(), `the condition is nested too deeply (more than ${MAX_CONDITION_DEPTH} levels)`);
    }
    const result = parse();
    this.depth -= 1;
    return result;
  }

  // ---- expressions, loosest binding first ---------------------------------------------

  private parseExpression(): ConditionNode {
    const value = this.parseTernary();
    const token = this.peek();
    if (this.isOp(token, ':=')) {
      this.next();
      this.disallow(token.column, "assignment expressions (':=') are not allowed");
      this.parseTernary();
      return this.placeholder(value.column);
    }
    return value;
  }

  private parseTernary(): ConditionNode {
    if (this.isKeyword(this.peek(), 'lambda')) return this.parseLambda();
    const value = this.parseOr();
    const token = this.peek();
    if (!this.isKeyword(token, 'if')) return value;
    this.next();
    this.disallow(token.column, "conditional expressions ('a if b else c') are not allowed");
    this.parseOr();
    const elseToken = this.peek();
    if (!this.isKeyword(elseToken, 'else')) {
      this.fail(elseToken, `expected 'else' in the conditional expression, found ${describeToken(elseToken)}`);
    }
    this.next();
    this.nested(() => this.parseTernary());
    return this.placeholder(value.column);
  }

  private parseLambda(): ConditionNode {
    const lambda = this.next();
    this.disallow(lambda.column, 'lambda expressions are not allowed');
    for (;;) {
      const token = this.peek();
      if (this.isOp(token, ':')) break;
      if (token.kind === 'name' || (token.kind === 'op' && LAMBDA_PARAMETER_OPERATORS.has(token.value))) {
        this.next();
      } else if (this.isOp(token, '=')) {
        this.next();
        this.nested(() => this.parseTernary());
      } else {
        this.fail(token, `expected ':' after the lambda parameters, found ${describeToken(token)}`);
      }
    }
    this.next();
    this.nested(() => this.parseTernary());
    return this.placeholder(lambda.column);
  }

  private parseOr(): ConditionNode {
    return this.parseLogical('or', () => this.parseAnd());
  }

  private parseAnd(): ConditionNode {
    return this.parseLogical('and', () => this.parseNot());
  }

  private parseLogical(type: 'and' | 'or', parseOperand: () => ConditionNode): ConditionNode {
    const first = parseOperand();
    if (!this.isLogical(this.peek(), type)) return first;
    const operands = [first];
    while (this.isLogical(this.peek(), type)) {
      this.next();
      operands.push(parseOperand());
    }
    return { type, operands, column: first.column };
  }

  /**
   * The keyword `and`/`or`, or its C spelling `&&`/`||`: reported (with the keyword as the hint)
   * and then read as the keyword, so the rest of the condition is checked as meant.
   */
  private isLogical(token: Token, type: 'and' | 'or'): boolean {
    if (this.isKeyword(token, type)) return true;
    const c = C_LOGICAL[type];
    if (!this.isOp(token, c)) return false;
    if (!this.disallowed.some((issue) => issue.column === token.column)) {
      this.disallow(token.column, `'${c}' is not an operator of the condition language`, didYouMean(type));
    }
    return true;
  }

  private parseNot(): ConditionNode {
    const token = this.peek();
    if (this.isOp(token, '!')) {
      this.next();
      this.disallow(token.column, "'!' is not an operator of the condition language", didYouMean('not'));
      const operand = this.nested(() => this.parseNot());
      return { type: 'not', operand, column: token.column };
    }
    if (!this.isKeyword(token, 'not')) return this.parseComparison();
    this.next();
    const operand = this.nested(() => this.parseNot());
    return { type: 'not', operand, column: token.column };
  }

  private parseComparison(): ConditionNode {
    const left = this.parseBinary(0);
    const comparisons: Comparison[] = [];
    let usedIs = false;
    for (;;) {
      const token = this.peek();
      let op: CompareOperator;
      if (token.kind === 'op' && COMPARE_OPERATORS.has(token.value)) {
        op = token.value as CompareOperator;
        this.next();
      } else if (this.isKeyword(token, 'in')) {
        op = 'in';
        this.next();
      } else if (this.isKeyword(token, 'not') && this.isKeyword(this.peek(1), 'in')) {
        op = 'not in';
        this.next();
        this.next();
      } else if (this.isKeyword(token, 'is')) {
        this.next();
        if (this.isKeyword(this.peek(), 'not')) this.next();
        this.disallow(token.column, "'is' and 'is not' are not allowed; use == or !=");
        this.parseBinary(0);
        usedIs = true;
        continue;
      } else {
        break;
      }
      comparisons.push({ op, right: this.parseBinary(0), column: token.column });
    }
    if (usedIs) return this.placeholder(left.column);
    if (comparisons.length === 0) return left;
    return { type: 'compare', left, comparisons, column: left.column };
  }

  /** Arithmetic and bitwise operators: parsed with Python precedence only to be reported. */
  private parseBinary(level: number): ConditionNode {
    const operators = BINARY_LEVELS[level];
    if (operators === undefined) return this.parseFactor();
    let left = this.parseBinary(level + 1);
    for (;;) {
      const token = this.peek();
      if (token.kind !== 'op' || !operators.includes(token.value)) return left;
      this.next();
      this.parseBinary(level + 1);
      const hint = BITWISE_HINTS[token.value];
      this.disallow(token.column, this.binaryMessage(token.value, left), hint === undefined ? undefined : didYouMean(hint));
      left = this.placeholder(left.column);
    }
  }

  private binaryMessage(op: Operator, left: ConditionNode): string {
    if (BITWISE_OPERATORS.has(op)) {
      return `bitwise operator '${op}' is not allowed`;
    }
    // `inputs.train-a.score` parses as a subtraction: point at the spelling that works.
    const hint = op === '-' && left.type === 'reference' ? '; a task name containing \'-\' must be written inputs["train-a"]' : '';
    return `arithmetic operator '${op}' is not allowed${hint}`;
  }

  private parseFactor(): ConditionNode {
    const token = this.peek();
    const operand = this.peek(1);
    if (this.isOp(token, '-') && operand.kind === 'number') {
      // The one unary operator of the subset: a negative number literal.
      this.next();
      this.next();
      const literal: ConditionNode = { type: 'literal', value: -operand.value, column: token.column };
      return this.parsePower(this.parsePostfix(literal));
    }
    if (this.isOp(token, '!')) {
      this.next();
      this.nested(() => this.parseFactor());
      this.disallow(token.column, "'!' is not an operator of the condition language", didYouMean('not'));
      return this.placeholder(token.column);
    }
    if (this.isOp(token, '-') || this.isOp(token, '+') || this.isOp(token, '~')) {
      this.next();
      this.nested(() => this.parseFactor());
      this.disallow(
        token.column,
        token.value === '-'
          ? 'unary minus is only allowed directly before a number literal'
          : `unary operator '${token.text}' is not allowed`,
      );
      return this.placeholder(token.column);
    }
    return this.parsePower(this.parsePostfix(this.parseAtom()));
  }

  private parsePower(base: ConditionNode): ConditionNode {
    const token = this.peek();
    if (!this.isOp(token, '**')) return base;
    this.next();
    this.nested(() => this.parseFactor());
    this.disallow(token.column, "arithmetic operator '**' is not allowed");
    return this.placeholder(base.column);
  }

  // ---- postfix: attributes, subscripts, calls -----------------------------------------

  private parsePostfix(base: ConditionNode): ConditionNode {
    let node = base;
    for (;;) {
      const token = this.peek();
      if (this.isOp(token, '.')) {
        this.next();
        node = this.parseAttribute(node, token);
      } else if (this.isOp(token, '[')) {
        this.next();
        node = this.parseSubscript(node, token);
      } else if (this.isOp(token, '(')) {
        this.next();
        this.parseArguments();
        if (!this.placeholders.has(node)) {
          this.disallow(token.column, 'function calls are not allowed (only all(), any(), count() and almost_all())');
        }
        node = this.placeholder(node.column);
      } else {
        return node;
      }
    }
  }

  private parseAttribute(node: ConditionNode, dot: Token): ConditionNode {
    const field = this.peek();
    // Keywords are accepted as field names (unlike Python): JSON keys like "in" or "null"
    // are plausible and there is no ambiguity right after a dot.
    if (field.kind !== 'name' && field.kind !== 'keyword') {
      this.fail(field, `expected a field name after '.', found ${describeToken(field)}`);
    }
    this.next();
    if (this.placeholders.has(node)) return node;
    if (node.type !== 'reference') {
      this.disallow(dot.column, `attribute access (.${field.text}) is only allowed on inputs references`);
      return this.placeholder(node.column);
    }
    node.path.push(field.text);
    return node;
  }

  private parseSubscript(node: ConditionNode, bracket: Token): ConditionNode {
    const index = this.parseIndex();
    this.expectOp(']', `to close '[' at column ${bracket.column}`);
    if (this.placeholders.has(node)) return node;
    if (node.type !== 'reference') {
      this.disallow(bracket.column, 'subscripts are only allowed on inputs references');
      return this.placeholder(node.column);
    }
    if (index.key === undefined) {
      if (index.clean) {
        this.disallow(index.column, 'a subscript must be a string or integer literal, such as ["score"] or [-1]');
      }
      return this.placeholder(node.column);
    }
    node.path.push(index.key);
    return node;
  }

  /**
   * Parses what is between `[` and `]`. Slices and multiple indexes are reported here; the
   * key is returned only when it is a plain string or integer literal (including `-1`).
   */
  private parseIndex(): { key: PathSegment | undefined; column: number; clean: boolean } {
    const first = this.peek();
    if (this.isOp(first, ']')) this.fail(first, "expected an index inside '[]'");
    const start = this.pos;
    const issuesBefore = this.disallowed.length;
    let sliceColumn: number | undefined;
    let tupleColumn: number | undefined;
    for (;;) {
      if (!this.isOp(this.peek(), ':')) this.nested(() => this.parseExpression());
      while (this.isOp(this.peek(), ':')) {
        sliceColumn ??= this.next().column;
        const after = this.peek();
        if (!this.isOp(after, ':') && !this.isOp(after, ']') && !this.isOp(after, ',')) {
          this.nested(() => this.parseExpression());
        }
      }
      if (!this.isOp(this.peek(), ',')) break;
      tupleColumn ??= this.next().column;
      if (this.isOp(this.peek(), ']')) break;
    }
    if (sliceColumn !== undefined) this.disallow(sliceColumn, 'slices are not allowed');
    if (tupleColumn !== undefined) this.disallow(tupleColumn, 'subscripts with several indexes are not allowed');
    return {
      key: this.literalKey(start, this.pos),
      column: first.column,
      clean: this.disallowed.length === issuesBefore,
    };
  }

  /** The value of tokens[start, end) when they spell a string or (negative) integer literal. */
  private literalKey(start: number, end: number): PathSegment | undefined {
    const first = this.tokens[start];
    const second = this.tokens[start + 1];
    if (end - start === 1 && first?.kind === 'string') return first.value;
    if (end - start === 1 && first?.kind === 'number' && first.integer) return first.value;
    if (end - start === 2 && first !== undefined && this.isOp(first, '-') && second?.kind === 'number' && second.integer) {
      return -second.value;
    }
    return undefined;
  }

  /** Parses call arguments after `(` up to and including `)`. */
  private parseArguments(): { positional: Argument[]; irregular: boolean } {
    const positional: Argument[] = [];
    let irregular = false;
    for (;;) {
      const token = this.peek();
      if (this.isOp(token, ')')) {
        this.next();
        return { positional, irregular };
      }
      const issuesBefore = this.disallowed.length;
      if (this.isOp(token, '*') || this.isOp(token, '**')) {
        this.next();
        this.disallow(token.column, `argument unpacking ('${token.text}') is not allowed`);
        this.nested(() => this.parseExpression());
        irregular = true;
      } else if (token.kind === 'name' && this.isOp(this.peek(1), '=')) {
        this.next();
        this.next();
        this.disallow(token.column, `keyword arguments (${token.text}=...) are not allowed`);
        this.nested(() => this.parseExpression());
        irregular = true;
      } else {
        const start = this.pos;
        const node = this.nested(() => this.parseExpression());
        if (this.isKeyword(this.peek(), 'for')) {
          this.parseComprehension();
          irregular = true;
        } else {
          const clean = this.disallowed.length === issuesBefore;
          positional.push({ node, start, end: this.pos, column: token.column, clean });
        }
      }
      const separator = this.peek();
      if (this.isOp(separator, ',')) {
        this.next();
      } else if (!this.isOp(separator, ')')) {
        this.fail(separator, `expected ',' or ')' in the argument list, found ${describeToken(separator)}`);
      }
    }
  }

  /** Parses `for target in iterable [if cond]…` after an element, reporting it. */
  private parseComprehension(): void {
    const keyword = this.next();
    this.disallow(keyword.column, "comprehensions ('for ... in ...') are not allowed");
    this.nested(() => {
      for (;;) {
        // Targets stop below comparisons, otherwise `x in y` would be read as a test.
        this.parseBinary(0);
        while (this.isOp(this.peek(), ',')) {
          this.next();
          this.parseBinary(0);
        }
        const inToken = this.peek();
        if (!this.isKeyword(inToken, 'in')) {
          this.fail(inToken, `expected 'in' in the comprehension, found ${describeToken(inToken)}`);
        }
        this.next();
        this.parseOr();
        while (this.isKeyword(this.peek(), 'if')) {
          this.next();
          this.parseOr();
        }
        if (!this.isKeyword(this.peek(), 'for')) return;
        this.next();
      }
    });
  }

  // ---- atoms --------------------------------------------------------------------------

  private parseAtom(): ConditionNode {
    const token = this.peek();
    switch (token.kind) {
      case 'number':
      case 'string':
        this.next();
        return { type: 'literal', value: token.value, column: token.column };
      case 'keyword': {
        const value = LITERAL_KEYWORDS[token.value];
        if (value === undefined) break;
        this.next();
        return { type: 'literal', value, column: token.column };
      }
      case 'name':
        return this.parseName();
      case 'op':
        if (token.value === '(') return this.parseParenthesised();
        if (token.value === '[') return this.parseList();
        if (token.value === '{') return this.parseBraces();
        break;
      case 'eof':
        break;
    }
    return this.fail(token, `expected an expression, found ${describeToken(token)}`);
  }

  private parseName(): ConditionNode {
    const name = this.next();
    if (name.value === 'inputs') return this.parseInputs(name);
    const next = this.peek();
    if (AGGREGATES.has(name.text) && this.isOp(next, '(')) return this.parseAggregate(name);
    if (this.isOp(next, '(')) {
      this.next();
      this.parseArguments();
      this.disallow(name.column, `function calls are not allowed: ${name.text}() (only all(), any(), count() and almost_all())`);
      return this.placeholder(name.column);
    }
    this.disallow(
      name.column,
      AGGREGATES.has(name.text)
        ? `${name.text} must be called, as in ${name.text}(inputs["train-*"].ok)`
        : `unknown name '${name.text}': read task outputs as inputs.TASK or inputs["TASK"]`,
    );
    return this.placeholder(name.column);
  }

  /** `inputs` must be followed by `.NAME`, `.*` or `["NAME"]`, which selects the task. */
  private parseInputs(inputs: Token): ConditionNode {
    const token = this.peek();
    if (this.isOp(token, '.')) {
      this.next();
      const name = this.peek();
      if (this.isOp(name, '*')) {
        // `inputs.*` is shorthand for `inputs["*"]`.
        this.next();
        return this.reference(inputs, '*', name.column);
      }
      if (name.kind !== 'name' && name.kind !== 'keyword') {
        this.fail(name, `expected a task name after 'inputs.', found ${describeToken(name)}`);
      }
      this.next();
      return this.reference(inputs, name.text, name.column);
    }
    if (this.isOp(token, '[')) {
      this.next();
      const index = this.parseIndex();
      this.expectOp(']', `to close '[' at column ${token.column}`);
      if (typeof index.key === 'string') return this.reference(inputs, index.key, index.column);
      if (index.clean) {
        this.disallow(index.column, 'the subscript on inputs must be a string literal naming a task, such as inputs["train-a"]');
      }
      return this.placeholder(inputs.column);
    }
    this.disallow(inputs.column, `'inputs' must be followed by .TASK or ["TASK"]`);
    return this.placeholder(inputs.column);
  }

  private reference(inputs: Token, name: string, column: number): ConditionNode {
    const glob = GLOB_CHARACTERS.test(name);
    this.references.push({ name, glob, column });
    if (!glob) return { type: 'reference', root: { kind: 'task', name }, path: [], column: inputs.column };
    const context = this.aggregates[this.aggregates.length - 1];
    if (context === undefined) {
      this.disallow(
        column,
        `the glob reference inputs[${describeText(name)}] is only allowed inside all(), any(), count() or almost_all()`,
      );
      return this.placeholder(inputs.column);
    }
    if (context.glob === undefined) {
      context.glob = name;
    } else if (context.glob !== name) {
      this.disallow(
        column,
        `${context.fn}() iterates over inputs[${describeText(context.glob)}]; ` +
          `a second, different glob inputs[${describeText(name)}] is not allowed`,
      );
      return this.placeholder(inputs.column);
    }
    return { type: 'reference', root: { kind: 'glob', pattern: name }, path: [], column: inputs.column };
  }

  private parseAggregate(name: Token): ConditionNode {
    const fn = name.text as AggregateFunction;
    this.next(); // '('
    const outer = this.aggregates[this.aggregates.length - 1];
    if (outer !== undefined) {
      this.disallow(name.column, `aggregates cannot be nested (${fn}() inside ${outer.fn}())`);
      // Globs inside count for the outer aggregate, which avoids a second, spurious complaint.
      this.nested(() => this.parseArguments());
      return this.placeholder(name.column);
    }
    const context: AggregateContext = { fn, glob: undefined };
    this.aggregates.push(context);
    const args = this.nested(() => this.parseArguments());
    this.aggregates.pop();

    let valid = true;
    const expected = fn === 'almost_all' ? 2 : 1;
    if (!args.irregular && args.positional.length !== expected) {
      this.disallow(
        name.column,
        `${fn}() takes exactly ${expected} positional argument${expected === 1 ? '' : 's'} (${args.positional.length} given)`,
      );
      valid = false;
    }
    let k: number | undefined;
    const kArgument = fn === 'almost_all' ? args.positional[1] : undefined;
    if (kArgument !== undefined) {
      const key = this.literalKey(kArgument.start, kArgument.end);
      if (typeof key === 'number' && key >= 0) {
        k = key;
      } else {
        if (kArgument.clean) {
          this.disallow(kArgument.column, 'the second argument of almost_all() must be an integer literal >= 0');
        }
        valid = false;
      }
    }
    if (context.glob === undefined) {
      this.disallow(name.column, `${fn}(): aggregate needs a glob reference such as inputs["train-*"]`);
      valid = false;
    }
    const argument = args.positional[0];
    if (!valid || args.irregular || argument === undefined || context.glob === undefined) {
      return this.placeholder(name.column);
    }
    const node: AggregateNode = { type: 'aggregate', fn, glob: context.glob, argument: argument.node, column: name.column };
    if (k !== undefined) node.k = k;
    return node;
  }

  /** `(x)`, or a tuple `()`, `(x,)`, `(x, y)`; generator expressions are reported. */
  private parseParenthesised(): ConditionNode {
    const open = this.next();
    const { items, comma } = this.parseSequence(open, ')');
    const only = items[0];
    if (!comma && only !== undefined) return only;
    return { type: 'list', items, column: open.column };
  }

  private parseList(): ConditionNode {
    const open = this.next();
    const { items } = this.parseSequence(open, ']');
    return { type: 'list', items, column: open.column };
  }

  /** Comma-separated items up to `close` (trailing comma allowed), as in Python displays. */
  private parseSequence(open: Token, close: Operator): { items: ConditionNode[]; comma: boolean } {
    return this.nested(() => {
      const items: ConditionNode[] = [];
      let comma = false;
      while (!this.isOp(this.peek(), close)) {
        const token = this.peek();
        if (this.isOp(token, '*')) {
          this.next();
          this.disallow(token.column, "unpacking ('*') is not allowed");
          this.parseBinary(0);
          items.push(this.placeholder(token.column));
        } else {
          items.push(this.parseExpression());
        }
        if (items.length === 1 && this.isKeyword(this.peek(), 'for')) {
          this.parseComprehension();
          items[0] = this.placeholder(token.column);
        }
        if (!this.isOp(this.peek(), ',')) break;
        this.next();
        comma = true;
      }
      this.expectOp(close, `to close '${open.text}' at column ${open.column}`);
      return { items, comma };
    });
  }

  /** Dict and set displays are outside the subset; parsed only to be reported. */
  private parseBraces(): ConditionNode {
    const open = this.next();
    this.disallow(open.column, 'dict and set literals ({...}) are not allowed');
    this.nested(() => {
      let first = true;
      while (!this.isOp(this.peek(), '}')) {
        if (this.isOp(this.peek(), '**')) {
          this.next();
          this.parseBinary(0);
        } else {
          this.parseExpression();
          if (this.isOp(this.peek(), ':')) {
            this.next();
            this.parseExpression();
          }
        }
        if (first && this.isKeyword(this.peek(), 'for')) this.parseComprehension();
        first = false;
        if (!this.isOp(this.peek(), ',')) break;
        this.next();
      }
      this.expectOp('}', `to close '{' at column ${open.column}`);
    });
    return this.placeholder(open.column);
  }
}
