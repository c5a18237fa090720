import { Args, Flags } from '@oclif/core';
import { errorMessage } from '@jobq/ports';
import { setOutput } from '@jobq/task';
import { JobqCommand } from '../../base';
import { UsageError } from '../../errors';
import { readStdin } from '../../io';
import { callHelper, requireTaskEnvironment } from './info';

export default class TaskSetOutput extends JobqCommand {
  static override summary = "Set the running workflow task's output";
  static override description =
    'Writes the output of the running workflow task to $JOBQ_OUTPUT_FILE; the worker stores it when the task exits ' +
    '(inline up to 32 KiB, in a blob above) and downstream tasks read it with "jobq task get-upstream". ' +
    'VALUE is taken as a string unless --json is given, which parses it as any JSON value (object, array, number, true/false, null). ' +
    'With --stdin the value is read from standard input instead (one trailing newline is dropped from text). ' +
    'Calling it again replaces the output. Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task set-output "done"',
    `<%= config.bin %> task set-output --json '{"accuracy": 0.93, "model": "runs/7"}'`,
    'python evaluate.py | <%= config.bin %> task set-output --stdin --json',
    `<%= config.bin %> task set-output --json "{\\"model\\": $(<%= config.bin %> task stash-file model.pt)}"`,
  ];
  static override args = {
    value: Args.string({ description: 'The output: text, or JSON with --json (omit with --stdin)', required: false, ignoreStdin: true }),
  };
  // --json is about the value read, not the output: a failure prints no JSON document.
  static override jsonOutput = false;
  static override flags = {
    json: Flags.boolean({ description: 'Parse the value as JSON instead of taking it as a string', default: false }),
    stdin: Flags.boolean({ description: 'Read the value from standard input', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(TaskSetOutput);
    requireTaskEnvironment('set-output', ['JOBQ_OUTPUT_FILE']);
    let text: string;
    if (flags.stdin) {
      if (args.value !== undefined) throw new UsageError('jobq task set-output: give either VALUE or --stdin, not both');
      text = await readStdin();
      if (!flags.json) text = text.replace(/\r?\n$/, '');
    } else {
      if (args.value === undefined)
        throw new UsageError('jobq task set-output: missing VALUE (or pass --stdin to read it from standard input)');
      text = args.value;
    }
    let value: unknown = text;
    if (flags.json) {
      if (text.trim() === '')
        throw new UsageError(`jobq task set-output --json: the ${flags.stdin ? 'input' : 'value'} is empty, which is not JSON`);
      try {
        value = JSON.parse(text) as unknown;
      } catch (error) {
        throw new UsageError(
          `jobq task set-output --json: the ${flags.stdin ? 'input' : 'value'} is not valid JSON: ${errorMessage(error)}`,
        );
      }
    }
    await callHelper(() => setOutput(value));
  }
}
