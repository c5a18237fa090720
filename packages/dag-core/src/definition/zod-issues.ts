import type { z } from 'zod';
import { formatPath, formatPathForMessage, quoteForMessage, type PathSegment } from './path';
import { MAX_RETRY_DELAY_S } from './limits';
import type { RawIssue } from './raw-issue';
import { unknownFieldHint } from './hints';

type ZodIssue = z.core.$ZodIssue;

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'number' && Number.isInteger(value)) return `the integer ${value}`;
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return `the boolean ${value}`;
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  // Every number in a definition is an integer; zod says "number" when the input is not one at all.
  number: 'an integer',
  int: 'an integer',
  array: 'a list',
  object: 'an object',
  record: 'an object',
  boolean: 'a boolean',
};

function lastField(path: readonly PathSegment[]): string | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const segment = path[i];
    if (typeof segment === 'string') return segment;
  }
  return undefined;
}

/** Fields whose every problem has a dedicated code (docs/workflow-language.md), with the rule to quote. */
const FIELD_CODES: Record<string, { code: string; rule: string }> = {
  dep_policy: { code: 'bad-dep-policy', rule: 'dep_policy must be "all", "any", "all_settled" or an integer ≥ 1' },
  max_parallelism: { code: 'bad-max-parallelism', rule: 'max_parallelism must be an integer ≥ 1 or null' },
  result_policy: { code: 'bad-result-policy', rule: 'result_policy must be "all_sinks_succeed" or "all_tasks_succeed"' },
  ...retryRules('retry_delay_s', 'retry_backoff', 'retry_max_delay_s'),
  ...retryRules('default_retry_delay_s', 'default_retry_backoff', 'default_retry_max_delay_s'),
};

/** The retry delay fields, each with its whole rule (a queue delays a message at most 7 days). */
function retryRules(delay: string, backoff: string, max: string): Record<string, { code: string; rule: string }> {
  const seconds = (name: string) => ({
    code: 'bad-retry-delay',
    rule: `${name} must be an integer from 0 to ${MAX_RETRY_DELAY_S} (7 days, the longest a queue delays a message) or null`,
  });
  return {
    [delay]: seconds(delay),
    [max]: seconds(max),
    [backoff]: { code: 'bad-retry-delay', rule: `${backoff} must be a number ≥ 1 or null` },
  };
}

/** Codes for fields whose *format* problems (not type problems) have a dedicated code. */
const FORMAT_CODES: Record<string, string> = {
  name: 'bad-name',
  queue: 'bad-queue',
  default_queue: 'bad-queue',
  tasks: 'empty-tasks',
};

/**
 * Turns zod's issues into ours: a stable code chosen by what went wrong and where, and a message
 * that names the field and what was found.
 */
export function fromZodIssues(
  issues: readonly ZodIssue[],
  nameProblem: (name: string) => string | null,
  fieldsAt: (objectPath: readonly PathSegment[]) => readonly string[] = () => [],
): RawIssue[] {
  const out: RawIssue[] = [];
  const seen = new Set<string>();
  for (const raw of translate(issues, nameProblem, fieldsAt)) {
    // Several checks of one field can fail for one reason (a name too long and so not matching).
    const key = `${raw.code}\u0000${formatPath(raw.path)}\u0000${raw.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(raw);
  }
  return out;
}

/** Where `kwargs` sits in a path into a task's kwargs (`tasks[i].kwargs.…`), or -1. */
function kwargsIndex(path: readonly PathSegment[]): number {
  return path.length > 3 && path[0] === 'tasks' && typeof path[1] === 'number' && path[2] === 'kwargs' ? 2 : -1;
}

/** An issue of a kwarg the shell processor reads: the message names it as `kwargs.env.NAME`. */
function kwargIssue(issue: ZodIssue, path: PathSegment[], at: number): RawIssue {
  const where = formatPathForMessage(path.slice(at));
  if (issue.code === 'invalid_key') {
    return { code: 'bad-kwarg', path, message: `${where}: ${issue.issues[0]?.message ?? issue.message}`, target: 'key' };
  }
  if (issue.code === 'invalid_type' || (issue.code === 'invalid_union' && !isFormatUnion(issue))) {
    return { code: 'type', path, message: `${where} ${issue.message}, got ${typeName(issue.input)}` };
  }
  return { code: 'bad-kwarg', path, message: `${where} ${formatMessage(issue)}` };
}

function translate(
  issues: readonly ZodIssue[],
  nameProblem: (name: string) => string | null,
  fieldsAt: (objectPath: readonly PathSegment[]) => readonly string[],
): RawIssue[] {
  const out: RawIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.filter((s): s is PathSegment => typeof s !== 'symbol');
    const field = lastField(path);
    const where = field === undefined ? 'the workflow' : `"${field}"`;
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = unknownFieldHint([...path, key], key, fieldsAt(path));
        out.push({
          code: 'unknown-field',
          path: [...path, key],
          message: `unknown field ${quoteForMessage(key)}`,
          target: 'key',
          ...(hint === undefined ? {} : { hint }),
        });
      }
      continue;
    }
    if (issue.code === 'custom' && typeof issue.params?.code === 'string') {
      // A refinement that knows its stable code.
      out.push({
        code: issue.params.code,
        path,
        message: issue.message,
        ...(issue.params.target === 'key' ? { target: 'key' as const } : {}),
      });
      continue;
    }
    const kwargsAt = kwargsIndex(path);
    if (kwargsAt >= 0) {
      out.push(kwargIssue(issue, path, kwargsAt));
      continue;
    }
    const hasInput = 'input' in issue && issue.input !== undefined;
    if (!hasInput && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
      out.push({ code: 'missing-field', path, message: `${where} is required` });
      continue;
    }
    const input: unknown = 'input' in issue ? issue.input : undefined;
    if (issue.code === 'invalid_key') {
      out.push({ code: 'reserved-kwarg', path, message: issue.issues[0]?.message ?? issue.message, target: 'key' });
      continue;
    }
    const fieldCode = field === undefined ? undefined : FIELD_CODES[field];
    if (fieldCode !== undefined) {
      out.push({ code: fieldCode.code, path, message: `${fieldCode.rule}, got ${typeName(input)}` });
      continue;
    }
    if (issue.code === 'invalid_type' || (issue.code === 'invalid_union' && !isFormatUnion(issue))) {
      const expected = issue.code === 'invalid_type' ? expectedOf(issue) : expectedOfUnion(issue);
      if (path.length === 0) {
        out.push({ code: 'not-an-object', path, message: `a workflow definition must be an object, got ${typeName(input)}` });
      } else {
        out.push({ code: 'type', path, message: `${where} must be ${expected}, got ${typeName(input)}` });
      }
      continue;
    }
    const formatCode = field === undefined ? undefined : FORMAT_CODES[field];
    if (formatCode === 'bad-name' && typeof input === 'string' && path.length > 1) {
      out.push({ code: 'bad-name', path, message: `task name ${quoteForMessage(input)}: ${nameProblem(input) ?? issue.message}` });
      continue;
    }
    if (formatCode !== undefined) {
      out.push({ code: formatCode, path, message: formatMessage(issue) });
      continue;
    }
    out.push({ code: 'out-of-range', path, message: `${where}: ${rangeMessage(issue, input)}` });
  }
  return out;
}

function expectedOf(issue: z.core.$ZodIssueInvalidType): string {
  return EXPECTED[issue.expected] ?? issue.expected;
}

/** A nullable field (`T | null`) reports a union; what was expected is "T or null". */
function expectedOfUnion(issue: z.core.$ZodIssueInvalidUnion): string {
  const parts = issue.errors
    .map((branch) => branch[0])
    .filter((first): first is z.core.$ZodIssueInvalidType => first?.code === 'invalid_type')
    .map((first) => (first.expected === 'null' ? 'null' : expectedOf(first)));
  return parts.length > 0 ? parts.join(' or ') : 'a valid value';
}

/** A nullable field whose non-null branch failed on format (not type) is a format problem. */
function isFormatUnion(issue: z.core.$ZodIssueInvalidUnion): boolean {
  return issue.errors.some((branch) => branch.length > 0 && branch.every((i) => i.code !== 'invalid_type'));
}

function formatMessage(issue: ZodIssue): string {
  if (issue.code === 'invalid_union') {
    const inner = issue.errors.find((branch) => branch.length > 0 && branch.every((i) => i.code !== 'invalid_type'));
    return inner?.[0]?.message ?? issue.message;
  }
  return issue.message;
}

function rangeMessage(issue: ZodIssue, input: unknown): string {
  if (issue.code === 'invalid_union') {
    const inner = issue.errors.find((branch) => branch.length > 0 && branch.every((i) => i.code !== 'invalid_type'))?.[0];
    if (inner) return rangeMessage(inner, input);
  }
  if (issue.code === 'too_small') return `must be at least ${String(issue.minimum)}, got ${typeName(input)}`;
  if (issue.code === 'too_big') return `must be at most ${String(issue.maximum)}, got ${typeName(input)}`;
  return issue.message;
}
