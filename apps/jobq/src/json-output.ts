import { z } from 'zod';
import { JOBQ_ERROR_CODES, type TaskRow, type WorkflowSummary } from '@jobq/ports';
import type { RuntimeView } from '@jobq/coordinator';

/*
 * The `--json` documents of the commands (docs/json-output.md): one zod schema each, the converters
 * that build the fixed-key parts from the domain types, and the table of schemas that
 * `scripts/json-schemas.js` writes to docs/json/. Every fixed key is snake_case; keys that are data
 * (task names, param names, kwargs, env variables, output values) are passed through as they are.
 */

const TASK_STATUS = z.enum(['pending', 'ready', 'running', 'completed', 'failed', 'upstream_failed', 'skipped', 'cancelled']);
const WORKFLOW_STATUS = z.enum(['pending', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'corrupt']);
const count = z.number().int().min(0);
/** An ISO 8601 timestamp (UTC). */
const time = z.string().describe('ISO 8601 timestamp');
const nullableTime = time.nullable();
/** Any JSON value (a task's output, a kwarg, a param). */
const anyJson = z.unknown();
/** A map whose keys are data: param names, kwargs, environment variables. */
const dataMap = z.record(z.string(), anyJson);

const counts = z
  .object({
    pending: count,
    ready: count,
    running: count,
    completed: count,
    failed: count,
    upstream_failed: count,
    skipped: count,
    cancelled: count,
  })
  .describe('Tasks per status');

const skippedTasks = z.array(z.object({ name: z.string(), skip_reason: z.string() }));

/** A row of the workflow index (`workflow list`, and the base of `workflow status`). */
const summaryFields = {
  workflow_id: z.string(),
  name: z.string(),
  status: WORKFLOW_STATUS,
  counts,
  queues: z.array(z.string()),
  definition_hash: z.string(),
  created_at: time,
  updated_at: time,
  cancel_requested_at: nullableTime,
  retry_requested_at: nullableTime,
  cancel_applied_at: nullableTime,
  retry_applied_at: nullableTime,
  finished_at: nullableTime,
  error: z.string().nullable(),
};
const workflowSummary = z.object(summaryFields);
export type WorkflowSummaryJson = z.infer<typeof workflowSummary>;

export function summaryJson(s: WorkflowSummary): WorkflowSummaryJson {
  return {
    workflow_id: s.workflowId,
    name: s.name,
    status: s.status,
    counts: s.counts,
    queues: s.queues,
    definition_hash: s.definitionHash,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    cancel_requested_at: s.cancelRequestedAt,
    retry_requested_at: s.retryRequestedAt,
    cancel_applied_at: s.cancelAppliedAt,
    retry_applied_at: s.retryAppliedAt,
    finished_at: s.finishedAt,
    error: s.error,
  };
}

const taskRow = z.object({
  workflow_id: z.string(),
  task_name: z.string(),
  status: TASK_STATUS,
  queue: z.string(),
  attempt_no: count,
  updated_at: time,
  error: z.string().nullable(),
});
export type TaskRowJson = z.infer<typeof taskRow>;

export function taskRowJson(r: TaskRow): TaskRowJson {
  return {
    workflow_id: r.workflowId,
    task_name: r.taskName,
    status: r.status,
    queue: r.queue,
    attempt_no: r.attemptNo,
    updated_at: r.updatedAt,
    error: r.error,
  };
}

const runtimeView = z.object({
  status: WORKFLOW_STATUS,
  counts,
  activated: z.boolean(),
  cancel_requested: z.boolean(),
  updated_at: time,
  finished_at: nullableTime,
});

export function runtimeViewJson(v: RuntimeView): z.infer<typeof runtimeView> {
  return {
    status: v.status,
    counts: v.counts,
    activated: v.activated,
    cancel_requested: v.cancelRequested,
    updated_at: v.updatedAt,
    finished_at: v.finishedAt,
  };
}

const placementJson = z.object({
  state: z
    .enum(['on_worker', 'waiting'])
    .describe('on_worker: a fresh heartbeat lists the task; waiting: no heartbeat does, an interval + 10 s after its dispatch'),
  worker_id: z.string().nullable(),
  host: z.string().nullable(),
  since: time.describe('When the worker started it (on_worker), or when it was dispatched (waiting)'),
  queue: z.string(),
  text: z.string().describe('The line the text output prints'),
});
export type PlacementJson = z.infer<typeof placementJson>;

const workerQueueJson = z.object({ queue: z.string(), slots: count, busy: count, last_receive_at: nullableTime });
const workerJson = z.object({
  worker_id: z.string().describe('{host}-{pid}-{rand}'),
  host: z.string(),
  pid: count,
  version: z.string(),
  state: z.enum(['ok', 'stopping', 'lost']).describe('lost: silent for 3 heartbeat intervals'),
  age_s: z.number().min(0).describe('Seconds since the last heartbeat, on the storage service clock'),
  seen_at: time,
  started_at: time,
  heartbeat_interval_s: z.number().min(0),
  queues: z.array(workerQueueJson),
  running: z.array(z.object({ id: z.string().describe('{workflow_id}/{task}/{attempt} for a workflow task'), since: time })),
  running_more: count.describe('Running tasks left out of running (the row keeps at most 64)'),
});
export type WorkerJson = z.infer<typeof workerJson>;
const workersDoc = z.object({ target: z.string(), workers: z.array(workerJson) });

const statusTask = z.object({
  task_name: z.string(),
  status: TASK_STATUS,
  queue: z.string(),
  attempt_no: count,
  error: z.string().nullable(),
  deps: z.string().nullable().describe('Satisfied dependencies of all ("c/total"); null when only the task rows were read'),
  dispatched_at: nullableTime,
  started_at: nullableTime,
  completed_at: nullableTime,
  skip_reason: z.string().nullable(),
  output: anyJson
    .optional()
    .describe(
      "The task's output (any JSON value; null when it has none: not completed, skipped, or it set none). Absent with --no-outputs",
    ),
  log_blob: z
    .string()
    .nullable()
    .describe(
      'The log blob of the current attempt in the outputs target, workflow-logs/{workflow_id}/{task}/{attempt}.log (written when the attempt printed something or failed); null when the task never ran',
    ),
  placement: placementJson
    .nullable()
    .describe('Where a running task is, from the worker heartbeats (docs/design.md#placement); null when not known yet'),
});
export type StatusTaskJson = z.infer<typeof statusTask>;

const layerRow = z.object({
  layer: z.string(),
  total: count,
  pending: count,
  ready: count,
  running: count,
  completed: count,
  failed: count,
  skipped: count,
});

const workflowStatus = z.object({
  target: z.string(),
  ...summaryFields,
  status: WORKFLOW_STATUS.describe("The runtime's status (the index row's when the runtime cannot be read)"),
  total: count,
  index_status: WORKFLOW_STATUS,
  runtime: runtimeView.nullable(),
  deadline_at: nullableTime,
  cancel_reason: z.string().nullable(),
  params: dataMap.nullable(),
  tasks: z.array(statusTask).optional().describe('Absent with --no-tasks'),
  layers: z.array(layerRow).optional().describe('With --by-layer'),
});

const submitResult = z.union([
  z.object({ file: z.string(), ok: z.literal(true), workflow_id: z.string(), created: z.boolean(), name: z.string(), tasks: count }),
  z.object({ file: z.string(), ok: z.literal(false), error: z.string() }),
]);
export type SubmitResultJson = z.infer<typeof submitResult>;

const workflowSubmit = z.object({
  target: z.string(),
  total: count,
  submitted: count,
  failed: count,
  tasks: count,
  ids: z.array(z.string().nullable()),
  results: z.array(submitResult),
});

const request = z.object({ workflow_id: z.string(), target: z.string(), requested: z.boolean(), message: z.string() });

const rerun = z.object({
  workflow_id: z.string(),
  target: z.string(),
  requested: z.literal(true),
  task: z.string(),
  downstream: z.boolean(),
  tasks: z.array(z.string()),
  request_id: z.string(),
  requested_at: time,
  message: z.string(),
});

const explainedWorkflow = z.object({
  workflow_id: z.string(),
  name: z.string(),
  status: WORKFLOW_STATUS,
  index_status: WORKFLOW_STATUS.nullable(),
  counts,
  activated: z.boolean(),
  updated_at: time,
  reasons: z.array(z.string()),
});
export type ExplainedWorkflowJson = z.infer<typeof explainedWorkflow>;

const explainedTask = z.object({
  name: z.string(),
  status: TASK_STATUS,
  queue: z.string(),
  attempt_no: count,
  reasons: z.array(z.string()),
  retry_due_at: nullableTime,
});
export type ExplainedTaskJson = z.infer<typeof explainedTask>;

const explainedQueue = z.object({
  queue: z.string(),
  name: z.string().nullable(),
  ready_tasks: count,
  running_tasks: count,
  approximate_message_count: count.nullable(),
  oldest_message_age_ms: z.number().nullable(),
  reasons: z.array(z.string()),
});
export type ExplainedQueueJson = z.infer<typeof explainedQueue>;

const taskDetail = z.object({
  name: z.string(),
  status: TASK_STATUS,
  queue: z.string(),
  attempt_no: count,
  num_retries: count,
  depends_on: z.array(z.string()),
  dep_policy: z.string(),
  condition: z.string().nullable(),
  dispatched_at: nullableTime,
  started_at: nullableTime,
  completed_at: nullableTime,
  error: z.string().nullable(),
  skip_reason: z.string().nullable(),
  reasons: z.array(z.string()),
  condition_inputs: z.array(z.object({ name: z.string(), status: TASK_STATUS, output: z.string().nullable() })).nullable(),
  retry_due_at: nullableTime,
});
export type TaskDetailJson = z.infer<typeof taskDetail>;

const explainedShard = z
  .object({
    index: count,
    count,
    leased: z.boolean(),
    owner: z.string().nullable().describe('The member that last claimed it; it holds it only while leased'),
    epoch: count,
    held_without_shards: z.boolean().describe('Shard 0 held by a coordinator that knows nothing of shards'),
  })
  .optional()
  .describe("The workflow's shard and its owner; only when the deployment has a shard manifest");
export type ExplainedShardJson = z.infer<typeof explainedShard>;

const workflowExplain = z.union([
  z
    .object({
      target: z.string(),
      workflow: explainedWorkflow,
      tasks: z.array(explainedTask),
      queues: z.array(explainedQueue),
      params: dataMap.nullable(),
      skipped_tasks: skippedTasks,
      shard: explainedShard,
    })
    .describe('Without --task'),
  z
    .object({
      target: z.string(),
      workflow: explainedWorkflow,
      params: dataMap.nullable(),
      task: taskDetail,
      queue: explainedQueue.nullable(),
      shard: explainedShard,
    })
    .describe('With --task'),
]);

const taskLog = z.object({
  task: z.string(),
  attempt: z.number().int().min(1),
  outcome: z
    .enum(['live', 'succeeded', 'failed'])
    .nullable()
    .describe('How the attempt ended; live while it runs (a snapshot); null when the blob has no jobq metadata'),
  exit_code: z.number().int().nullable(),
  started: z.string().nullable(),
  ended: z.string().nullable(),
  bytes: count.nullable().describe('Bytes the task printed in all (the log keeps its first 64 KiB and its last bytes)'),
  stored_bytes: count,
  worker: z.string().nullable(),
});
export type TaskLogJson = z.infer<typeof taskLog>;

const workflowLogs = z.object({ workflow_id: z.string(), task: z.string().nullable(), logs: z.array(taskLog) });

const workflowWatch = z.object({
  target: z.string(),
  workflow_id: z.string(),
  name: z.string(),
  status: WORKFLOW_STATUS,
  counts,
  total: count,
  created_at: time,
  updated_at: time,
  finished_at: nullableTime,
  elapsed_ms: z.number().min(0),
  error: z.string().nullable(),
  failed_tasks: z.array(z.object({ name: z.string(), status: TASK_STATUS, error: z.string().nullable() })),
  skipped_tasks: skippedTasks,
});

const purgeEntry = z.object({
  workflow_id: z.string(),
  outcome: z.enum(['purged', 'would-purge', 'skipped', 'not-found', 'failed']),
  status: WORKFLOW_STATUS.nullable(),
  finished_at: nullableTime,
  reason: z.string().nullable(),
  blobs: count,
  output_blobs: count,
  task_rows: count,
  error: z.string().nullable(),
});
export type PurgeEntryJson = z.infer<typeof purgeEntry>;

const workflowPurge = z.object({
  target: z.string(),
  finished_before: time,
  dry_run: z.boolean(),
  purged: count,
  would_purge: count,
  skipped: count,
  failed: count,
  workflows: z.array(purgeEntry),
});

const workflowRun = z.object({
  workflow_id: z.string(),
  name: z.string(),
  status: WORKFLOW_STATUS,
  tasks: z.array(
    z.object({
      name: z.string(),
      status: TASK_STATUS,
      attempt_no: count,
      queue: z.string(),
      error: z.string().nullable(),
      skip_reason: z.string().nullable(),
      output: anyJson.describe("The task's output (any JSON value; null when it set none)"),
    }),
  ),
});

const workflowDoctor = z.object({
  ok: z.boolean(),
  target: z.string().nullable(),
  checks: z.array(z.object({ name: z.string(), status: z.enum(['ok', 'warn', 'fail']), message: z.string(), hint: z.string().nullable() })),
  summary: z.object({ ok: count, warn: count, fail: count }),
});

const workflowShards = z.object({
  target: z.string(),
  manifest: z.object({ version: z.number().int(), shards: count }).nullable().describe('null: no manifest, one shard'),
  shard_count: count,
  server_time: time.describe('The storage service time of the read'),
  shards: z.array(
    z.object({
      index: count,
      leased: z.boolean().describe('Its lease is held now'),
      owner: z
        .string()
        .nullable()
        .describe('The member that last claimed it (it holds it only while leased); null when no claim recorded one'),
      epoch: count.describe('Claims so far'),
      claimed_at: nullableTime.describe('Its last claim, by the storage clock'),
      held_without_shards: z.boolean().describe('Shard 0 held by a coordinator that knows nothing of shards'),
      queue: z.string().describe('Its completion queue'),
      queue_spec: z.string(),
      queue_state: z.enum(['ok', 'missing', 'unreachable']),
      queue_error: z.string().nullable(),
      approximate_message_count: count.nullable(),
      stats: z
        .object({
          written_at: nullableTime,
          started_at: nullableTime,
          messages: count,
          completions_applied: count,
          forwarded: count.describe('Messages for other shards it sent on (0 when its runner does not count them)'),
          poison: count,
          receive_errors: count,
        })
        .nullable()
        .describe('From its stats document; null when none was written'),
      stats_error: z.string().nullable(),
    }),
  ),
  members: z.array(
    z.object({
      member_id: z.string(),
      last_heartbeat_at: time,
      age_s: z.number().min(0).describe('Seconds since its last heartbeat, by the storage clock'),
      shards_held: count,
    }),
  ),
});
export type WorkflowShardsJson = z.infer<typeof workflowShards>;

const issue = z.object({
  severity: z.enum(['error', 'warning']),
  code: z.string(),
  message: z.string(),
  path: z.string().describe('Where in the definition (tasks[3].depends_on[1]); empty for the file as a whole'),
  line: z.number().int().nullable(),
  column: z.number().int().nullable(),
  hint: z.string().nullable(),
});
const workflowValidate = z.object({
  files: z.array(z.object({ file: z.string(), ok: z.boolean(), tasks: count.optional().describe('When ok'), issues: z.array(issue) })),
});

const shownValue = z.object({
  value: z.union([z.string(), z.number(), z.null()]).describe('Secrets masked'),
  source: z.enum(['flag', 'env', 'file', 'default']),
  from: z.string().nullable().describe('The flag, variable or config file key it came from'),
});

/** The keys of `config show`'s settings: the config file's own keys (docs/azure.md#configuration). */
export const CONFIG_SETTING_KEYS = [
  'prefix',
  'queues',
  'blobs',
  'connection_string',
  'servicebus_connection_string',
  'servicebus_admin_endpoint',
  'batch_size',
  'visibility_timeout_s',
  'pipeline_depth',
  'idle_sleep_s',
  'cancel_poll_interval_s',
  'flush_retry_limit',
  'ready_sweep_interval_s',
  'ready_repair_threshold_s',
  'timeout_sweep_interval_s',
  'task_message_ttl_s',
  'max_deliveries',
  'retention',
  'shards',
  'balance_interval',
] as const;

const configShow = z.object({
  file: z.string().nullable(),
  settings: z.object(
    Object.fromEntries(CONFIG_SETTING_KEYS.map((key) => [key, shownValue])) as Record<
      (typeof CONFIG_SETTING_KEYS)[number],
      typeof shownValue
    >,
  ),
  storage_access: z.array(
    z.object({
      account: z.string(),
      uses: z.enum(['connection string', 'local emulator', 'DefaultAzureCredential']),
      from: z.string().nullable(),
      credential: z.enum(['account key', 'SAS', 'DefaultAzureCredential']),
      note: z.string().nullable(),
    }),
  ),
  servicebus_access: z.array(z.string()),
});

const dev = z.object({
  status: z.literal('ready'),
  pid: count,
  prefix: z.string(),
  account_name: z.string(),
  connection_string: z.string().describe("Azurite's well-known development key"),
  blob_endpoint: z.string(),
  queue_endpoint: z.string(),
  table_endpoint: z.string(),
  ports: z.object({ blob: count, queue: count, table: count, servicebus: count.optional(), servicebus_admin: count.optional() }),
  coordinator: z.boolean(),
  data_dir: z.string().nullable().describe("--data: the directory holding the stack's storage; null when everything is in memory"),
  workers: z.array(z.object({ queue: z.string(), num_workers: count })),
  auto_workers: z.boolean().describe('--auto-workers: more queues get workers as tasks are routed to them'),
  servicebus: z.object({ connection_string: z.string(), admin_endpoint: z.string() }).optional(),
  env: z.record(z.string(), z.string()).describe('The environment variables another terminal needs'),
  dashboard_url: z.string().optional().describe("--dashboard: the dashboard's URL"),
});

const dashboard = z.object({
  url: z.string().describe('http://127.0.0.1:PORT/'),
  host: z.string(),
  port: count,
  poll_interval_ms: count,
  target: z.string().describe('ACCOUNT/PREFIX of the deployment shown'),
});

const messageMeta = {
  message_id: z.string(),
  delivery_count: count,
  enqueued_at: nullableTime,
  locked_until: time.optional().describe('pull without --complete: when the message becomes visible again'),
};
const message = z.union([
  z.object({
    id: z.string(),
    kwargs: dataMap,
    num_retries: count,
    version: z.number().int(),
    reply_requested: z.boolean(),
    ...messageMeta,
  }),
  z.object({ ...messageMeta, body: z.string(), error: z.string().describe('Why the body is not a jobq task') }),
]);

const size = z.object({
  queue: z.string(),
  approximate_count: count,
  dead_letter_count: count.optional().describe('Service Bus with an admin endpoint'),
  counted_by: z.string().optional(),
});

const push = z.object({ queue: z.string(), pushed: count, ids: z.array(z.string()) });

const taskInfo = z.object({
  in_task: z.boolean(),
  workflow_id: z.string().nullable(),
  task: z.string().nullable(),
  attempt: z.union([count, z.string(), z.null()]),
  prefix: z.string().nullable(),
  variables: z.record(z.string(), z.string().nullable()).describe('The JOBQ_* variables of a workflow task; null when not set'),
});

/** Error codes of the `--json` error document (docs/json-output.md#errors). */
export const JSON_ERROR_CODES = ['usage', 'invalid_workflow', 'failed', ...JOBQ_ERROR_CODES.map((c) => c.replace(/-/g, '_'))] as [
  string,
  ...string[],
];

const error = z.object({
  error: z.object({
    code: z.enum(JSON_ERROR_CODES).describe('usage (exit 2), invalid_workflow, failed, or the jobq error code in snake_case'),
    message: z.string().describe('The message of the one stderr line, secrets masked'),
  }),
});

/**
 * Every `--json` document, by the name of its schema file in docs/json/ (`NAME.schema.json`), with
 * the command that prints it.
 */
export const JSON_OUTPUTS: Record<string, { command: string; schema: z.ZodType }> = {
  error: { command: 'any command with --json, when it fails', schema: error },
  'config-show': { command: 'config show --json', schema: configShow },
  dashboard: { command: 'dashboard --json', schema: dashboard },
  dev: { command: 'dev --json', schema: dev },
  peek: { command: 'peek --json', schema: z.array(message) },
  pull: { command: 'pull', schema: message.nullable() },
  push: { command: 'push --json', schema: push },
  size: { command: 'size --json', schema: size },
  'task-info': { command: 'task info', schema: taskInfo },
  'workflow-cancel': { command: 'workflow cancel --json', schema: request },
  'workflow-doctor': { command: 'workflow doctor --json', schema: workflowDoctor },
  'workflow-explain': { command: 'workflow explain --json', schema: workflowExplain },
  'workflow-list': { command: 'workflow list --json', schema: z.array(workflowSummary) },
  'workflow-logs': { command: 'workflow logs --json', schema: workflowLogs },
  'workflow-purge': { command: 'workflow purge --json', schema: workflowPurge },
  'workflow-retry': {
    command: 'workflow retry --json',
    schema: z.union([request.describe('Without --task'), rerun.describe('With --task')]),
  },
  'workflow-run': { command: 'workflow run --json', schema: workflowRun },
  'workflow-shards': { command: 'workflow shards --json', schema: workflowShards },
  'workflow-status': { command: 'workflow status --json', schema: workflowStatus },
  'workflow-submit': { command: 'workflow submit --json', schema: workflowSubmit },
  'workflow-tasks': { command: 'workflow tasks --json', schema: z.array(taskRow) },
  'workflow-validate': { command: 'workflow validate --json', schema: workflowValidate },
  'workflow-watch': { command: 'workflow watch --json', schema: workflowWatch },
  workers: { command: 'workers --json', schema: workersDoc },
};

/** The JSON Schema (draft 2020-12) of one `--json` document. */
export function jsonSchemaOf(name: string): Record<string, unknown> {
  const output = JSON_OUTPUTS[name];
  if (output === undefined) throw new Error(`no JSON output named ${name}`);
  return { ...z.toJSONSchema(output.schema, { io: 'output' }), $id: `${name}.schema.json`, title: `jobq ${output.command}` };
}
