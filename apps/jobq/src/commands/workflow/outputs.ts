import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { closestName, isMergeNode, taskState, type TaskRuntime, type WorkflowRuntime } from '@jobq/dag-core';
import { findStashMarkers } from '@jobq/dag-core/wire';
import { JobqError, isJobqError } from '@jobq/ports';
import { JobqCommand, errorLine } from '../../base';
import { openDeployment, type Deployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';
import { collectWorkflows } from '../../listing';
import { readTaskOutputs } from '../../task-outputs';

/** Workflow ids compared with an unknown one for a "did you mean" (the newest of the index). */
const IDS_COMPARED = 1000;

/** `; did you mean "x"?`, or nothing when no name is close. */
function hint(name: string, candidates: Iterable<string>): string {
  const near = closestName(name, candidates);
  return near === undefined ? '' : `; did you mean ${JSON.stringify(near)}?`;
}

/** The runtime of a workflow, or a `not-found` error naming the deployment and a close id. */
async function requireRuntime(deployment: Deployment, workflowId: string): Promise<WorkflowRuntime> {
  const loaded = await deployment.store.load(workflowId);
  if (loaded !== null) return loaded.runtime;
  if ((await deployment.client.status(workflowId)) !== null) {
    throw new JobqError(
      'not-found',
      `workflow "${workflowId}" has no runtime in ${deployment.target} (its submit did not finish; jobq workflow status ${workflowId} shows its index row)`,
    );
  }
  const known = await collectWorkflows(deployment.client, {}, IDS_COMPARED).catch(() => ({ items: [] }));
  throw new JobqError(
    'not-found',
    `workflow "${workflowId}" does not exist in ${deployment.target}${hint(
      workflowId,
      known.items.map((w) => w.workflowId),
    )}`,
  );
}

/** Why one task has no output to print yet (exit 1), or null when it has one (completed) or never will (skipped: null). */
function noOutputReason(workflowId: string, taskName: string, state: TaskRuntime | undefined): string | null {
  const status = state?.status ?? 'pending';
  const attempt = state?.attemptNo ?? 0;
  const quoted = JSON.stringify(taskName);
  switch (status) {
    case 'completed':
    case 'skipped':
      return null;
    case 'running':
      return `task ${quoted} is still running (attempt ${attempt}); jobq workflow watch ${workflowId} follows it`;
    case 'failed':
      return `task ${quoted} failed on attempt ${attempt}: ${state?.error ?? 'no error recorded'}; jobq workflow logs ${workflowId} ${taskName} prints what it printed`;
    case 'pending':
    case 'ready':
      return `task ${quoted} has not run yet (${status}${attempt > 0 ? `, attempt ${attempt} waits for its retry` : ''}); it has no output`;
    default:
      return `task ${quoted} is ${status}${state?.error ? `: ${state.error}` : ''}; it has no output`;
  }
}

/** A task name as one folder name: `/`, `\`, control and other unsafe characters percent-encoded, never `.` or `..`. */
export function taskFolder(taskName: string): string {
  if (taskName === '.' || taskName === '..') return taskName.replace(/\./g, '%2E');
  return taskName.replace(/[^A-Za-z0-9._\-@+=,]/g, (c) => encodeURIComponent(c).replace(/!/g, '%21'));
}

export default class WorkflowOutputs extends JobqCommand {
  static override summary = "Print the outputs of a workflow's tasks, or of one task";
  static override description =
    'Without TASK, prints one JSON object {task: output} of every task of the workflow in definition order (merge nodes left out); ' +
    "a task with no output (skipped, not finished, or it set none) is null. With TASK, prints that task's output alone as JSON " +
    '(null for a skipped task); exits 1 when the task failed (jobq workflow logs ID TASK shows what it printed), is still running or has not run yet. ' +
    'With --files DIR, also downloads the files the task(s) stashed (jobq task stash-file) and their outputs name: into DIR for one TASK, ' +
    "into DIR/TASK/ otherwise (characters such as / percent-encoded in the folder name); each file's size and md5 are checked against its marker " +
    'and a file is renamed into place only once they match (exit 1 naming the file otherwise); each path written goes to stderr. ' +
    'Exits 1 when the workflow or the task does not exist, suggesting a close name.';
  static override examples = [
    '<%= config.bin %> workflow outputs nightly-2024-06-01',
    '<%= config.bin %> workflow outputs nightly-2024-06-01 train | jq .accuracy',
    '<%= config.bin %> workflow outputs nightly-2024-06-01 export --files ./exported',
  ];
  static override args = {
    id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }),
    task: Args.string({ description: 'Only this task: print its output alone', required: false, ignoreStdin: true }),
  };
  static override flags = {
    ...configFlags,
    files: Flags.string({ description: 'Download the stashed files the outputs name into this folder (created if missing)' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowOutputs);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const runtime = await requireRuntime(deployment, args.id);
    const names = runtime.definition.tasks.filter((t) => !isMergeNode(t.name, t.kwargs)).map((t) => t.name);
    const taskName = args.task;
    if (taskName !== undefined) {
      if (!names.includes(taskName)) {
        throw new JobqError(
          'not-found',
          `task ${JSON.stringify(taskName)} is not in workflow "${args.id}"${hint(taskName, names)} (jobq workflow tasks ${args.id} lists them)`,
        );
      }
      const reason = noOutputReason(args.id, taskName, taskState(runtime, taskName));
      if (reason !== null) throw new Error(reason);
    }
    let unreadable = false;
    const outputs = await readTaskOutputs(
      deployment.outputs,
      runtime.definition,
      runtime,
      (line) => {
        unreadable = true;
        this.note(line);
      },
      taskName === undefined ? undefined : new Set([taskName]),
    );
    if (taskName !== undefined && unreadable)
      throw new JobqError('unavailable', `the output of task ${JSON.stringify(taskName)} cannot be read`);
    if (flags.files !== undefined) await this.download(deployment, outputs, flags.files, taskName !== undefined);
    const value = taskName === undefined ? Object.fromEntries(outputs) : outputs.get(taskName);
    process.stdout.write(`${JSON.stringify(value ?? null, null, 2)}\n`);
  }

  /** Downloads every stashed file the outputs name (DIR for one task, DIR/TASK/ for several), size and md5 checked. */
  private async download(deployment: Deployment, outputs: Map<string, unknown>, dir: string, oneTask: boolean): Promise<void> {
    for (const [taskName, output] of outputs) {
      const seen = new Set<string>();
      for (const { marker } of findStashMarkers(output)) {
        if (seen.has(marker.blobName)) continue;
        seen.add(marker.blobName);
        const fileName = marker.blobName.slice(marker.blobName.lastIndexOf('/') + 1);
        const folder = oneTask ? dir : join(dir, taskFolder(taskName));
        const path = resolve(folder, fileName);
        await mkdir(folder, { recursive: true });
        try {
          await deployment.outputs.downloadFileTo(marker, path);
        } catch (error) {
          const what = `file "${fileName}" stashed by task ${JSON.stringify(taskName)} (${marker.blobName})`;
          if (isJobqError(error, 'corrupt'))
            throw new JobqError(
              'corrupt',
              `${what} does not match its marker (size ${marker.size}, md5 ${marker.md5}): not written to ${path}`,
            );
          throw new JobqError(isJobqError(error) ? error.code : 'unavailable', `${what} cannot be downloaded: ${errorLine(error)}`);
        }
        this.note(`wrote ${path} (${marker.size} bytes, from task ${JSON.stringify(taskName)})`);
      }
    }
  }
}
