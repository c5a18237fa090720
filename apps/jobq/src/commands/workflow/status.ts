import { Args, Flags } from '@oclif/core';
import { taskStatus, taskState, isMergeNode, isSatisfying, taskQueue, type TaskStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { runtimeView } from '@jobq/coordinator';
import { isJobqError } from '@jobq/ports';
import { paramsLine } from '../../params';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';
import { countsLine, layerRollup, layerTable, percentDone, statusBar, taskTable, totalOf, type TaskLine } from '../../format';
import { collectTasks, requireWorkflow } from '../../listing';
import { skipLines, skippedTask } from '../../skips';
import { readTaskOutputs, taskLogBlob } from '../../task-outputs';
import { runtimeViewJson, summaryJson, type PlacementJson, type StatusTaskJson } from '../../json-output';
import { failedTailLines } from '../../task-logs';
import { placementOf, queueKeyOf, readWorkers } from '../../placement';

/** Skipped tasks listed with their reasons (all of them with --verbose). */
const SKIPPED_SHOWN = 20;

/** One task of the status report. */
interface StatusTask extends TaskLine {
  /** Satisfied dependencies of all (`c/total`); null when only the task rows were available. */
  deps: string | null;
  /** When the current attempt was dispatched. */
  dispatchedAt: string | null;
  /** When a worker started it (as its completion reported). */
  startedAt: string | null;
  completedAt: string | null;
  /** Why the task was skipped (docs/conditions.md); null unless skipped. */
  skip_reason: string | null;
  /** Where a running task is (docs/design.md#placement); null when not known. */
  placement?: PlacementJson | null;
}

/** `outputs` null: leave the key out (--no-outputs); merge nodes run nothing and have no log. */
function statusTaskJson(
  workflowId: string,
  t: StatusTask,
  outputs: Map<string, unknown> | null,
  merges: ReadonlySet<string>,
): StatusTaskJson {
  return {
    task_name: t.taskName,
    status: t.status,
    queue: t.queue,
    attempt_no: t.attemptNo,
    error: t.error,
    deps: t.deps,
    dispatched_at: t.dispatchedAt,
    started_at: t.startedAt,
    completed_at: t.completedAt,
    skip_reason: t.skip_reason,
    ...(outputs === null ? {} : { output: outputs.get(t.taskName) ?? null }),
    log_blob: merges.has(t.taskName) ? null : taskLogBlob(workflowId, t.taskName, t.attemptNo),
    placement: t.placement ?? null,
  };
}

/** The tasks of a runtime, in definition order. */
function runtimeTasks(runtime: WorkflowRuntime): StatusTask[] {
  const statusOf = (name: string): TaskStatus => taskStatus(runtime, name);
  return runtime.definition.tasks.map((def) => {
    const task = taskState(runtime, def.name);
    const satisfied = def.dependsOn.filter((d) => isSatisfying(statusOf(d))).length;
    return {
      taskName: def.name,
      status: task?.status ?? 'pending',
      queue: taskQueue(runtime.definition, def),
      attemptNo: task?.attemptNo ?? 0,
      error: task?.error ?? null,
      deps: `${satisfied}/${def.dependsOn.length}`,
      dispatchedAt: task?.dispatchedAt ?? null,
      startedAt: task?.startedAt ?? null,
      completedAt: task?.completedAt ?? null,
      skip_reason: task?.status === 'skipped' ? task.error : null,
    };
  });
}

export default class WorkflowStatus extends JobqCommand {
  static override summary = 'Show the status of one workflow';
  static override description =
    "Prints the workflow's name and status, a progress bar (# completed, X failed/upstream_failed/cancelled, - skipped, > running, . pending or ready), " +
    'the task counts and a task table (Task, Status, Queue, Attempt, Error) in definition order, then each skipped task with the reason it was skipped. Everything comes from the runtime blob, the source of truth ' +
    "(the index row, which lists use, may lag it for a moment). --by-layer adds a rollup by layer: a task's layer is its name without a " +
    'trailing "-NNN" (three or more digits, optionally followed by "_N"). Exits 1 when the workflow does not exist.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject status 3f2a…',
    '<%= config.bin %> workflow status nightly-2024-06-01 --by-layer --no-tasks',
    '<%= config.bin %> workflow status nightly-2024-06-01 --json',
  ];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    'by-layer': Flags.boolean({ description: 'Add a rollup of the tasks by layer (name without a trailing -NNN)', default: false }),
    tasks: Flags.boolean({ description: 'Include the task table', default: true, allowNo: true }),
    verbose: Flags.boolean({ char: 'v', description: 'Print errors in full instead of shortened', default: false }),
    json: Flags.boolean({
      description:
        'Print one JSON document (the index row, the runtime view, the tasks with their outputs and, with --by-layer, the layers)',
      default: false,
    }),
    outputs: Flags.boolean({
      description: "With --json, read every task's output (--no-outputs leaves the key out and reads no output blob)",
      default: true,
      allowNo: true,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowStatus);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const summary = await requireWorkflow(deployment.client, args.id, deployment.target);
    let runtime: WorkflowRuntime | null;
    try {
      runtime = (await deployment.store.load(args.id))?.runtime ?? null;
    } catch (error) {
      // A workflow the coordinator set aside because its runtime does not decode: the index row tells.
      if (summary.status !== 'corrupt' || !isJobqError(error, 'corrupt')) throw error;
      runtime = null;
    }
    let tasks: StatusTask[] = [];
    if (runtime !== null) {
      tasks = runtimeTasks(runtime);
    } else if (flags.tasks || flags['by-layer']) {
      // The runtime blob is missing (a submit that did not finish): the task rows are all there is.
      const rows = (await collectTasks(deployment.client, { workflowId: args.id })).items;
      tasks = rows.map((r) => ({
        ...r,
        deps: null,
        dispatchedAt: null,
        startedAt: null,
        completedAt: null,
        skip_reason: r.status === 'skipped' ? r.error : null,
      }));
    }
    if (tasks.some((t) => t.status === 'running')) {
      const workers = await readWorkers(deployment.workers);
      if (workers !== null) {
        const key = queueKeyOf(deployment);
        const now = Date.now();
        for (const t of tasks) t.placement = placementOf(args.id, t, workers, now, key);
      }
    }
    const layers = flags['by-layer'] ? layerRollup(tasks) : undefined;
    const status = runtime?.status ?? summary.status;
    const counts = runtime?.counts ?? summary.counts;
    const view = runtime === null ? null : runtimeViewJson(runtimeView(runtime));

    if (flags.json) {
      const outputs =
        flags.tasks && flags.outputs
          ? runtime === null
            ? new Map<string, unknown>()
            : await readTaskOutputs(deployment.outputs, runtime.definition, runtime, (line) => this.note(line))
          : null;
      const merges = new Set(runtime?.definition.tasks.filter((t) => isMergeNode(t.name, t.kwargs)).map((t) => t.name) ?? []);
      this.printJson({
        target: deployment.target,
        ...summaryJson(summary),
        status,
        counts,
        total: totalOf(counts),
        index_status: summary.status,
        runtime: view,
        deadline_at: runtime?.deadlineAt ?? null,
        cancel_reason: runtime?.cancelReason ?? null,
        params: runtime?.definition.params ?? null,
        ...(flags.tasks ? { tasks: tasks.map((t) => statusTaskJson(args.id, t, outputs, merges)) } : {}),
        ...(layers ? { layers } : {}),
      });
      return;
    }

    const lines = [
      `Workflow  ${summary.name} (${summary.workflowId}) in ${deployment.target}`,
      `Status    ${status}${runtime?.cancelRequested && status !== 'cancelled' ? ' (cancel requested)' : ''}`,
      `Progress  ${statusBar(counts, 50)} ${percentDone(counts)}`,
      `Tasks     ${totalOf(counts)}: ${countsLine(counts)}`,
      `Created   ${summary.createdAt}   Updated ${runtime?.updatedAt ?? summary.updatedAt}${runtime?.finishedAt ? `   Finished ${runtime.finishedAt}` : ''}`,
    ];
    if (runtime === null && status === 'corrupt') lines.push('Note      the runtime cannot be read: showing the index row');
    else if (runtime === null) lines.push('Note      the runtime blob is missing (the submit did not finish): showing the index row');
    if (summary.error !== null) lines.push(`Error     ${summary.error}`);
    if (runtime?.definition.params) lines.push(`Params    ${paramsLine(runtime.definition.params)}`);
    if (runtime?.deadlineAt) lines.push(`Deadline  ${runtime.deadlineAt} (timeout_s ${runtime.definition.timeoutS})`);
    if (runtime?.cancelReason && runtime.cancelRequested) lines.push(`Cancelled ${runtime.cancelReason}`);
    if (layers) lines.push('', layerTable(layers));
    if (flags.tasks) lines.push('', tasks.length === 0 ? 'No tasks.' : taskTable(tasks, { verbose: flags.verbose }));
    const placed = tasks.filter((t) => t.placement);
    if (placed.length > 0) lines.push('', 'Placement', ...placed.map((t) => `  ${t.taskName}: ${t.placement!.text}`));
    const skipped = tasks.filter((t) => t.status === 'skipped').map((t) => skippedTask(t.taskName, t.error));
    if (skipped.length > 0) {
      lines.push(
        '',
        `Skipped tasks (${skipped.length})`,
        ...skipLines(skipped, { prefix: '  ', limit: flags.verbose ? 0 : SKIPPED_SHOWN, more: '--verbose shows all' }),
      );
    }
    // The end of what failed tasks printed (docs/observability.md#task-logs).
    if (runtime !== null && counts.failed > 0)
      lines.push(...(await failedTailLines(deployment.outputs, runtime, { maxTasks: 3, lines: 5 })));
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
