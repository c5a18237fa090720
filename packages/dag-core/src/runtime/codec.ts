import { toRawDefinition } from '../definition/convert';
import { validateWith } from '../definition/validate';
import { assembleRuntime } from './assemble';
import { TASK_STATUSES, WORKFLOW_STATUSES, type TaskRuntime, type TaskStatus, type WorkflowRuntime, type WorkflowStatus } from './types';

/** Version of the runtime blob format written by {@link encodeRuntime}. */
export const RUNTIME_FORMAT_VERSION = 1;

/** A runtime blob that cannot be read: unknown version, bad JSON, or a field of the wrong shape. */
export class RuntimeDecodeError extends Error {
  constructor(message: string) {
    super(`runtime blob: ${message}`);
    this.name = 'RuntimeDecodeError';
  }
}

type TaskJson = {
  status: TaskStatus;
  attempt_no?: number;
  retry_base?: number;
  output_ref?: string;
  error?: string;
  dispatched_at?: string;
  started_at?: string;
  completed_at?: string;
  awaiting_inputs?: true;
};

/**
 * The runtime as stored (`{p}-workflows/{workflow_id}.json`): versioned JSON with the snake_case
 * of the wire formats. Task fields at their initial value (0, null, false) are left out, which
 * keeps a 100 000-task blob small; counts are derived again on decode.
 */
export function encodeRuntime(runtime: WorkflowRuntime): string {
  const tasks: Record<string, TaskJson> = {};
  for (const [name, t] of Object.entries(runtime.tasks)) {
    const json: TaskJson = { status: t.status };
    if (t.attemptNo !== 0) json.attempt_no = t.attemptNo;
    if (t.retryBase !== 0) json.retry_base = t.retryBase;
    if (t.outputRef !== null) json.output_ref = t.outputRef;
    if (t.error !== null) json.error = t.error;
    if (t.dispatchedAt !== null) json.dispatched_at = t.dispatchedAt;
    if (t.startedAt !== null) json.started_at = t.startedAt;
    if (t.completedAt !== null) json.completed_at = t.completedAt;
    if (t.awaitingInputs) json.awaiting_inputs = true;
    tasks[name] = json;
  }
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
    outputs_container: runtime.outputsContainer,
    definition: toRawDefinition(runtime.definition),
    tasks,
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function field<T>(obj: Record<string, unknown>, key: string, check: (v: unknown) => v is T, what: string, where = ''): T {
  const value = obj[key];
  if (!check(value)) throw new RuntimeDecodeError(`${where}"${key}" must be ${what}, got ${JSON.stringify(value) ?? 'nothing'}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isNullableString = (v: unknown): v is string | null => v === null || typeof v === 'string';
const optional = <T>(check: (v: unknown) => v is T) => (v: unknown): v is T | undefined => v === undefined || check(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isWorkflowStatus = (v: unknown): v is WorkflowStatus => WORKFLOW_STATUSES.includes(v as WorkflowStatus);
const isTaskStatus = (v: unknown): v is TaskStatus => TASK_STATUSES.includes(v as TaskStatus);

/**
 * Reads a runtime written by {@link encodeRuntime}. Throws a {@link RuntimeDecodeError} with a
 * clear message for an unknown version, bad JSON, a malformed field, an invalid definition, or
 * tasks that do not match the definition.
 */
export function decodeRuntime(text: string): WorkflowRuntime {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new RuntimeDecodeError(`not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isRecord(json)) throw new RuntimeDecodeError('not a JSON object');
  if (json.version !== RUNTIME_FORMAT_VERSION) {
    throw new RuntimeDecodeError(`unknown format version ${JSON.stringify(json.version)} (this jobq reads version ${RUNTIME_FORMAT_VERSION}; is a newer jobq writing this prefix?)`);
  }
  const definition = validateWith(json.definition, { internal: true });
  if (!definition.ok) {
    const first = definition.issues[0];
    throw new RuntimeDecodeError(`invalid definition: ${first ? `${first.path ? `${first.path}: ` : ''}${first.message}` : 'unknown problem'}`);
  }
  const rawTasks = json.tasks;
  if (!isRecord(rawTasks)) throw new RuntimeDecodeError('"tasks" must be an object');
  const states: TaskRuntime[] = [];
  for (const def of definition.value.tasks) {
    const raw = rawTasks[def.name];
    const where = `tasks[${JSON.stringify(def.name)}].`;
    if (!isRecord(raw)) throw new RuntimeDecodeError(`task "${def.name}" of the definition has no state`);
    const status = field(raw, 'status', isTaskStatus, 'a task status', where);
    let dispatchedAt = field(raw, 'dispatched_at', optional(isString), 'a timestamp', where) ?? null;
    let startedAt = field(raw, 'started_at', optional(isString), 'a timestamp', where) ?? null;
    if (dispatchedAt === null && startedAt !== null) {
      // Written before `dispatched_at` existed, when `started_at` was the dispatch time.
      dispatchedAt = startedAt;
      startedAt = null;
    }
    states.push({
      status,
      attemptNo: field(raw, 'attempt_no', optional(isCount), 'a count', where) ?? 0,
      retryBase: field(raw, 'retry_base', optional(isCount), 'a count', where) ?? 0,
      outputRef: field(raw, 'output_ref', optional(isString), 'a string', where) ?? null,
      error: field(raw, 'error', optional(isString), 'a string', where) ?? null,
      dispatchedAt,
      startedAt,
      completedAt: field(raw, 'completed_at', optional(isString), 'a timestamp', where) ?? null,
      awaitingInputs: field(raw, 'awaiting_inputs', optional(isBool), 'a boolean', where) ?? false,
    });
  }
  const extra = Object.keys(rawTasks).length - definition.value.tasks.length;
  if (extra > 0) throw new RuntimeDecodeError(`${extra} task state(s) belong to no task of the definition`);
  return assembleRuntime(
    {
      workflowId: field(json, 'workflow_id', isString, 'a string'),
      definition: definition.value,
      outputsContainer: field(json, 'outputs_container', isNullableString, 'a string or null'),
      status: field(json, 'status', isWorkflowStatus, 'a workflow status'),
      activated: field(json, 'activated', isBool, 'a boolean'),
      cancelRequested: field(json, 'cancel_requested', isBool, 'a boolean'),
      cancelAppliedAt: field(json, 'cancel_applied_at', isNullableString, 'a timestamp or null'),
      retryAppliedAt: field(json, 'retry_applied_at', isNullableString, 'a timestamp or null'),
      createdAt: field(json, 'created_at', isString, 'a timestamp'),
      updatedAt: field(json, 'updated_at', isString, 'a timestamp'),
      finishedAt: field(json, 'finished_at', isNullableString, 'a timestamp or null'),
      corruptReason: field(json, 'corrupt_reason', optional(isString), 'a string') ?? null,
    },
    states,
  );
}
