/**
 * The JSON the dashboard server sends (packages/dashboard/README.md#api). Every key is snake_case,
 * like the CLI's `--json`. Types only: the browser bundle imports this file too, so it imports
 * nothing at run time.
 */

/** Status of one task (as `TaskStatus` of `@jobq/dag-core`). */
export type ApiTaskStatus = 'pending' | 'ready' | 'running' | 'completed' | 'failed' | 'upstream_failed' | 'skipped' | 'cancelled';

/** Status of a workflow (as `WorkflowStatus` of `@jobq/dag-core`). */
export type ApiWorkflowStatus = 'pending' | 'running' | 'cancelling' | 'completed' | 'failed' | 'cancelled' | 'corrupt';

/** Number of tasks in each status. */
export type ApiCounts = Record<ApiTaskStatus, number>;

/** The rollup levels of `…/graph?level=` (`auto` picks one: see {@link ApiGraph.level}). */
export type ApiGraphLevel = 'families' | 'siblings' | 'layers' | 'tasks';
export const API_GRAPH_LEVELS: readonly ApiGraphLevel[] = ['families', 'siblings', 'layers', 'tasks'];

/** Every error answer (4xx, 5xx) of an `/api/…` route. */
export interface ApiError {
  error: {
    /** `not-found`, `bad-request`, `method-not-allowed`, `misdirected`, `storage`. */
    code: string;
    /** One line: what and where. Never a secret. */
    message: string;
  };
}

// ---------------------------------------------------------------------------------------------
// GET /api/workflows?status=&prefix=&cursor=&limit=

/** One row of the workflow list (the index row). */
export interface ApiWorkflowRow {
  workflow_id: string;
  name: string;
  status: ApiWorkflowStatus;
  counts: ApiCounts;
  /** Sum of counts. */
  total: number;
  queues: string[];
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** The first failed task and its error, or why it is corrupt. */
  error: string | null;
}

export interface ApiWorkflowList {
  workflows: ApiWorkflowRow[];
  /** Pass back as `cursor` (with the same filters) for the next page; null at the end. */
  next_cursor: string | null;
  /** When this page was read from storage (the list is cached 10 s for every client). */
  read_at: string;
}

// ---------------------------------------------------------------------------------------------
// GET /api/workflows/ID

/** The header of a workflow page: as `jobq workflow watch` shows it. */
export interface ApiWorkflowDetail {
  workflow_id: string;
  name: string;
  /** The runtime's status (the index row's while the runtime is missing). */
  status: ApiWorkflowStatus;
  /** The runtime's counts (the index row's while the runtime is missing). */
  counts: ApiCounts;
  total: number;
  /** Tasks finished per second over the last minute of polls; null when not known yet. */
  rate_per_s: number | null;
  /** Milliseconds left at that rate; null when unknown; 0 when done. */
  eta_ms: number | null;
  activated: boolean;
  created_at: string | null;
  updated_at: string;
  finished_at: string | null;
  /** The index row's status; null without an index row. */
  index_status: ApiWorkflowStatus | null;
  error: string | null;
  /** Queue specs used by the tasks, sorted. */
  queues: string[];
  /** False when the runtime blob is missing: the page shows the index row and a banner. */
  runtime_present: boolean;
  /** A line for a banner (missing runtime, corrupt workflow); null when all is well. */
  banner: string | null;
  /** The level `auto` picks for this workflow, and the number of nodes each level has. */
  auto_level: ApiGraphLevel;
  level_sizes: Record<ApiGraphLevel, number>;
  /** Opaque; the SSE stream's first event carries the same kind of token. */
  token: string | null;
  /** Whether worker heartbeats are available (the workers panel and on-worker split hide without). */
  has_workers: boolean;
  /** Whether task logs can be read (the log panels hide without). */
  has_logs: boolean;
}

// ---------------------------------------------------------------------------------------------
// GET /api/workflows/ID/graph?level=auto|families|siblings|layers|tasks

/** A node of one task. `id` is the task name. */
export interface ApiTaskNode {
  id: string;
  kind: 'task';
  label: string;
  queue: string;
  size: 1;
  status: ApiTaskStatus;
  /** For a running task: true when a worker's heartbeat lists it, false when it waits in its queue, null without heartbeats. */
  on_worker: boolean | null;
  /** Longest-path depth from a root (0 for roots). */
  depth: number;
}

/** A node standing for several tasks. `id` is `#N` (task names never hold `#`). */
export interface ApiGroupNode {
  id: string;
  kind: 'group';
  /** `train ×998`, `depth 3 ×120`, or `first-task +N`. */
  label: string;
  /** The queue of its tasks (`*` when a `layers` node mixes queues). */
  queue: string;
  size: number;
  counts: ApiCounts;
  /** Running tasks a worker's heartbeat lists (0 without heartbeats). */
  on_worker: number;
  /** Its tasks, in definition order (the client lists them virtualized). */
  task_names: string[];
  /** Depth of its first task. */
  depth: number;
}

export type ApiGraphNode = ApiTaskNode | ApiGroupNode;

export interface ApiGraphEdge {
  from: string;
  to: string;
}

export interface ApiGraph {
  workflow_id: string;
  /** The level served (never `auto`). */
  level: ApiGraphLevel;
  /** Nodes in topological order (a node comes after every node it has an edge from). */
  nodes: ApiGraphNode[];
  edges: ApiGraphEdge[];
  /** Number of tasks of the workflow. */
  total_tasks: number;
  token: string | null;
}

// ---------------------------------------------------------------------------------------------
// GET /api/workflows/ID/task?name=NAME

export interface ApiDependency {
  name: string;
  status: ApiTaskStatus;
  /** True for a gate (an extra predecessor added by fan-in sequentializing), false for depends_on. */
  gate: boolean;
}

export interface ApiCondition {
  /** The condition as written. */
  expression: string;
  /** The parents it reads, with their output values (null when not available; `unavailable` says why). */
  parents: Array<{ name: string; status: ApiTaskStatus; value: unknown; unavailable: string | null }>;
  /** `true`/`false` once decided (from the task's status and skip reason); null while undecided. */
  result: boolean | null;
  /** Why it was skipped, when it was. */
  skip_reason: string | null;
}

/** One attempt of a task, with its log when one was stored. */
export interface ApiAttempt {
  attempt_no: number;
  /** `live` while it runs; null when no log metadata is stored. */
  outcome: 'live' | 'succeeded' | 'failed' | null;
  exit_code: number | null;
  started: string | null;
  ended: string | null;
  worker: string | null;
  /** Bytes of the stored log; null when there is no log. */
  log_bytes: number | null;
  /** `/api/workflows/ID/log?name=…&attempt=N` when there is a log; null otherwise. */
  log_url: string | null;
}

/** Where a running task is: on a worker (by heartbeat) or still in its queue. */
export interface ApiPlacement {
  state: 'on-worker' | 'in-queue' | 'unknown';
  worker_id: string | null;
  host: string | null;
  since: string | null;
}

export interface ApiTaskDetail {
  workflow_id: string;
  name: string;
  status: ApiTaskStatus;
  queue: string;
  /** Current attempt, and how many attempts the retry budget allows (num_retries + 1 since the last workflow retry). */
  attempt_no: number;
  max_attempts: number;
  dispatched_at: string | null;
  started_at: string | null;
  completed_at: string | null;
  retry_due_at: string | null;
  error: string | null;
  dependencies: ApiDependency[];
  /** The dependency policy (`all`, `any`, `all_settled` or a number) and what it says now. */
  dep_policy: 'all' | 'any' | 'all_settled' | number;
  policy_verdict: 'ready' | 'wait' | 'blocked';
  condition: ApiCondition | null;
  /** Tasks that depend on this one. */
  dependents: string[];
  attempts: ApiAttempt[];
  placement: ApiPlacement | null;
  /** `jobq workflow explain` reasons for this task (empty for a finished task). */
  explain: string[];
  /** The output as JSON (inline or read from its blob); null when none. */
  output: unknown;
  /** Set when the output could not be read (one line). */
  output_error: string | null;
  /** `/api/workflows/ID/output?name=…` when the task has an output. */
  output_url: string | null;
  /** Stashed files found in the output. */
  stash: Array<{ filename: string; size: number; blob: string }>;
  /** CLI lines to copy. */
  commands: { logs: string; retry: string; cancel: string; rerun: string };
}

// ---------------------------------------------------------------------------------------------
// GET /api/workflows/ID/log?name=&attempt=&from=   → text/plain (the bytes from `from`, at most the last 64 KiB)
// Headers: `X-Jobq-Log-Size` (bytes of the whole stored log), `X-Jobq-Log-From` (the offset of the first byte sent), `X-Jobq-Log-Outcome` (live|succeeded|failed|unknown).

/** GET /api/workflows/ID/output?name=NAME → the output JSON itself (`null` when none). */
export type ApiOutput = unknown;

// ---------------------------------------------------------------------------------------------
// GET /api/workers

export interface ApiWorker {
  worker_id: string;
  host: string;
  pid: number;
  version: string;
  state: 'ok' | 'stopping' | 'lost';
  started_at: string;
  seen_at: string;
  age_ms: number;
  queues: Array<{ queue: string; slots: number; busy: number; last_receive_at: string | null }>;
  running: Array<{ id: string; since: string; workflow_id: string | null; task: string | null; attempt_no: number | null }>;
  running_more: number;
}

export interface ApiWorkers {
  /** False when no worker registry is configured (the page says so). */
  available: boolean;
  workers: ApiWorker[];
  read_at: string;
}

// ---------------------------------------------------------------------------------------------
// GET /api/events?workflow=ID&level=auto|…   (text/event-stream)
//
// event: snapshot  data: ApiSnapshotEvent  (first, and after the runtime was replaced)
// event: delta     data: ApiDeltaEvent     (what changed since the previous event)
// event: error     data: ApiStreamError    (a storage error; the server keeps polling with back-off)
// Comments (`: ping`) keep the stream open. `id:` carries the token; a reconnect sends it back as
// Last-Event-ID and gets a delta from there when the server still knows it, else a snapshot.

/** A task as an event carries it. */
export interface ApiTaskChange {
  name: string;
  status: ApiTaskStatus;
  attempt_no: number;
  on_worker: boolean | null;
  error: string | null;
}

/** A group node's new counts (for the level the stream was opened with). */
export interface ApiGroupChange {
  id: string;
  counts: ApiCounts;
  on_worker: number;
}

export interface ApiDeltaEvent {
  workflow_id: string;
  token: string;
  status: ApiWorkflowStatus;
  counts: ApiCounts;
  rate_per_s: number | null;
  eta_ms: number | null;
  /** Tasks whose status, attempt, error or on-worker state changed. */
  tasks: ApiTaskChange[];
  /** Group nodes whose counts changed. */
  groups: ApiGroupChange[];
}

/** Sent first: the same shape, with every task that is not `pending` (the graph has the rest). */
export type ApiSnapshotEvent = ApiDeltaEvent;

export interface ApiStreamError {
  message: string;
  /** Milliseconds until the server polls again. */
  retry_in_ms: number;
}
