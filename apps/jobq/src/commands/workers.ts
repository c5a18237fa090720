import { Flags } from '@oclif/core';
import { formatElapsed, workerState } from '@jobq/ports';
import { JobqCommand } from '../base';
import { openDeployment } from '../deployment';
import { configFlags, configFromFlags } from '../flags';
import { table } from '../format';
import { queueKeyOf, workerJson } from '../placement';

export default class Workers extends JobqCommand {
  static override summary = 'List the workers of the deployment from their heartbeats';
  static override description =
    'Lists the workers that write heartbeats ({PREFIX}Workers; `jobq worker --heartbeat-interval`, default every 30s): Worker ({host}-{pid}-{rand}), Host, State, Age of the last heartbeat ' +
    '(on the storage service clock), Queues (busy/slots per queue) and Running tasks. State: ok, stopping (takes no new work), lost (silent for 3 heartbeat intervals). ' +
    'Lost workers are shown only with --all; rows silent for a day are removed by the coordinator. Workers of older jobq versions and Python workers send no heartbeats. ' +
    'Prints "No workers found." on stderr when none match.';
  static override examples = [
    '<%= config.bin %> workers',
    '<%= config.bin %> workers --queue cpu',
    '<%= config.bin %> workers --all --json',
  ];
  static override flags = {
    ...configFlags,
    queue: Flags.string({ char: 'q', description: 'Only workers pulling this queue (NAME, ACCOUNT/NAME or sb://NAMESPACE/NAME)' }),
    all: Flags.boolean({ description: 'Include lost workers', default: false }),
    json: Flags.boolean({ description: 'Print one JSON document: the target and its workers', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Workers);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const key = queueKeyOf(deployment);
    const wanted = flags.queue === undefined ? null : key(flags.queue);
    const workers = (await deployment.workers.list()).filter(
      (w) => (flags.all || workerState(w) !== 'lost') && (wanted === null || w.queues.some((q) => key(q.queue) === wanted)),
    );
    if (flags.json) {
      this.printJson({ target: deployment.target, workers: workers.map(workerJson) });
    } else if (workers.length > 0) {
      const rows = workers.map((w) => {
        const more = w.runningMore > 0 ? ` +${w.runningMore} more` : '';
        return [
          w.workerId,
          w.host,
          workerState(w),
          formatElapsed(w.ageInMs),
          w.queues.map((q) => `${q.queue} ${q.busy}/${q.slots}`).join(', '),
          w.running.length === 0 ? '-' : `${w.running.map((r) => r.id).join(', ')}${more}`,
        ];
      });
      process.stdout.write(`${table(['Worker', 'Host', 'State', 'Age', 'Queues (busy/slots)', 'Running'], rows)}\n`);
    }
    if (workers.length === 0) this.note('No workers found.');
  }
}
