import { Args, Flags } from '@oclif/core';
import {
  shardOf,
  taskStatus,
  taskState,
  isBlocking,
  isTerminalTaskStatus,
  taskQueue,
  type TaskDefinition,
  type TaskStatus,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import type { ExplainReport, ExplainedQueue, ExplainedTask } from '@jobq/coordinator';
import { JobqError, type TaskQueue } from '@jobq/ports';
import { JobqCommand, errorLine } from '../../base';
import { paramsLine } from '../../params';
import { openDeployment, type Deployment } from '../../deployment';
import { durationMs, legacyDurationFlag } from '../../duration-flags';
import { configFlags, configFromFlags } from '../../flags';
import { countsLine, truncate } from '../../format';
import { workflowNotFound } from '../../listing';
import { skipLines, skippedJson, skippedTasks } from '../../skips';
import { failedTailLines } from '../../task-logs';
import { placementOf, queueKeyOf, readWorkers } from '../../placement';
import { holderText, readShards } from '../../shard-views';
import type { ExplainedQueueJson, ExplainedShardJson, ExplainedTaskJson, ExplainedWorkflowJson, TaskDetailJson } from '../../json-output';

/** One parent's value as a condition sees it. */
interface ConditionInput {
  name: string;
  status: TaskStatus;
  /** Inline output (JSON text, shortened), `(stored in a blob)`, or null for no output. */
  output: string | null;
}

/** Everything known about one task, terminal or not. */
interface TaskDetail {
  name: string;
  status: TaskStatus;
  queue: string;
  attemptNo: number;
  numRetries: number;
  dependsOn: string[];
  depPolicy: string;
  condition: string | null;
  dispatchedAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
  error: string | null;
  /** Why the task was skipped (docs/conditions.md); null unless skipped. */
  skip_reason: string | null;
  reasons: string[];
  /** The parents' outputs, for a task with a condition. */
  conditionInputs: ConditionInput[] | null;
}

const OUTPUT_SHOWN = 80;

function outputOf(ref: string | null): string | null {
  if (ref === null) return null;
  return ref.startsWith('blob:') ? '(stored in a blob)' : truncate(ref, OUTPUT_SHOWN);
}

/** Why a finished task ended as it did (the report covers only unfinished ones). */
function terminalReasons(runtime: WorkflowRuntime, def: TaskDefinition): string[] {
  const task = taskState(runtime, def.name)!;
  const tries = `attempt ${task.attemptNo} of ${task.retryBase + def.numRetries + 1}`;
  switch (task.status) {
    case 'completed':
      return [`completed${task.completedAt !== null ? ` at ${task.completedAt}` : ''} (${tries})`];
    case 'failed':
      return [`failed on ${tries}: ${task.error ?? 'no error recorded'}`, 'jobq workflow retry ID runs it again with a fresh retry budget'];
    case 'upstream_failed': {
      const blocking = [...def.dependsOn, ...(def.gates ?? [])].filter((p) => isBlocking(taskStatus(runtime, p)));
      const names = blocking.map((p) => `"${p}" (${taskStatus(runtime, p)})`).join(', ');
      return [`dep_policy ${def.depPolicy} can no longer be met: blocked by ${names || 'its dependencies'}`];
    }
    case 'skipped':
      // The reason names what decided (docs/conditions.md); the condition and its inputs follow.
      return [`skipped: ${task.error ?? (def.condition !== null ? 'condition false' : 'no reason recorded')}`];
    case 'cancelled':
      return [`cancelled${task.error !== null ? `: ${task.error}` : ' (the workflow was cancelled)'}`];
    default:
      return [];
  }
}

function taskDetail(runtime: WorkflowRuntime, def: TaskDefinition, explained: ExplainedTask | undefined): TaskDetail {
  const task = taskState(runtime, def.name)!;
  const conditionInputs =
    def.condition === null
      ? null
      : def.dependsOn.map((p) => {
          const parent = taskState(runtime, p);
          const finished = parent !== undefined && isTerminalTaskStatus(parent.status);
          return { name: p, status: parent?.status ?? 'pending', output: finished ? outputOf(parent.outputRef) : null };
        });
  return {
    name: def.name,
    status: task.status,
    queue: taskQueue(runtime.definition, def),
    attemptNo: task.attemptNo,
    numRetries: def.numRetries,
    dependsOn: def.dependsOn,
    depPolicy: String(def.depPolicy),
    condition: def.condition,
    dispatchedAt: task.dispatchedAt,
    startedAt: task.startedAt,
    completedAt: task.completedAt,
    error: task.error,
    skip_reason: task.status === 'skipped' ? task.error : null,
    reasons: explained?.reasons ?? terminalReasons(runtime, def),
    conditionInputs,
  };
}

function workflowJson(w: ExplainReport['workflow']): ExplainedWorkflowJson {
  return {
    workflow_id: w.workflowId,
    name: w.name,
    status: w.status,
    index_status: w.indexStatus,
    counts: w.counts,
    activated: w.activated,
    updated_at: w.updatedAt,
    reasons: w.reasons,
  };
}

function explainedTaskJson(t: ExplainedTask): ExplainedTaskJson {
  return { name: t.name, status: t.status, queue: t.queue, attempt_no: t.attemptNo, reasons: t.reasons, retry_due_at: t.retry_due_at };
}

function queueJson(q: ExplainedQueue): ExplainedQueueJson {
  return {
    queue: q.queue,
    name: q.name,
    ready_tasks: q.readyTasks,
    running_tasks: q.runningTasks,
    approximate_message_count: q.approximateMessageCount,
    oldest_message_age_ms: q.oldestMessageAgeMs,
    reasons: q.reasons,
  };
}

function taskDetailJson(d: TaskDetail, retryDueAt: string | null): TaskDetailJson {
  return {
    name: d.name,
    status: d.status,
    queue: d.queue,
    attempt_no: d.attemptNo,
    num_retries: d.numRetries,
    depends_on: d.dependsOn,
    dep_policy: d.depPolicy,
    condition: d.condition,
    dispatched_at: d.dispatchedAt,
    started_at: d.startedAt,
    completed_at: d.completedAt,
    error: d.error,
    skip_reason: d.skip_reason,
    reasons: d.reasons,
    condition_inputs: d.conditionInputs,
    retry_due_at: retryDueAt,
  };
}

/** Puts where each running task is (docs/design.md#placement) first among its reasons. */
async function addPlacements(deployment: Deployment, workflowId: string, runtime: WorkflowRuntime, tasks: ExplainedTask[]): Promise<void> {
  if (!tasks.some((t) => t.status === 'running')) return;
  const workers = await readWorkers(deployment.workers);
  if (workers === null) return;
  const key = queueKeyOf(deployment);
  const now = Date.now();
  for (const task of tasks) {
    const state = taskState(runtime, task.name);
    if (state === undefined) continue;
    const placement = placementOf(
      workflowId,
      { taskName: task.name, status: state.status, attemptNo: state.attemptNo, queue: task.queue, dispatchedAt: state.dispatchedAt },
      workers,
      now,
      key,
    );
    if (placement !== null) task.reasons.unshift(placement.text);
  }
}

/** The task queues of the workflow's unfinished tasks, opened (without creating anything) so explain can peek them. */
async function openQueues(deployment: Deployment, runtime: WorkflowRuntime): Promise<Map<string, TaskQueue>> {
  const specs = new Set<string>();
  for (const def of runtime.definition.tasks) {
    const status = taskState(runtime, def.name)?.status;
    if (status === 'ready' || status === 'running') specs.add(taskQueue(runtime.definition, def));
  }
  const opened = new Map<string, TaskQueue>();
  await Promise.all(
    [...specs].map(async (spec) => {
      try {
        opened.set(spec, await deployment.queue(spec));
      } catch {
        // A queue that cannot be opened (e.g. a backend not supported here) is simply not peeked.
      }
    }),
  );
  return opened;
}

/**
 * The workflow's shard and who owns it (docs/sharding.md#inspecting-shards): `3 of 4, owned by
 * coord-b (epoch 7)`; null without a shard manifest (one shard: nothing to say).
 */
async function workflowShard(deployment: Deployment, workflowId: string): Promise<{ line: string; json: ExplainedShardJson } | null> {
  try {
    const stored = await (await deployment.ownership()).readManifest();
    if (stored === null) return null;
    const index = shardOf(workflowId, stored.manifest.shards);
    const report = await readShards(deployment, { queues: false, only: index });
    const shard = report.shards[index];
    if (shard === undefined) return null;
    return {
      line: `${index} of ${report.count}, ${holderText(shard)}`,
      json: {
        index,
        count: report.count,
        leased: shard.leased,
        owner: shard.owner,
        epoch: shard.epoch,
        held_without_shards: shard.unshardedHolder,
      },
    };
  } catch (error) {
    return { line: `? (cannot read the shards: ${errorLine(error)})`, json: undefined };
  }
}

function queueLine(q: ExplainedQueue): string {
  const parts = [`${q.readyTasks} ready, ${q.runningTasks} running`];
  if (q.approximateMessageCount !== null) parts.push(`about ${q.approximateMessageCount} message(s) in the queue`);
  return `${q.queue}${q.name !== null && q.name !== q.queue ? ` (${q.name})` : ''}: ${parts.join(', ')}`;
}

function workflowLines(report: ExplainReport, target: string, runtime: WorkflowRuntime, shard: string | null): string[] {
  const w = report.workflow;
  const index = w.indexStatus !== null && w.indexStatus !== w.status ? ` (index row: ${w.indexStatus})` : '';
  const params = runtime.definition.params;
  return [
    `Workflow  ${w.name} (${w.workflowId}) in ${target}`,
    ...(shard === null ? [] : [`Shard     ${shard}`]),
    `Status    ${w.status}${index}${w.activated ? '' : ', not activated'}, updated ${w.updatedAt}`,
    `Tasks     ${countsLine(w.counts)}`,
    ...(params ? [`Params    ${paramsLine(params)}`] : []),
  ];
}

function taskLines(detail: TaskDetail, indent: string): string[] {
  const lines = [`${indent}${detail.name}  ${detail.status}  queue ${detail.queue}  attempt ${detail.attemptNo}`];
  for (const reason of detail.reasons) lines.push(`${indent}  - ${reason}`);
  if (detail.conditionInputs !== null) {
    lines.push(`${indent}  condition: ${detail.condition}`);
    for (const input of detail.conditionInputs) {
      const value = input.output ?? (isTerminalTaskStatus(input.status) ? 'null (no output)' : 'null (not finished yet)');
      lines.push(`${indent}    ${input.name} (${input.status}) = ${value}`);
    }
  }
  return lines;
}

export default class WorkflowExplain extends JobqCommand {
  static override summary = 'Explain why a workflow, or one of its tasks, is not progressing';
  static override description =
    "Reads the workflow's runtime and says, for every unfinished task, why it is where it is: the dependencies it still waits for " +
    '(and its dep_policy), a condition and the parent outputs it reads, max_parallelism holding it back, the workflow not yet ' +
    'activated by a coordinator, a cancel request, or a task running for longer than --stale-running (its message may be lost). ' +
    'The task queues in use are peeked: an oldest message older than --oldest-message means no worker is taking them. ' +
    'Skipped tasks are listed with the reason each was skipped (the references its condition read and their values). ' +
    'With --task, only that task, finished or not (a finished one says how it ended: its error, why it was skipped with the condition and its inputs, ' +
    'the failed dependencies). Nothing is changed. Exits 1 when the workflow or the task does not exist.';
  static override examples = [
    '<%= config.bin %> workflow explain nightly-2024-06-01',
    '<%= config.bin %> workflow explain nightly-2024-06-01 --task train-007',
    '<%= config.bin %> workflow myaccount/MyProject explain 3f2a… --json',
  ];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    task: Flags.string({ description: 'Explain only this task' }),
    'stale-running': Flags.string({ description: 'Flag tasks running for longer than this (a duration)', default: '60m' }),
    'oldest-message': Flags.string({
      description: 'Flag a queue whose oldest visible message is older than this (a duration)',
      default: '5m',
    }),
    'stale-running-min': legacyDurationFlag('stale-running-min', 'stale-running', 'minutes'),
    'oldest-message-min': legacyDurationFlag('oldest-message-min', 'oldest-message', 'minutes'),
    limit: Flags.integer({
      description: 'Unfinished and skipped tasks shown in text (0 = all; --json always has all)',
      default: 20,
      min: 0,
    }),
    json: Flags.boolean({
      description: 'Print one JSON document: the workflow, its unfinished tasks (or the one --task) and the queues',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowExplain);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const loaded = await deployment.store.load(args.id);
    if (loaded === null) throw workflowNotFound(args.id, deployment.target);
    const runtime = loaded.runtime;
    const taskDef = flags.task === undefined ? undefined : runtime.definition.tasks.find((t) => t.name === flags.task);
    if (flags.task !== undefined && taskDef === undefined) {
      throw new JobqError(
        'not-found',
        `task "${flags.task}" is not in workflow "${args.id}" (${runtime.definition.tasks.length} tasks; jobq workflow tasks ${args.id} lists them)`,
      );
    }
    const queues = await openQueues(deployment, runtime);
    const report = await deployment.client.explain(args.id, {
      staleRunningAfterMs: durationMs(flags['stale-running'], '--stale-running'),
      oldestMessageAfterMs: durationMs(flags['oldest-message'], '--oldest-message'),
      peekQueues: (spec) => queues.get(spec),
    });
    // explain read the runtime again: prefer its view of the task, which may have moved on.
    const fresh = (await deployment.store.load(args.id))?.runtime ?? runtime;
    await addPlacements(deployment, args.id, fresh, report.tasks);
    const shard = await workflowShard(deployment, args.id);
    const shardJson = shard?.json === undefined ? {} : { shard: shard.json };

    if (taskDef !== undefined) {
      const explained = report.tasks.find((t) => t.name === taskDef.name);
      const detail = taskDetail(fresh, taskDef, explained);
      const queue = report.queues.find((q) => q.queue === detail.queue) ?? null;
      if (flags.json) {
        this.printJson({
          target: deployment.target,
          workflow: workflowJson(report.workflow),
          params: fresh.definition.params ?? null,
          task: taskDetailJson(detail, explained?.retry_due_at ?? null),
          queue: queue === null ? null : queueJson(queue),
          ...shardJson,
        });
        return;
      }
      const lines = [...workflowLines(report, deployment.target, fresh, shard?.line ?? null), '', ...taskLines(detail, '')];
      if (detail.dependsOn.length > 0)
        lines.push(
          `  depends on (${detail.depPolicy}): ${detail.dependsOn.map((p) => `${p} (${taskState(fresh, p)?.status ?? '?'})`).join(', ')}`,
        );
      if (detail.error !== null && detail.status !== 'failed' && detail.status !== 'skipped') lines.push(`  last error: ${detail.error}`);
      if (queue !== null && !isTerminalTaskStatus(taskStatus(fresh, taskDef.name))) {
        lines.push('', `Queue ${queueLine(queue)}`, ...queue.reasons.map((r) => `  - ${r}`));
      }
      if (detail.status === 'failed')
        lines.push(...(await failedTailLines(deployment.outputs, fresh, { maxTasks: 1, lines: 20, only: taskDef.name })));
      process.stdout.write(`${lines.join('\n')}\n`);
      return;
    }

    const skipped = skippedTasks(fresh);
    if (flags.json) {
      this.printJson({
        target: deployment.target,
        workflow: workflowJson(report.workflow),
        tasks: report.tasks.map(explainedTaskJson),
        queues: report.queues.map(queueJson),
        params: fresh.definition.params ?? null,
        skipped_tasks: skippedJson(skipped),
        ...shardJson,
      });
      return;
    }
    const lines = workflowLines(report, deployment.target, fresh, shard?.line ?? null);
    if (report.workflow.reasons.length > 0) lines.push('', 'Workflow', ...report.workflow.reasons.map((r) => `  - ${r}`));
    if (report.tasks.length > 0) {
      const shown = flags.limit === 0 ? report.tasks : report.tasks.slice(0, flags.limit);
      lines.push('', `Unfinished tasks (${report.tasks.length})`);
      for (const task of shown) {
        const def = fresh.definition.tasks.find((t) => t.name === task.name);
        if (def !== undefined) lines.push(...taskLines(taskDetail(fresh, def, task), '  '));
      }
      if (shown.length < report.tasks.length)
        lines.push(`  … ${report.tasks.length - shown.length} more (--limit 0 shows all; --task NAME explains one)`);
    }
    if (skipped.length > 0) {
      lines.push(
        '',
        `Skipped tasks (${skipped.length})`,
        ...skipLines(skipped, { prefix: '  ', limit: flags.limit, more: '--limit 0 shows all' }),
      );
    }
    if (report.queues.length > 0) {
      lines.push('', 'Queues');
      for (const q of report.queues) lines.push(`  ${queueLine(q)}`, ...q.reasons.map((r) => `    - ${r}`));
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
