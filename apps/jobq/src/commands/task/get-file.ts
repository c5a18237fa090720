import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Args } from '@oclif/core';
import { parseStashMarker } from '@jobq/dag-core/wire';
import { envValue, errorMessage } from '@jobq/ports';
import { StashedFile, getFile } from '@jobq/task';
import { JobqCommand } from '../../base';
import { UsageError } from '../../errors';
import { callHelper, requireTaskEnvironment } from './info';

/** The stash marker given as JSON text (what `jobq task stash-file` prints), or null when `text` is not one. */
export function markerArgument(text: string): StashedFile | null {
  if (!text.trimStart().startsWith('{')) return null;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`jobq task get-file: the marker is not valid JSON: ${errorMessage(error)}`);
  }
  const marker = parseStashMarker(value);
  if (marker === null)
    throw new UsageError(
      'jobq task get-file: not a stash marker: expected {"__jobq_stash__":{"v":1,"state":"ready","blob_name":…,"md5":…,"size":…}}',
    );
  return new StashedFile(marker);
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

export default class TaskGetFile extends JobqCommand {
  static override summary = 'Download a file an upstream task stashed';
  static override description =
    'Downloads the file upstream task TASK stashed with "jobq task stash-file": the one under top-level key KEY of its output, ' +
    'or, without KEY, the one that is its whole output. TASK may also be a marker as printed by stash-file; inside a worker ' +
    'it must appear in the output of a direct upstream task (the worker refuses any other file). ' +
    'DEST is a file path or an existing directory (the file keeps its stashed name there); the size and md5 are checked and DEST ' +
    'is never left half-written. Prints the path written. Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task get-file train model model.pt',
    '<%= config.bin %> task get-file export ./inputs/',
    `<%= config.bin %> task get-file "$(<%= config.bin %> task get-upstream train | jq -c .model)" model.pt`,
  ];
  static override usage = ['task get-file TASK [KEY] DEST', 'task get-file MARKER DEST'];
  static override args = {
    task: Args.string({ description: 'The upstream task (or a stash marker as JSON)', required: false, ignoreStdin: true }),
    key: Args.string({
      description: 'The top-level key of its output holding the file (omit when the output is the file)',
      required: false,
      ignoreStdin: true,
    }),
    dest: Args.string({ description: 'Where to write the file (a path or an existing directory)', required: false, ignoreStdin: true }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(TaskGetFile);
    if (args.task === undefined || args.key === undefined) {
      throw new UsageError('jobq task get-file: missing arguments: jobq task get-file TASK [KEY] DEST (or MARKER DEST)');
    }
    const task = args.task;
    const [key, dest] = args.dest === undefined ? [undefined, args.key] : [args.key, args.dest];
    let file = markerArgument(task);
    if (file !== null) {
      if (key !== undefined) throw new UsageError('jobq task get-file: a marker needs no KEY: jobq task get-file MARKER DEST');
      if (envValue(process.env, 'JOBQ_WORKFLOW_PREFIX') === null) {
        throw new UsageError('jobq task get-file can only run inside a jobq workflow task (JOBQ_WORKFLOW_PREFIX is not set)');
      }
    } else {
      requireTaskEnvironment('get-file', ['JOBQ_WORKFLOW_UPSTREAM_REFS']);
      file = await callHelper(() => getFile(task, key));
    }
    const handle = file;
    const target = (await isDirectory(dest)) ? join(dest, handle.fileName) : dest;
    await callHelper(() => handle.downloadTo(target));
    process.stdout.write(`${resolve(target)}\n`);
  }
}
