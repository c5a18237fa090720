import { Args, Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';

export default class WorkflowCancel extends JobqCommand {
  static override summary = 'Request the cancellation of a workflow';
  static override description =
    "Records a cancel request on the workflow's index row and wakes the coordinator, which then cancels every task not yet finished " +
    '(running tasks are stopped by their workers). Cancelling a finished workflow changes nothing and says so; cancelling twice is harmless. ' +
    'Exits 1 when the workflow does not exist.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject cancel 3f2a…',
    '<%= config.bin %> workflow cancel nightly-2024-06-01 --json',
  ];
  static override args = { id: Args.string({ description: 'Workflow id', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    json: Flags.boolean({ description: 'Print one JSON document: {workflow_id, target, requested, message}', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowCancel);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const result = await deployment.client.cancel(args.id);
    const message = result.requested
      ? `Cancellation requested for workflow ${args.id} in ${deployment.target}.`
      : (result.message ?? 'Nothing to cancel.');
    if (flags.json) this.printJson({ workflow_id: args.id, target: deployment.target, requested: result.requested, message });
    else process.stdout.write(`${message}\n`);
  }
}
