import { Args, Flags } from '@oclif/core';
import { getUpstreamOutput } from '@jobq/task';
import { JobqCommand } from '../../base';
import { UsageError } from '../../errors';
import { callHelper, requireTaskEnvironment, writeJsonLine } from './info';

export default class TaskGetUpstream extends JobqCommand {
  static override summary = 'Print the output of an upstream task';
  static override description =
    'Prints the output of upstream task NAME as JSON on one line: null when it completed without output or was skipped. ' +
    'With --raw a string output is printed as it is, without quotes (other values stay JSON). ' +
    'Blob outputs are downloaded and md5-checked; stashed files appear as their {"__jobq_stash__": …} markers (fetch them with "jobq task get-file"). ' +
    'A task that is not upstream is a usage error (exit 2); an upstream task that failed or has not finished is an error (exit 1). ' +
    'Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task get-upstream prepare',
    'lr=$(<%= config.bin %> task get-upstream prepare | jq -r .learning_rate)',
    'path=$(<%= config.bin %> task get-upstream export --raw)',
  ];
  static override args = {
    name: Args.string({ description: 'The upstream task', required: false, ignoreStdin: true }),
  };
  static override flags = {
    raw: Flags.boolean({ description: 'Print a string output without JSON quotes', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(TaskGetUpstream);
    const name = args.name;
    if (name === undefined) throw new UsageError('jobq task get-upstream: missing NAME, the upstream task whose output to print');
    requireTaskEnvironment('get-upstream', ['JOBQ_WORKFLOW_UPSTREAM_REFS']);
    const value = await callHelper(() => getUpstreamOutput(name));
    if (flags.raw && typeof value === 'string') process.stdout.write(`${value}\n`);
    else writeJsonLine(value);
  }
}
