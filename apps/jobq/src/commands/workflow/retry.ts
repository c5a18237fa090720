import { Args, Flags } from '@oclif/core';
import { JobqError, listSome } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { openDeployment, type Deployment } from '../../deployment';
import { UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';

/** How many task names the human output lists before "and N more". */
const NAMES_SHOWN = 10;

export default class WorkflowRetry extends JobqCommand {
  static override summary = 'Retry the failed, upstream_failed and cancelled tasks of a workflow, or re-run one task (--task)';
  static override description =
    "Records a retry request on the workflow's index row and wakes the coordinator, which resets the failed, upstream_failed and cancelled " +
    'tasks (and what they blocked) and dispatches those that are ready again. A workflow with nothing to retry is left alone and the reason is printed. ' +
    'With --task NAME it re-runs that one task instead — also a completed one — and, with --downstream, every task that depends on it, transitively: ' +
    'the request is recorded as a record of its own, and the coordinator sends the task again with its next attempt number (a new output), ' +
    'puts the dependents re-run with it back to pending so they run again and evaluate their conditions afresh, and runs a finished workflow again. ' +
    'A task that is unknown, has not run yet, or is queued or running now (or, with --downstream, has a dependent queued or running), and a workflow ' +
    'under a cancel, are refused with one line and exit code 2, and nothing is written. ' +
    'Exits 1 when the workflow does not exist. See docs/failure-model.md.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject retry 3f2a…',
    '<%= config.bin %> workflow retry nightly-2024-06-01 --json',
    '<%= config.bin %> workflow retry nightly-2024-06-01 --task featurize --downstream',
  ];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    task: Flags.string({ description: 'Re-run this task (also a completed one) instead of retrying the failed ones', helpValue: 'NAME' }),
    // No default: oclif checks `dependsOn` for a flag that has one even when it is not given.
    downstream: Flags.boolean({ description: 'With --task: also re-run every task that depends on it, transitively', dependsOn: ['task'] }),
    json: Flags.boolean({
      description:
        'Print one JSON document: {workflow_id, target, requested, message}; with --task {workflow_id, target, requested, task, downstream, tasks, request_id, requested_at, message}',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowRetry);
    if (flags.task !== undefined && flags.task.trim() === '') throw new UsageError('--task: give the name of a task of the workflow');
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    if (flags.task !== undefined) return this.rerun(deployment, args.id, flags.task, flags.downstream === true, flags.json);
    const result = await deployment.client.retry(args.id);
    const message = result.requested
      ? `Retry requested for workflow ${args.id} in ${deployment.target}: the coordinator resets its failed, upstream_failed and cancelled tasks.`
      : (result.message ?? 'No tasks to retry.');
    if (flags.json) this.printJson({ workflow_id: args.id, target: deployment.target, requested: result.requested, message });
    else process.stdout.write(`${message}\n`);
  }

  private async rerun(deployment: Deployment, workflowId: string, task: string, downstream: boolean, json: boolean): Promise<void> {
    const result = await deployment.client.rerun(workflowId, task, { downstream });
    if (!result.requested) {
      if (result.reason === 'corrupt') throw new JobqError('corrupt', result.message);
      throw new UsageError(`--task ${task}: ${result.message}`);
    }
    const shown = listSome(result.tasks, NAMES_SHOWN);
    const message = `Re-run of task "${task}"${downstream ? ' and what depends on it' : ''} requested for workflow ${workflowId} in ${deployment.target}: the coordinator runs ${shown} again.`;
    if (json) {
      this.printJson({
        workflow_id: workflowId,
        target: deployment.target,
        requested: true,
        task,
        downstream,
        tasks: result.tasks,
        request_id: result.requestId,
        requested_at: result.requestedAt,
        message,
      });
    } else process.stdout.write(`${message}\n`);
  }
}
