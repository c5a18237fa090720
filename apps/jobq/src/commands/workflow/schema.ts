import { workflowJsonSchema } from '@jobq/dag-core';
import { JobqCommand } from '../../base';

export default class WorkflowSchema extends JobqCommand {
  static override summary = 'Print the JSON Schema of workflow files';
  static override description =
    'Prints the JSON Schema (draft 2020-12) that workflow files follow, for editors and linters (for example the YAML language server: ' +
    '"# yaml-language-server: $schema=workflow.schema.json"). Needs no configuration and touches no storage. ' +
    'The schema checks the shape of a file; "jobq workflow validate" also checks names, dependencies, cycles and conditions.';
  static override examples = ['<%= config.bin %> workflow schema > workflow.schema.json'];

  async run(): Promise<void> {
    await this.parse(WorkflowSchema);
    this.printJson(workflowJsonSchema());
  }
}
