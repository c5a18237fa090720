import { Flags } from '@oclif/core';
import { getRealUpstreamTasks } from '@jobq/task';
import { JobqCommand } from '../../base';
import { callHelper, requireTaskEnvironment, writeJsonLine } from './info';

export default class TaskGetRealUpstreamTasks extends JobqCommand {
  static override summary = 'Print the names of the real upstream tasks';
  static override description =
    'Prints the names of the upstream tasks of the running task, in order, as one JSON array (or one name per line with --lines). ' +
    'Fan-in merge nodes (--max-fan-in) are transparent: the original parents are listed. ' +
    'When the worker does not provide the full list, these are the upstream tasks that completed or were skipped. ' +
    'Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task get-real-upstream-tasks',
    'for t in $(<%= config.bin %> task get-real-upstream-tasks --lines); do echo "$t"; done',
  ];
  static override flags = {
    lines: Flags.boolean({ description: 'One name per line instead of a JSON array', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(TaskGetRealUpstreamTasks);
    requireTaskEnvironment('get-real-upstream-tasks', ['JOBQ_WORKFLOW_UPSTREAM_REFS']);
    const names = await callHelper(() => getRealUpstreamTasks());
    if (flags.lines) process.stdout.write(names.map((name) => `${name}\n`).join(''));
    else writeJsonLine(names);
  }
}
