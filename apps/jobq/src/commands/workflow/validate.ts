import { Args, Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { ReportedFailure } from '../../errors';
import { paramFlags, paramOverrides } from '../../params';
import { loadWorkflowFile } from '../../workflow-file';

export default class WorkflowValidate extends JobqCommand {
  static override summary = 'Check workflow files without touching any storage';
  static override description =
    'Parses and validates each file as YAML (.yaml, .yml) or JSON: fields, task names, queues, dependencies, cycles and conditions, ' +
    'with its parameters resolved (--param, --params-file) and its matrix tasks expanded. ' +
    'Every problem is printed as "file:line:column: code: message" on stderr. Nothing is read from or written to storage. ' +
    'Exits 1 when any file has an error.';
  static override examples = ['<%= config.bin %> workflow validate examples/diamond.yaml', '<%= config.bin %> workflow validate dags/*.yaml --json'];
  static override strict = false;
  static override args = { files: Args.string({ description: 'Workflow files (YAML or JSON)', required: true, ignoreStdin: true }) };
  static override flags = {
    'max-fan-in': Flags.integer({ description: 'Also check the definition after the fan-in transform with this limit (≥ 2)', min: 2 }),
    ...paramFlags,
    json: Flags.boolean({ description: 'Print one JSON document with the result of every file', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(WorkflowValidate);
    const files = argv as string[];
    const params = paramOverrides(flags);
    if (!params.ok) {
      for (const line of params.lines) this.note(line);
      throw new ReportedFailure(`${flags['params-file']} is not a valid params file`);
    }
    const results = files.map((file) => loadWorkflowFile(file, flags['max-fan-in'], params.overrides));
    for (const result of results) {
      for (const line of result.lines) this.note(line);
      if (!flags.json) this.note(result.ok ? `OK    ${result.path}  (${result.definition.tasks.length} tasks)` : `FAIL  ${result.path}`);
    }
    if (flags.json) {
      this.printJson(
        results.map((r) => (r.ok ? { file: r.path, ok: true, tasks: r.definition.tasks.length, warnings: r.lines } : { file: r.path, ok: false, errors: r.lines })),
      );
    }
    const failed = results.filter((r) => !r.ok).length;
    if (failed > 0) throw new ReportedFailure(`${failed} of ${results.length} workflow file(s) are invalid`);
  }
}
