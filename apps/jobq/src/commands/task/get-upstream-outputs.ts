import { Flags } from '@oclif/core';
import { getUpstreamOutputs } from '@jobq/task';
import { JobqCommand } from '../../base';
import { callHelper, requireTaskEnvironment, writeJsonLine } from './info';

export default class TaskGetUpstreamOutputs extends JobqCommand {
  static override summary = 'Print the outputs of every upstream task that completed or was skipped';
  static override description =
    'Prints one JSON object {task: output}: every upstream task that completed or was skipped (skipped ones and tasks without output as null). ' +
    'Upstream tasks that failed or did not finish are absent, so a task with an "any" or N-of policy sees which of its parents succeeded. ' +
    'Stashed files appear as their {"__jobq_stash__": …} markers. Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task get-upstream-outputs',
    "<%= config.bin %> task get-upstream-outputs | jq -r 'keys[]'",
    '<%= config.bin %> task get-upstream-outputs --pretty',
  ];
  static override flags = {
    pretty: Flags.boolean({ description: 'Indent the JSON', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(TaskGetUpstreamOutputs);
    requireTaskEnvironment('get-upstream-outputs', ['JOBQ_WORKFLOW_UPSTREAM_REFS']);
    const outputs = await callHelper(() => getUpstreamOutputs());
    if (flags.pretty) this.printJson(outputs);
    else writeJsonLine(outputs);
  }
}
