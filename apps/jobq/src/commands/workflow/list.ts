import { Flags } from '@oclif/core';
import { WORKFLOW_STATUSES, isTerminalWorkflowStatus, type WorkflowStatus } from '@jobq/dag-core';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';
import { workflowTable } from '../../format';
import { collectWorkflows } from '../../listing';
import { summaryJson } from '../../json-output';

export default class WorkflowList extends JobqCommand {
  static override summary = 'List the workflows of the deployment';
  static override description =
    'Lists workflows from the index: ID, Name, Status, Progress ("c/t done, f fail[, s skip][, x cancelled]": fail counts failed and upstream_failed tasks, cancelled ones apart) and the last update. ' +
    '--status keeps only the given statuses (repeat the flag or separate with commas). --recent N shows the N most recently ' +
    'finished workflows (completed, failed or cancelled), newest first. Prints "No workflows found." on stderr when nothing matches.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject list',
    '<%= config.bin %> workflow list --status running,pending',
    '<%= config.bin %> workflow list --recent 10 --json',
  ];
  static override flags = {
    ...configFlags,
    status: Flags.string({
      description: 'Only workflows in these statuses',
      multiple: true,
      delimiter: ',',
      options: [...WORKFLOW_STATUSES],
    }),
    recent: Flags.integer({ description: 'Only the N most recently updated finished workflows, newest first', min: 1 }),
    json: Flags.boolean({ description: 'Print one JSON document: an array of index rows', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowList);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    let statuses = flags.status as WorkflowStatus[] | undefined;
    let workflows;
    if (flags.recent !== undefined) {
      statuses = (statuses ?? [...WORKFLOW_STATUSES]).filter((s) => isTerminalWorkflowStatus(s));
      workflows = (await collectWorkflows(deployment.client, { status: statuses, recent: true }, flags.recent)).items;
    } else {
      workflows = (await collectWorkflows(deployment.client, statuses ? { status: statuses } : {})).items;
    }
    if (flags.json) this.printJson(workflows.map(summaryJson));
    else if (workflows.length > 0) process.stdout.write(`${workflowTable(workflows)}\n`);
    if (workflows.length === 0) this.note('No workflows found.');
  }
}
