import { setTimeout as sleep } from 'node:timers/promises';
import { Args, Flags } from '@oclif/core';
import { taskQueue, taskStatus, taskState, isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError } from '@jobq/ports';
import { JobqCommand, errorLine } from '../../base';
import { openDeployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { workflowNotFound } from '../../listing';
import { terminalOf, totalOf } from '../../format';
import { LiveBlock, RateWindow, countsKey, elapsedMs, frameLines, parseInterval, progressLine } from '../../watch-view';
import { skippedJson, skippedTasks } from '../../skips';
import { placementOf, queueKeyOf, readWorkers } from '../../placement';

/** Running tasks named in the live view. */
const RUNNING_SHOWN = 5;
/** How often the live view reads the worker heartbeats (while tasks run). */
const PLACEMENT_REFRESH_MS = 10_000;
/** A workflow still not activated after this long gets one note on stderr. */
const INACTIVE_WARNING_MS = 30_000;

/** The tasks that make a finished workflow fail, in definition order. */
function failedTasks(runtime: WorkflowRuntime): Array<{ name: string; status: string; error: string | null }> {
  return runtime.definition.tasks
    .map((t) => ({ name: t.name, status: taskStatus(runtime, t.name), error: taskState(runtime, t.name)?.error ?? null }))
    .filter((t) => t.status === 'failed' || t.status === 'upstream_failed' || t.status === 'cancelled');
}

/** Why a workflow that did not complete ended: its first failed task, else its status. */
function failureLine(runtime: WorkflowRuntime): string {
  const failed = failedTasks(runtime).find((t) => t.status === 'failed');
  const why = failed ? `: task "${failed.name}" failed${failed.error !== null ? `: ${failed.error.split('\n')[0]}` : ''}` : '';
  return `workflow "${runtime.workflowId}" ${runtime.status}${why}`;
}

export default class WorkflowWatch extends JobqCommand {
  static override summary = 'Follow a workflow live until it finishes';
  static override description =
    "Reads the workflow's runtime every --interval and shows its progress: the task counts, a bar (# completed, X failed/upstream_failed/cancelled, " +
    '- skipped, > running, . pending or ready), the rate of finished tasks per second over the last minute, the time left at that rate, ' +
    'the first running tasks and the first skipped tasks with the reason each was skipped (--by-layer adds a rollup by layer). On a terminal the view is redrawn in place; otherwise a line is ' +
    'printed only when the counts change. Stops when the workflow is completed, failed or cancelled: exits 0 when it completed and 1 ' +
    'otherwise. With --json nothing is shown while watching and the final status is printed as one JSON document. Ctrl-C stops watching; ' +
    'the workflow goes on.';
  static override examples = [
    '<%= config.bin %> workflow watch nightly-2024-06-01',
    '<%= config.bin %> workflow watch nightly-2024-06-01 --interval 5s --by-layer',
    '<%= config.bin %> workflow myaccount/MyProject watch 3f2a… --json',
  ];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    interval: Flags.string({ description: 'Time between refreshes: 1s, 500ms, 2m or seconds (at least 100ms)', default: '1s' }),
    'by-layer': Flags.boolean({ description: 'Add a rollup of the tasks by layer (name without a trailing -NNN)', default: false }),
    json: Flags.boolean({ description: 'Show nothing while watching; print the final status as one JSON document', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowWatch);
    const intervalInMs = parseInterval(flags.interval);
    if (intervalInMs === null || intervalInMs < 100)
      throw new UsageError(`--interval expects a duration of at least 100ms such as 1s, 500ms or 2m, got "${flags.interval}"`);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const first = await deployment.store.load(args.id);
    if (first === null) throw workflowNotFound(args.id, deployment.target);

    const redraw = process.stdout.isTTY === true;
    const view = new LiveBlock(process.stdout, redraw);
    const rate = new RateWindow(60_000);
    let runtime = first.runtime;
    let lastKey = '';
    let readFailing = false;
    let warnedInactive = false;
    const watchStart = Date.now();
    let placements = new Map<string, string>();
    let placementsAt = Number.NEGATIVE_INFINITY;
    const key = queueKeyOf(deployment);
    for (;;) {
      const now = Date.now();
      if (redraw && !flags.json && runtime.counts.running > 0 && now - placementsAt >= PLACEMENT_REFRESH_MS) {
        placementsAt = now;
        const workers = await readWorkers(deployment.workers);
        placements = new Map();
        for (const def of runtime.definition.tasks) {
          const t = taskState(runtime, def.name);
          if (t?.status !== 'running' || workers === null) continue;
          const placed = placementOf(
            runtime.workflowId,
            {
              taskName: def.name,
              status: t.status,
              attemptNo: t.attemptNo,
              queue: taskQueue(runtime.definition, def),
              dispatchedAt: t.dispatchedAt,
            },
            workers,
            now,
            key,
          );
          if (placed !== null) placements.set(def.name, placed.text);
        }
      }
      if (!runtime.activated && !warnedInactive && now - watchStart >= INACTIVE_WARNING_MS) {
        warnedInactive = true;
        this.note(`workflow "${args.id}" is still not activated: is a coordinator running? (jobq workflow doctor checks)`);
      }
      rate.add(now, terminalOf(runtime.counts));
      if (!flags.json) {
        if (redraw) {
          view.show(frameLines(runtime, rate, { byLayer: flags['by-layer'], runningShown: RUNNING_SHOWN, now, placements }));
        } else if (countsKey(runtime) !== lastKey) {
          view.show([`${new Date(now).toISOString().slice(11, 19)} ${progressLine(runtime, rate, now)}`]);
        }
      }
      lastKey = countsKey(runtime);
      if (isTerminalWorkflowStatus(runtime.status)) break;
      await sleep(intervalInMs);
      try {
        const loaded = await deployment.store.load(args.id);
        if (loaded === null) throw new JobqError('not-found', `workflow "${args.id}" no longer exists in ${deployment.target}`);
        runtime = loaded.runtime;
        if (readFailing) this.note('reading the workflow works again');
        readFailing = false;
      } catch (error) {
        if (error instanceof JobqError && error.code === 'not-found') throw error;
        if (!readFailing) this.note(`could not read the workflow (retrying every ${flags.interval}): ${errorLine(error)}`);
        readFailing = true;
      }
    }

    const failed = failedTasks(runtime);
    if (flags.json) {
      const summary = await deployment.client.status(args.id).catch(() => null);
      this.printJson({
        target: deployment.target,
        workflow_id: runtime.workflowId,
        name: runtime.definition.name,
        status: runtime.status,
        counts: runtime.counts,
        total: totalOf(runtime.counts),
        created_at: runtime.createdAt,
        updated_at: runtime.updatedAt,
        finished_at: runtime.finishedAt,
        elapsed_ms: elapsedMs(runtime, Date.now()),
        error: summary?.error ?? null,
        failed_tasks: failed,
        skipped_tasks: skippedJson(skippedTasks(runtime)),
      });
    } else if (!redraw) {
      view.show(frameLines(runtime, rate, { byLayer: flags['by-layer'], runningShown: RUNNING_SHOWN, now: Date.now() }));
    }
    if (runtime.status !== 'completed') {
      this.note(`jobq: ${failureLine(runtime)}`);
      throw new ReportedFailure(failureLine(runtime));
    }
  }
}
