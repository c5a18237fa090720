import { existsSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { TASK_SOCKET_VARIABLE, envValue, parseWorkflowPrefix } from '@jobq/ports';
import { openWorkflowStore, storageConnectionFor } from '@jobq/store-azure';
import { configureTaskHelpers, isCancelled, type CancellationChecker } from '@jobq/task';
import { cancelCheckFromStore } from '@jobq/worker';
import { JobqCommand, errorLine } from '../../base';
import { withStorageCredential } from '../../credential';
import { ReportedFailure } from '../../errors';
import { callHelper, requireTaskEnvironment } from './info';

/**
 * The cancel check of the command line: the worker's cancel file first (no network), then, unless
 * `offline` or inside a worker that serves the task channel (`JOBQ_TASK_SOCKET`: the worker polls
 * the flag and creates the file, and the task has no credential to read the index), the workflow
 * index of `JOBQ_WORKFLOW_PREFIX`. A failed index read counts as "not cancelled" (with a warning),
 * as on the worker, so a storage hiccup never stops a task.
 */
export function cliCancellationChecker(offline: boolean, warn: (line: string) => void): CancellationChecker {
  return async (workflowId, env) => {
    const file = envValue(env, 'JOBQ_WORKFLOW_CANCEL_FILE');
    if (file !== null && existsSync(file)) return true;
    if (offline || envValue(env, TASK_SOCKET_VARIABLE) !== null) return false;
    const prefixText = envValue(env, 'JOBQ_WORKFLOW_PREFIX');
    if (prefixText === null) return false;
    try {
      const prefix = parseWorkflowPrefix(prefixText);
      const store = await openWorkflowStore({
        connection: withStorageCredential(storageConnectionFor(prefix.account, env)),
        prefix: prefix.prefix,
        createIfMissing: false,
      });
      return await cancelCheckFromStore(store)(workflowId);
    } catch (error) {
      warn(
        `jobq task is-cancelled: could not read the cancel flag of workflow "${workflowId}" (treated as not cancelled): ${errorLine(error)}`,
      );
      return false;
    }
  };
}

export default class TaskIsCancelled extends JobqCommand {
  static override summary = "Tell whether the running task's workflow has been cancelled";
  static override description =
    'Prints true or false and exits 0. With --exit-code nothing is printed and the exit code answers instead: ' +
    '0 when the workflow is cancelled, 1 when it is not (for "if jobq task is-cancelled --exit-code; then …"). ' +
    'The worker marks a task whose workflow it sees cancelled (no network needed); inside a worker that mark is the answer, ' +
    'elsewhere the workflow index is read too, unless --offline. A failed read counts as not cancelled, with a warning on stderr. Only inside a workflow task (exit 2 elsewhere).';
  static override examples = [
    '<%= config.bin %> task is-cancelled',
    'if <%= config.bin %> task is-cancelled --exit-code; then echo "cancelled: stopping"; exit 1; fi',
    '<%= config.bin %> task is-cancelled --offline',
  ];
  static override flags = {
    'exit-code': Flags.boolean({ description: 'Print nothing; exit 0 when cancelled, 1 when not', default: false }),
    offline: Flags.boolean({ description: "Only look at the worker's cancel mark; never read the workflow index", default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(TaskIsCancelled);
    requireTaskEnvironment('is-cancelled');
    configureTaskHelpers({ isCancelled: cliCancellationChecker(flags.offline, (line) => this.note(line)) });
    const cancelled = await callHelper(() => isCancelled());
    if (flags['exit-code']) {
      if (!cancelled) throw new ReportedFailure('not cancelled', 1);
      return;
    }
    process.stdout.write(`${String(cancelled)}\n`);
  }
}
