import { Args, Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';

export default class WorkflowRetry extends JobqCommand {
  static override summary = 'Retry the failed, upstream_failed and cancelled tasks of a workflow';
  static override description =
    'Records a retry request on the workflow\'s index row and wakes the coordinator, which resets the failed, upstream_failed and cancelled ' +
    'tasks (and what they blocked) and dispatches those that are ready again. A workflow with nothing to retry is left alone and the reason is printed. ' +
    'Exits 1 when the workflow does not exist.';
  static override examples = ['<%= config.bin %> workflow myaccount/MyProject retry 3f2a…', '<%= config.bin %> workflow retry nightly-2024-06-01 --json'];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    json: Flags.boolean({ description: 'Print one JSON document: {workflowId, target, requested, message}', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowRetry);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const result = await deployment.client.retry(args.id);
    const message = result.requested
      ? `Retry requested for workflow ${args.id} in ${deployment.target}: the coordinator resets its failed, upstream_failed and cancelled tasks.`
      : (result.message ?? 'No tasks to retry.');
    if (flags.json) this.printJson({ workflowId: args.id, target: deployment.target, requested: result.requested, message });
    else process.stdout.write(`${message}\n`);
  }
}
