import { Args, Flags } from '@oclif/core';
import { stashFile } from '@jobq/task';
import { JobqCommand } from '../../base';
import { UsageError } from '../../errors';
import { callHelper, requireTaskEnvironment, writeJsonLine } from './info';

export default class TaskStashFile extends JobqCommand {
  static override summary = 'Upload a file for downstream tasks and print its marker';
  static override description =
    'Uploads PATH to workflow-files/{workflow_id}/{task}/{attempt}/{name} in the outputs target and prints its marker ' +
    '{"__jobq_stash__":{…}} as JSON on one line. It does not set the output: put the marker in it, as the output itself ' +
    'or as the value of a top-level key; downstream tasks then fetch the file with "jobq task get-file TASK [KEY] DEST". ' +
    'The file must not change while it is uploaded. Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    `<%= config.bin %> task set-output --json "{\\"model\\": $(<%= config.bin %> task stash-file model.pt)}"`,
    '<%= config.bin %> task stash-file out/metrics.csv --name metrics.csv',
    '<%= config.bin %> task stash-file report.html | <%= config.bin %> task set-output --stdin --json',
  ];
  static override args = {
    path: Args.string({ description: 'The local file to upload', required: false, ignoreStdin: true }),
  };
  static override flags = {
    name: Flags.string({ description: 'The file name to stash it under (default: the base name of PATH)' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(TaskStashFile);
    const path = args.path;
    if (path === undefined) throw new UsageError('jobq task stash-file: missing PATH, the file to upload');
    requireTaskEnvironment('stash-file', ['JOBQ_WORKFLOW_ATTEMPT', 'JOBQ_WORKFLOW_PREFIX']);
    const marker = await callHelper(() => stashFile(path, flags.name !== undefined ? { key: flags.name } : {}));
    writeJsonLine(marker);
  }
}
