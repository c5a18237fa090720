import { Args, Flags } from '@oclif/core';
import { TASK_STATUSES, type TaskStatus } from '@jobq/dag-core';
import type { TaskFilter, TaskRow } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { taskTable } from '../../format';
import { collectTasks, requireWorkflow } from '../../listing';
import { taskRowJson } from '../../json-output';

export default class WorkflowTasks extends JobqCommand {
  static override summary = 'List task rows of one, several or all workflows';
  static override description =
    'Lists tasks from the task table: Task, Status, Queue, Attempt and Error. With one workflow id, one table; with several, ' +
    'one table per workflow (in --json, one array whose rows carry their workflow_id); with none, the tasks of every workflow. ' +
    'Filters: --status (repeat or separate with commas), --queue (a queue spec) and --name-prefix (task names starting with it; ' +
    'it is not called --prefix because --prefix names the deployment). --limit caps the rows per workflow (0 = all). ' +
    'The coordinator writes the task table up to 2 s after a task changes (final once its workflow has finished); ' +
    '`workflow status` reads the runtime itself. Exits 1 when a given workflow does not exist.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject tasks 3f2a…',
    '<%= config.bin %> workflow tasks 3f2a… --status failed,upstream_failed -v',
    '<%= config.bin %> workflow tasks --workflow nightly --name-prefix train- --limit 0 --json',
    '<%= config.bin %> workflow tasks --status running --queue gpu',
  ];
  static override strict = false;
  static override args = { ids: Args.string({ description: 'Workflow ids (none: every workflow)', ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    workflow: Flags.string({ char: 'w', description: 'A workflow id (same as the positional ids; repeatable)', multiple: true }),
    'name-prefix': Flags.string({ description: 'Only tasks whose name starts with this (needs workflow ids)' }),
    status: Flags.string({ description: 'Only tasks in these statuses', multiple: true, delimiter: ',', options: [...TASK_STATUSES] }),
    queue: Flags.string({ description: 'Only tasks routed to this queue spec' }),
    limit: Flags.integer({ description: 'At most this many rows per workflow (0 = all)', default: 100, min: 0 }),
    verbose: Flags.boolean({ char: 'v', description: 'Print errors in full instead of shortened', default: false }),
    json: Flags.boolean({ description: 'Print one JSON document: an array of task rows', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(WorkflowTasks);
    const ids = [...new Set([...(argv as string[]), ...(flags.workflow ?? [])])];
    if (flags['name-prefix'] !== undefined && ids.length === 0)
      throw new UsageError('--name-prefix needs a workflow id (positional or --workflow)');
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const filter: Omit<TaskFilter, 'limit' | 'continuationToken'> = {
      ...(flags.status ? { status: flags.status as TaskStatus[] } : {}),
      ...(flags.queue !== undefined ? { queue: flags.queue } : {}),
      ...(flags['name-prefix'] !== undefined ? { namePrefix: flags['name-prefix'] } : {}),
    };
    const groups: Array<{ workflowId: string | null; rows: TaskRow[]; more: boolean }> = [];
    if (ids.length === 0) {
      const { items, more } = await collectTasks(deployment.client, filter, flags.limit);
      groups.push({ workflowId: null, rows: items, more });
    } else {
      for (const id of ids) {
        await requireWorkflow(deployment.client, id, deployment.target);
        const { items, more } = await collectTasks(deployment.client, { ...filter, workflowId: id }, flags.limit);
        groups.push({ workflowId: id, rows: items, more });
      }
    }

    if (flags.json) {
      this.printJson(groups.flatMap((g) => g.rows.map(taskRowJson)));
    } else if (groups.every((g) => g.rows.length === 0)) {
      this.note('No tasks found.');
    } else {
      const blocks = groups.map((group) => {
        const heading = group.workflowId !== null && groups.length > 1 ? `Workflow ${group.workflowId}\n` : '';
        const body =
          group.rows.length === 0
            ? 'No tasks found.'
            : taskTable(group.rows, { verbose: flags.verbose, withWorkflow: group.workflowId === null });
        return `${heading}${body}`;
      });
      process.stdout.write(`${blocks.join('\n\n')}\n`);
    }
    for (const group of groups) {
      if (group.more)
        this.note(
          `Showing the first ${flags.limit} tasks${group.workflowId !== null ? ` of ${group.workflowId}` : ''}; --limit 0 shows all.`,
        );
    }
  }
}
