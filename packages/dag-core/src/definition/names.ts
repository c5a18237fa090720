/**
 * Name rules of docs/workflow-language.md, docs/design.md#queues-and-backends, as regular expressions (so the JSON Schema carries them) plus
 * functions that say in words why a name is refused (so the validator's messages are useful).
 */

import type { Failed, Result } from '../result';
import { MAX_TASK_KEY_LENGTH, MAX_TASK_NAME_LENGTH } from './limits';

/** Prefix shared by every name the engine itself generates; users may not start a task name with it. */
export const RESERVED_PREFIX = '__';

/** What a user kwargs key must match: the engine's own kwargs start with {@link RESERVED_PREFIX}. */
export const KWARG_KEY_PATTERN = '^(?!__)';

/**
 * The length of a task name's table key: the name with every `%` written `%25` and every `/`
 * `%2F` (store-azure's `encodeTaskRowKey`), so each of those counts 3 characters.
 */
export function taskKeyLength(name: string): number {
  let length = name.length;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0x25 || c === 0x2f) length += 2;
  }
  return length;
}

const CONTROL_CHARS = '\\u0000-\\u001f\\u007f-\\u009f';

function taskNamePattern(allowReserved: boolean): string {
  return (
    '^' +
    (allowReserved ? '' : '(?!__)') +
    '(?!/)' + // no leading slash
    '(?!.*//)(?!.*/$)' + // no empty path segment
    '(?!(?:.*/)?\\.\\.?(?:/|$))' + // no `.` or `..` segment (blob paths would collapse them)
    '(?=[\\s\\S]*\\S)' + // at least one non-space character
    `[^${CONTROL_CHARS}\\\\#?]+$`
  );
}

/** Pattern a user task name must match. */
export const TASK_NAME_PATTERN = taskNamePattern(false);
/** Pattern of task names once the engine's own (`__merge_…`) names are allowed. */
export const INTERNAL_TASK_NAME_PATTERN = taskNamePattern(true);

/** Why `name` is not a legal task name, or null when it is. */
export function taskNameProblem(name: string, allowReserved = false): string | null {
  if (name.length === 0 || !/\S/.test(name)) return 'a task name needs a non-space character';
  if (name.length > MAX_TASK_NAME_LENGTH) return `a task name has at most ${MAX_TASK_NAME_LENGTH} characters (this one has ${name.length})`;
  if (!allowReserved && name.startsWith(RESERVED_PREFIX)) return 'task names starting with "__" are reserved for the engine';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return 'a task name may not contain control characters';
  const bad = /[\\#?]/.exec(name);
  if (bad) return `a task name may not contain "${bad[0]}"`;
  if (name.startsWith('/')) return 'a task name may not start with "/"';
  const segments = name.split('/');
  if (segments.some((s) => s === '')) return 'a task name may not contain an empty path segment ("//" or a trailing "/")';
  // Blob paths collapse these: `a/./b` would name the same blob as `a/b`.
  if (segments.some((s) => s === '.' || s === '..')) return 'a task name may not contain a "." or ".." path segment';
  // Merge node names are built from user names that passed this check, with room to spare.
  const keyLength = taskKeyLength(name);
  if (!allowReserved && keyLength > MAX_TASK_KEY_LENGTH) {
    return `the table key of a task name ("%" and "/" count 3 characters) has at most ${MAX_TASK_KEY_LENGTH} characters (this one has ${keyLength})`;
  }
  return null;
}

const STORAGE_QUEUE = '[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,55}';
const STORAGE_ACCOUNT = '[a-z0-9]{3,24}';
const SB_NAMESPACE = '[A-Za-z][A-Za-z0-9.-]{0,99}';
const SB_QUEUE = '[A-Za-z0-9](?:[A-Za-z0-9._-]{0,258}[A-Za-z0-9])?';

/** Pattern of a queue spec: `NAME`, `ACCOUNT/NAME` or `sb://NAMESPACE/NAME` (docs/design.md#queues-and-backends). */
export const QUEUE_SPEC_PATTERN = `^(?:(?:${STORAGE_ACCOUNT}/)?${STORAGE_QUEUE}|sb://${SB_NAMESPACE}/${SB_QUEUE})$`;

const STORAGE_QUEUE_RE = new RegExp(`^${STORAGE_QUEUE}$`);
const STORAGE_ACCOUNT_RE = new RegExp(`^${STORAGE_ACCOUNT}$`);
const SB_NAMESPACE_RE = new RegExp(`^${SB_NAMESPACE}$`);
const SB_QUEUE_RE = new RegExp(`^${SB_QUEUE}$`);

/** True for a valid storage account name: 3–24 lowercase letters and digits (the one check of every package). */
export function isStorageAccountName(name: string): boolean {
  return STORAGE_ACCOUNT_RE.test(name);
}

const STORAGE_QUEUE_RULE =
  'a Storage Queue name has 3–56 lowercase letters, digits and single hyphens, starting and ending with a letter or digit';

/** A parsed queue spec (docs/design.md#queues-and-backends). */
export type QueueSpec =
  | { backend: 'default'; name: string }
  | { backend: 'storage'; account: string; name: string }
  | { backend: 'servicebus'; namespace: string; name: string };

/** Parses a queue spec, or returns why it is not one. */
export function parseQueueSpec(spec: string): Result<QueueSpec, Failed, object> {
  if (spec.startsWith('sb://')) {
    const rest = spec.slice('sb://'.length);
    const slash = rest.indexOf('/');
    if (slash < 0) return { ok: false, error: `queue "${spec}" needs a queue name: sb://NAMESPACE/NAME` };
    const namespace = rest.slice(0, slash);
    const name = rest.slice(slash + 1);
    if (!SB_NAMESPACE_RE.test(namespace)) {
      return {
        ok: false,
        error: `queue "${spec}": "${namespace}" is not a Service Bus namespace (letters, digits, "." and "-", starting with a letter)`,
      };
    }
    if (!SB_QUEUE_RE.test(name)) {
      return {
        ok: false,
        error: `queue "${spec}": "${name}" is not a Service Bus queue name (letters, digits, ".", "_" and "-", starting and ending with a letter or digit)`,
      };
    }
    return { ok: true, value: { backend: 'servicebus', namespace, name } };
  }
  const parts = spec.split('/');
  if (parts.length > 2) return { ok: false, error: `queue "${spec}" has too many "/": use NAME, ACCOUNT/NAME or sb://NAMESPACE/NAME` };
  const [first = '', second] = parts;
  if (second !== undefined) {
    if (!STORAGE_ACCOUNT_RE.test(first)) {
      return { ok: false, error: `queue "${spec}": "${first}" is not a storage account name (3–24 lowercase letters and digits)` };
    }
    if (!STORAGE_QUEUE_RE.test(second)) return { ok: false, error: `queue "${spec}": ${STORAGE_QUEUE_RULE}` };
    return { ok: true, value: { backend: 'storage', account: first, name: second } };
  }
  if (!STORAGE_QUEUE_RE.test(first)) return { ok: false, error: `queue "${spec}": ${STORAGE_QUEUE_RULE}` };
  return { ok: true, value: { backend: 'default', name: first } };
}
