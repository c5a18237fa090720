import { toRawDefinition } from '../definition/convert';
import { validateWith } from '../definition/validate';
import { tasksIn } from './access';
import { decodeError, decodeOk, type DecodeResult } from '../wire/decode-result';
import { assembleRuntime } from './assemble';
import {
  RuntimeDecodeError,
  decodeTaskState,
  decodeWorkflowFields,
  encodeTaskState,
  field,
  isRecord,
  isString,
  type StoredWorkflowFields,
  type TaskJson,
} from './state-codec';
import type { TaskRuntime, WorkflowRuntime } from './types';
import { errorMessage } from '../error-text';

export { RuntimeDecodeError } from './state-codec';

/**
 * Version of the whole-runtime blob written by {@link encodeRuntime} (format 1: the definition and
 * every task state in one document). Stores now keep a runtime as a snapshot plus a log of changes
 * (format 2, see the snapshot and log codecs); format 1 is still read, to migrate old workflows.
 */
export const RUNTIME_FORMAT_VERSION = 1;

/**
 * The runtime as one versioned JSON document (format 1), with the snake_case of the wire formats.
 * Task fields at their initial value (0, null, false) are left out; counts are derived again on
 * decode.
 */
export function encodeRuntime(runtime: WorkflowRuntime): string {
  const tasks: Record<string, TaskJson> = {};
  for (const [name, t] of tasksIn(runtime)) tasks[name] = encodeTaskState(t);
  return JSON.stringify({
    version: RUNTIME_FORMAT_VERSION,
    workflow_id: runtime.workflowId,
    status: runtime.status,
    activated: runtime.activated,
    cancel_requested: runtime.cancelRequested,
    cancel_applied_at: runtime.cancelAppliedAt,
    retry_applied_at: runtime.retryAppliedAt,
    created_at: runtime.createdAt,
    updated_at: runtime.updatedAt,
    finished_at: runtime.finishedAt,
    ...(runtime.corruptReason === null ? {} : { corrupt_reason: runtime.corruptReason }),
    ...(runtime.deadlineAt === null ? {} : { deadline_at: runtime.deadlineAt }),
    ...(runtime.cancelReason === null ? {} : { cancel_reason: runtime.cancelReason }),
    ...(runtime.rerunsApplied === null ? {} : { reruns_applied: runtime.rerunsApplied }),
    ...(runtime.traceparent === null ? {} : { traceparent: runtime.traceparent }),
    outputs_container: runtime.outputsContainer,
    definition: toRawDefinition(runtime.definition),
    tasks,
  });
}

const SUBJECT = 'runtime blob';

/** The workflow-level keys of a format-1 document (everything else is ignored, as it always was). */
const V1_FIELD_KEYS = [
  'status',
  'activated',
  'cancel_requested',
  'cancel_applied_at',
  'retry_applied_at',
  'created_at',
  'updated_at',
  'finished_at',
  'outputs_container',
];

/**
 * Reads a runtime written by {@link encodeRuntime}. Never throws on bad input: an unknown version,
 * bad JSON, a malformed field, an invalid definition, or tasks that do not match the definition
 * give `{ ok: false, error }`, with `error` one line saying what is wrong and where
 * (`runtime blob: tasks["a"]."status" must be a task status, got …`).
 */
export function decodeRuntime(text: string): DecodeResult<WorkflowRuntime> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return decodeError(new RuntimeDecodeError(`not JSON (${errorMessage(error)})`, SUBJECT).message);
  }
  return decodeRuntimeJson(json);
}

/** {@link decodeRuntime} of a document already parsed. */
export function decodeRuntimeJson(json: unknown): DecodeResult<WorkflowRuntime> {
  try {
    return decodeOk(readRuntimeJson(json));
  } catch (error) {
    return decodeError(error instanceof RuntimeDecodeError ? error.message : `${SUBJECT}: ${errorMessage(error)}`);
  }
}

function readRuntimeJson(json: unknown): WorkflowRuntime {
  if (!isRecord(json)) throw new RuntimeDecodeError('not a JSON object');
  if (json.version !== RUNTIME_FORMAT_VERSION) {
    throw new RuntimeDecodeError(
      `unknown format version ${JSON.stringify(json.version)} (this jobq reads version ${RUNTIME_FORMAT_VERSION}; is a newer jobq writing this prefix?)`,
    );
  }
  const definition = validateWith(json.definition, { internal: true });
  if (!definition.ok) {
    const first = definition.issues[0];
    throw new RuntimeDecodeError(
      `invalid definition: ${first ? `${first.path ? `${first.path}: ` : ''}${first.message}` : 'unknown problem'}`,
    );
  }
  const rawTasks = json.tasks;
  if (!isRecord(rawTasks)) throw new RuntimeDecodeError('"tasks" must be an object');
  const states: TaskRuntime[] = [];
  for (const def of definition.value.tasks) {
    const raw = rawTasks[def.name];
    if (!isRecord(raw)) throw new RuntimeDecodeError(`task "${def.name}" of the definition has no state`);
    states.push(decodeTaskState(raw, `tasks[${JSON.stringify(def.name)}]`, SUBJECT, false));
  }
  const extra = Object.keys(rawTasks).length - definition.value.tasks.length;
  if (extra > 0) throw new RuntimeDecodeError(`${extra} task state(s) belong to no task of the definition`);
  const fields: Partial<StoredWorkflowFields> = {};
  const stored: Record<string, unknown> = {};
  for (const key of V1_FIELD_KEYS) stored[key] = json[key];
  stored.corrupt_reason = json.corrupt_reason ?? null;
  stored.deadline_at = json.deadline_at ?? null;
  stored.cancel_reason = json.cancel_reason ?? null;
  stored.reruns_applied = json.reruns_applied ?? null;
  stored.traceparent = json.traceparent ?? null;
  decodeWorkflowFields(stored, fields, false, '', SUBJECT);
  return assembleRuntime(
    {
      workflowId: field(json, 'workflow_id', isString, 'a string', '', SUBJECT),
      definition: definition.value,
      ...(fields as StoredWorkflowFields),
    },
    states,
  );
}
