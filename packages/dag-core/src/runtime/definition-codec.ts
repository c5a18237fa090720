import { toRawDefinition } from '../definition/convert';
import type { WorkflowDefinition } from '../definition/types';
import { validateWith } from '../definition/validate';
import { RuntimeDecodeError } from './state-codec';

/**
 * JSON with object keys sorted at every level (arrays keep their order); `undefined` members (and
 * functions) are left out. Equal data gives equal text, so its hash identifies the data.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value) as string | undefined;
    return text ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .sort()
    .filter((k) => record[k] !== undefined && typeof record[k] !== 'function')
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  return `{${members.join(',')}}`;
}

/**
 * The stored form of a definition: the canonical JSON of `toRawDefinition(definition)`. Its
 * sha256 is the workflow's definition hash, which recognises a resubmission and names the
 * definition blob of a stored runtime.
 */
export function encodeDefinition(definition: WorkflowDefinition): string {
  return canonicalJson(toRawDefinition(definition));
}

const SUBJECT = 'definition';

/**
 * Reads a definition written by {@link encodeDefinition}, validating it as the engine's own
 * (merge nodes and gates allowed). Throws a {@link RuntimeDecodeError} that never quotes the text.
 */
export function decodeDefinition(text: string): WorkflowDefinition {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RuntimeDecodeError('not JSON', SUBJECT);
  }
  const definition = validateWith(json, { internal: true });
  if (!definition.ok) {
    const first = definition.issues[0];
    throw new RuntimeDecodeError(
      `invalid: ${first ? `${first.path ? `${first.path}: ` : ''}${first.message}` : 'unknown problem'}`.slice(0, 300),
      SUBJECT,
    );
  }
  return definition.value;
}
