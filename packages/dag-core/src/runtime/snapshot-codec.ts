import type { WorkflowDefinition } from '../definition/types';
import { tasksIn, taskState } from './access';
import { assembleRuntime } from './assemble';
import {
  RuntimeDecodeError,
  decodeTaskState,
  decodeWorkflowFields,
  encodeTaskState,
  encodeWorkflowFields,
  field,
  isCount,
  isRecord,
  isString,
  taskPositions,
  type StoredWorkflowFields,
  type TaskJson,
} from './state-codec';
import type { TaskRuntime, WorkflowRuntime } from './types';

/**
 * Format 2 of a stored runtime: a snapshot (the workflow fields and every task's record, in
 * definition order, without the definition, which is stored once on its own) and a log of
 * records, each one line of JSON: the task records and workflow fields a save changed, or the
 * note that the log was closed by a roll to a new snapshot. The store decides where they live;
 * these functions only turn them into text and back. See docs/runtime-format.md.
 */

/** Format version of snapshots and log records. */
export const STATE_FORMAT_VERSION = 2;

/** A runtime being rebuilt from its stored form: the fields and one state per task, in definition order. */
export interface RuntimeParts {
  workflowId: string;
  definition: WorkflowDefinition;
  fields: StoredWorkflowFields;
  /** Mutable: replaying a log replaces entries in place. */
  states: TaskRuntime[];
}

/** What a snapshot says about itself; a reader checks it against what pointed at the snapshot. */
export interface SnapshotMeta {
  workflowId: string;
  /** sha256 (hex) of the stored definition. */
  definitionHash: string;
  generation: number;
}

const SNAPSHOT = 'runtime snapshot';
const LOG = 'runtime log';

/** The snapshot of a runtime, as JSON text. */
export function encodeSnapshot(runtime: WorkflowRuntime, meta: Omit<SnapshotMeta, 'workflowId'>): string {
  const tasks: TaskJson[] = [];
  for (const [, state] of tasksIn(runtime)) tasks.push(encodeTaskState(state));
  return JSON.stringify({
    version: STATE_FORMAT_VERSION,
    workflow_id: runtime.workflowId,
    definition_hash: meta.definitionHash,
    generation: meta.generation,
    workflow: encodeWorkflowFields(runtime),
    tasks,
  });
}

/**
 * Reads a snapshot of a runtime of `definition`, checking that it is the one `expected` names.
 * Throws a {@link RuntimeDecodeError} that never quotes the text.
 */
export function decodeSnapshot(text: string, definition: WorkflowDefinition, expected: SnapshotMeta): RuntimeParts {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RuntimeDecodeError('not JSON', SNAPSHOT);
  }
  if (!isRecord(json)) throw new RuntimeDecodeError('not a JSON object', SNAPSHOT);
  if (json.version !== STATE_FORMAT_VERSION)
    throw new RuntimeDecodeError(
      `format version ${JSON.stringify(json.version)?.slice(0, 20)} where ${STATE_FORMAT_VERSION} was expected`,
      SNAPSHOT,
    );
  const workflowId = field(json, 'workflow_id', isString, 'a string', '', SNAPSHOT);
  if (workflowId !== expected.workflowId) throw new RuntimeDecodeError(`it holds workflow "${workflowId.slice(0, 130)}"`, SNAPSHOT);
  const hash = field(json, 'definition_hash', isString, 'a string', '', SNAPSHOT);
  if (hash !== expected.definitionHash)
    throw new RuntimeDecodeError(`it was written for definition ${hash.slice(0, 64)}, not ${expected.definitionHash}`, SNAPSHOT);
  const generation = field(json, 'generation', isCount, 'a count', '', SNAPSHOT);
  if (generation !== expected.generation)
    throw new RuntimeDecodeError(`it is generation ${generation}, not ${expected.generation}`, SNAPSHOT);
  const fields: Partial<StoredWorkflowFields> = {};
  decodeWorkflowFields(json.workflow, fields, false, '"workflow"', SNAPSHOT);
  const tasks = json.tasks;
  if (!Array.isArray(tasks)) throw new RuntimeDecodeError('"tasks" must be an array', SNAPSHOT);
  const defs = definition.tasks;
  if (tasks.length !== defs.length)
    throw new RuntimeDecodeError(`${tasks.length} task records for the ${defs.length} tasks of the definition`, SNAPSHOT);
  const states = tasks.map((raw, i) => decodeTaskState(raw, `tasks[${i}]`, SNAPSHOT, true));
  return { workflowId, definition, fields: fields as StoredWorkflowFields, states };
}

/** The runtime the parts describe. */
export function assembleParts(parts: RuntimeParts): WorkflowRuntime {
  return assembleRuntime({ workflowId: parts.workflowId, definition: parts.definition, ...parts.fields }, parts.states);
}

/** Where a roll moved the runtime: the new generation, its snapshot and its log. */
export interface RollTarget {
  generation: number;
  snapshot: string;
  /** Size of the snapshot in bytes (the next roll compares the log's size with it). */
  snapshotBytes: number;
  log: string;
}

/** One line of a log. `seq` counts the log's records from 1. */
export type LogRecord =
  | { kind: 'delta'; seq: number; fields: Partial<StoredWorkflowFields>; tasks: Array<[position: number, state: TaskRuntime]> }
  | ({ kind: 'rolled'; seq: number } & RollTarget);

/**
 * The log record of a save: the workflow fields that differ from `previous` and the records of
 * the `changed` tasks (names from `changedTasks(previous, runtime)`), as one line ending in "\n".
 */
export function encodeDeltaRecord(seq: number, previous: WorkflowRuntime, runtime: WorkflowRuntime, changed: readonly string[]): string {
  const record: Record<string, unknown> = { seq };
  const fields = encodeWorkflowFields(runtime, previous);
  if (Object.keys(fields).length > 0) record.workflow = fields;
  if (changed.length > 0) {
    const tasks: Record<string, TaskJson> = {};
    for (const name of changed) {
      const state = taskState(runtime, name);
      if (state === undefined) throw new RangeError(`encodeDeltaRecord: the definition has no task "${name}"`);
      tasks[name] = encodeTaskState(state);
    }
    record.tasks = tasks;
  }
  return `${JSON.stringify(record)}\n`;
}

/** The last record of a log closed by a roll, as one line ending in "\n". */
export function encodeRollRecord(seq: number, to: RollTarget): string {
  return `${JSON.stringify({ seq, rolled_to: { generation: to.generation, snapshot: to.snapshot, snapshot_bytes: to.snapshotBytes, log: to.log } })}\n`;
}

const RECORD_KEYS = new Set(['seq', 'workflow', 'tasks', 'rolled_to']);

function decodeRecord(line: string, index: number, definition: WorkflowDefinition): LogRecord {
  const where = `record ${index + 1}`;
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    throw new RuntimeDecodeError(`${where} is not JSON`, LOG);
  }
  if (!isRecord(json)) throw new RuntimeDecodeError(`${where} is not a JSON object`, LOG);
  for (const key of Object.keys(json))
    if (!RECORD_KEYS.has(key)) throw new RuntimeDecodeError(`${where} has an unknown field "${key.slice(0, 40)}"`, LOG);
  const seq = field(json, 'seq', isCount, 'a count', `${where}: `, LOG);
  if (seq !== index + 1) throw new RuntimeDecodeError(`${where} is numbered ${seq}: a record is missing or repeated`, LOG);
  if (json.rolled_to !== undefined) {
    const to = json.rolled_to;
    if (!isRecord(to) || json.workflow !== undefined || json.tasks !== undefined)
      throw new RuntimeDecodeError(`${where}: a malformed roll record`, LOG);
    const at = `${where}: rolled_to.`;
    return {
      kind: 'rolled',
      seq,
      generation: field(to, 'generation', isCount, 'a count', at, LOG),
      snapshot: field(to, 'snapshot', isString, 'a string', at, LOG),
      snapshotBytes: field(to, 'snapshot_bytes', isCount, 'a count', at, LOG),
      log: field(to, 'log', isString, 'a string', at, LOG),
    };
  }
  const fields: Partial<StoredWorkflowFields> = {};
  if (json.workflow !== undefined) decodeWorkflowFields(json.workflow, fields, true, `${where}: "workflow"`, LOG);
  const tasks: Array<[number, TaskRuntime]> = [];
  if (json.tasks !== undefined) {
    if (!isRecord(json.tasks)) throw new RuntimeDecodeError(`${where}: "tasks" must be an object`, LOG);
    const positions = taskPositions(definition);
    for (const [name, raw] of Object.entries(json.tasks)) {
      const position = positions.get(name);
      if (position === undefined) throw new RuntimeDecodeError(`${where} names a task the definition does not have`, LOG);
      tasks.push([position, decodeTaskState(raw, `${where}: tasks[${JSON.stringify(name).slice(0, 200)}]`, LOG, true)]);
    }
  }
  return { kind: 'delta', seq, fields, tasks };
}

/**
 * The records of a log of a runtime of `definition`: one per line, numbered from 1, each line
 * ending in "\n"; a roll record only last. Throws a {@link RuntimeDecodeError} that never quotes
 * the text.
 */
export function decodeLogRecords(text: string, definition: WorkflowDefinition): LogRecord[] {
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new RuntimeDecodeError('its last record is cut short', LOG);
  const lines = text.slice(0, -1).split('\n');
  const records = lines.map((line, i) => decodeRecord(line, i, definition));
  const rolled = records.findIndex((r) => r.kind === 'rolled');
  if (rolled !== -1 && rolled !== records.length - 1)
    throw new RuntimeDecodeError(`record ${rolled + 1} closes the log, but ${records.length - rolled - 1} record(s) follow it`, LOG);
  return records;
}

/** Applies a delta record to the parts, in place. */
export function applyDeltaRecord(parts: RuntimeParts, record: Extract<LogRecord, { kind: 'delta' }>): void {
  Object.assign(parts.fields, record.fields);
  for (const [position, state] of record.tasks) parts.states[position] = state;
}
