import { Args, Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { ReportedFailure } from '../../errors';
import { paramFlags, paramOverrides } from '../../params';
import { printDiagnostics } from '../../diagnostics';
import { loadWorkflowFile } from '../../workflow-file';

export default class WorkflowValidate extends JobqCommand {
  static override summary = 'Check workflow files without touching any storage';
  static override description =
    'Parses and validates each file as YAML (.yaml, .yml) or JSON: fields, task names, queues, dependencies, cycles and conditions, ' +
    'with its parameters resolved (--param, --params-file) and its matrix tasks expanded. ' +
    'Every problem is printed on stderr as "file:line:column: severity: code: message", severity "error" or "warning", sorted by line, ' +
    'with a hint such as (did you mean "depends_on"?) when there is one; in a terminal each is followed by its source line and a caret under the column. ' +
    'Nothing is read from or written to storage. Exits 1 when any file has an error.';
  static override examples = [
    '<%= config.bin %> workflow validate examples/diamond.yaml',
    '<%= config.bin %> workflow validate dags/*.yaml --json',
  ];
  static override strict = false;
  static override args = { files: Args.string({ description: 'Workflow files (YAML or JSON)', required: true, ignoreStdin: true }) };
  static override flags = {
    'max-fan-in': Flags.integer({ description: 'Also check the definition after the fan-in transform with this limit (≥ 2)', min: 2 }),
    ...paramFlags,
    json: Flags.boolean({
      description:
        'Print one JSON document: {"files": [{"file", "ok", "tasks" (valid files), "issues": [{"severity", "code", "message", "path", "line", "column", "hint"}]}]}',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(WorkflowValidate);
    const files = argv as string[];
    const params = paramOverrides(flags);
    if (!params.ok) {
      printDiagnostics([params.report]);
      throw new ReportedFailure(`${flags['params-file']} is not a valid params file`);
    }
    const results = files.map((file) => loadWorkflowFile(file, flags['max-fan-in'], params.overrides));
    for (const result of results) {
      printDiagnostics([result]);
      if (!flags.json) this.note(result.ok ? `OK    ${result.path}  (${result.definition.tasks.length} tasks)` : `FAIL  ${result.path}`);
    }
    if (flags.json) {
      this.printJson({
        files: results.map((r) => ({
          file: r.path,
          ok: r.ok,
          ...(r.ok ? { tasks: r.definition.tasks.length } : {}),
          issues: r.diagnostics,
        })),
      });
    }
    const failed = results.filter((r) => !r.ok).length;
    if (failed > 0) throw new ReportedFailure(`${failed} of ${results.length} workflow file(s) are invalid`);
  }
}
