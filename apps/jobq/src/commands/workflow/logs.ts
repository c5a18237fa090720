import { setTimeout as sleep } from 'node:timers/promises';
import { Args, Flags } from '@oclif/core';
import { closestName, taskState, type WorkflowRuntime } from '@jobq/dag-core';
import { JobqError, type TaskLogEntry } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { openDeployment, type Deployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { requireWorkflow, workflowNotFound } from '../../listing';
import { followTaskLog, lastLines } from '../../task-logs';
import type { TaskLogJson } from '../../json-output';

/** How often `--follow` looks for new output. */
const FOLLOW_INTERVAL_IN_MS = 2_000;

function logJson(entry: TaskLogEntry): TaskLogJson {
  const m = entry.metadata;
  return {
    task: entry.taskName,
    attempt: entry.attemptNo,
    outcome: m?.outcome ?? null,
    exit_code: m?.exitCode ?? null,
    started: m?.started || null,
    ended: m?.ended ?? null,
    bytes: m?.bytes ?? null,
    stored_bytes: entry.size,
    worker: m?.worker || null,
  };
}

function table(entries: readonly TaskLogEntry[]): string {
  const rows = [['Task', 'Attempt', 'Outcome', 'Exit', 'Bytes', 'Worker', 'Ended']];
  for (const e of entries) {
    const m = e.metadata;
    rows.push([
      e.taskName,
      String(e.attemptNo),
      m?.outcome ?? '?',
      m?.exitCode === null || m === null ? '-' : String(m.exitCode),
      String(m?.bytes ?? e.size),
      m?.worker || '-',
      m?.ended ?? '-',
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

export default class WorkflowLogs extends JobqCommand {
  static override summary = "List task logs, or print one attempt's log";
  static override description =
    'Workers keep what each workflow task attempt prints (stdout and stderr: its first 64 KiB and its last JOBQ_TASK_LOG_TAIL_BYTES, default 1 MiB) in a log blob, ' +
    'written before the attempt completes and, for tasks running longer than JOBQ_TASK_LOG_FLUSH_INTERVAL (30s), rewritten as a live snapshot. ' +
    'Without TASK (or with --json) lists the logs; with TASK prints the raw text of its current attempt (or --attempt N). ' +
    '--follow prints the log as it grows, polling every 2s, follows retries, and exits 0 when the task completed or was skipped, else 1. ' +
    'Exits 1 for an unknown workflow or task, an attempt that did not run, or a task that has not started; a task attempt that left no log exits 0.';
  static override examples = [
    '<%= config.bin %> workflow logs nightly-2024-06-01',
    '<%= config.bin %> workflow logs nightly-2024-06-01 train --tail 50',
    '<%= config.bin %> workflow logs nightly-2024-06-01 train --follow',
    '<%= config.bin %> workflow logs nightly-2024-06-01 train --attempt 1',
  ];
  static override args = {
    id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }),
    task: Args.string({ description: 'Task name (names may contain "/")', required: false, ignoreStdin: true }),
  };
  static override flags = {
    ...configFlags,
    attempt: Flags.integer({ description: 'The attempt to print (default: the current one)', min: 1 }),
    follow: Flags.boolean({ char: 'f', description: 'Print the log as it grows until the task ends (needs TASK)', default: false }),
    tail: Flags.integer({ char: 'n', description: 'Print only the last N lines', min: 0 }),
    json: Flags.boolean({ description: 'Print the list of logs (of the workflow, or of TASK) as one JSON document', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowLogs);
    if (flags.follow && args.task === undefined) throw new UsageError('--follow needs a TASK: jobq workflow logs ID TASK --follow');
    if (flags.json && (flags.follow || flags.attempt !== undefined || flags.tail !== undefined))
      throw new UsageError('--json lists the logs; it cannot be used with --follow, --attempt or --tail');
    if (args.task === undefined && (flags.attempt !== undefined || flags.tail !== undefined))
      throw new UsageError('--attempt and --tail need a TASK');
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    await requireWorkflow(deployment.client, args.id, deployment.target);
    const runtime = await this.runtime(deployment, args.id);
    const taskName = args.task;
    if (taskName !== undefined) this.requireTask(runtime, taskName);

    if (taskName === undefined || flags.json) {
      const entries = await deployment.outputs.listTaskLogs(args.id, taskName);
      if (flags.json) {
        this.printJson({ workflow_id: args.id, task: taskName ?? null, logs: entries.map(logJson) });
        return;
      }
      if (entries.length === 0) {
        this.note(`no task logs for workflow "${args.id}"${taskName !== undefined ? ` task "${taskName}"` : ''}: printed nothing`);
        return;
      }
      process.stdout.write(`${table(entries)}\n`);
      return;
    }

    const state = taskState(runtime, taskName);
    const current = state?.attemptNo ?? 0;
    if (flags.follow) {
      const final = await followTaskLog({
        task: async () => {
          const loaded = await this.runtime(deployment, args.id);
          const t = taskState(loaded, taskName);
          return { status: t?.status ?? 'pending', attemptNo: t?.attemptNo ?? 0 };
        },
        read: (attemptNo, ifNoneMatch) =>
          deployment.outputs.getTaskLog(args.id, taskName, attemptNo, ifNoneMatch !== undefined ? { ifNoneMatch } : {}),
        write: (bytes) => process.stdout.write(bytes),
        note: (line) => this.note(line),
        sleep: (ms) => sleep(ms),
        intervalInMs: FOLLOW_INTERVAL_IN_MS,
        ...(flags.attempt !== undefined ? { attemptNo: this.checkAttempt(taskName, flags.attempt, current) } : {}),
      });
      if (final !== 'completed' && final !== 'skipped') {
        process.stderr.write(`jobq: task "${taskName}" ended ${final}\n`);
        throw new ReportedFailure(`task "${taskName}" ended ${final}`, 1);
      }
      return;
    }

    if (current === 0)
      throw new JobqError(
        'not-found',
        `task "${taskName}" has not started yet (${state?.status ?? 'pending'}): no log to print (--follow waits for it)`,
      );
    const attemptNo = flags.attempt === undefined ? current : this.checkAttempt(taskName, flags.attempt, current);
    const read = await deployment.outputs.getTaskLog(args.id, taskName, attemptNo);
    if (read === null || read.notModified) {
      this.note(`task "${taskName}" attempt ${attemptNo} left no log (it printed nothing, or its worker keeps no logs): printed nothing`);
      return;
    }
    const text = Buffer.from(read.bytes);
    if (flags.tail !== undefined) {
      const lines = lastLines(text.toString('utf8'), flags.tail);
      if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
      return;
    }
    process.stdout.write(text);
  }

  private async runtime(deployment: Deployment, workflowId: string): Promise<WorkflowRuntime> {
    const loaded = await deployment.store.load(workflowId);
    if (loaded === null) throw workflowNotFound(workflowId, deployment.target);
    return loaded.runtime;
  }

  private requireTask(runtime: WorkflowRuntime, taskName: string): void {
    const names = runtime.definition.tasks.map((t) => t.name);
    if (names.includes(taskName)) return;
    const close = closestName(taskName, names);
    throw new JobqError(
      'not-found',
      `workflow "${runtime.workflowId}" has no task "${taskName}"${close !== undefined ? `; did you mean "${close}"?` : ''}`,
    );
  }

  private checkAttempt(taskName: string, attempt: number, current: number): number {
    if (current === 0) throw new JobqError('not-found', `task "${taskName}" has not started yet: it has no attempt ${attempt}`);
    if (attempt > current) throw new JobqError('not-found', `task "${taskName}" has attempts 1–${current}, not ${attempt}`);
    return attempt;
  }
}
