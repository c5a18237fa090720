import { Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { formatAge } from '../../age';
import { COORDINATOR_SETTINGS, isDurationSetting } from '../../config';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags, coordinatorFlags } from '../../flags';
import { metricsFlags, startMetrics } from '../../metrics';
import { coordinatorOptions, createCoordinator } from '../../services';

export default class WorkflowCoordinator extends JobqCommand {
  static override traced = true;

  static override summary = 'Run the coordinator of the deployment until interrupted';
  static override description =
    'Takes the coordinator lease of the prefix (one coordinator per prefix), then folds task completions and wake-ups into the workflows, ' +
    'dispatches the tasks that become ready, applies cancel and retry requests, times out tasks and repairs lost dispatches; ' +
    'with --retention (e.g. 30d) it also purges finished workflows that long after they finished (see `workflow purge`), at most 100 per minute. ' +
    'The target and the effective settings (each with where it came from: flag, environment, config file or default) are printed on stderr. ' +
    'Runs until SIGINT (Ctrl-C) or SIGTERM, then finishes the current batch, releases the lease and prints ' +
    '"Coordinator stopped — N completions, M tasks pushed, K batches". Exits 1 when the lease is held by another coordinator ' +
    '(--break-lease takes it over; the other coordinator then stops) or when the lease is lost while running.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject coordinator',
    '<%= config.bin %> workflow coordinator --batch-size 16 --idle-sleep 1',
    'JOBQ_WORKFLOW_PREFIX=myaccount/MyProject <%= config.bin %> workflow coordinator --break-lease',
  ];
  static override flags = {
    ...configFlags,
    ...coordinatorFlags,
    'break-lease': Flags.boolean({ description: 'Break a lease held by another coordinator first (that coordinator stops at once)', default: false }),
    ...metricsFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowCoordinator);
    const config = configFromFlags(flags);
    const instruments = await startMetrics(flags, (line) => this.note(line));
    const deployment = await openDeployment(config, { instruments });
    const coordinator = createCoordinator(deployment, { ...coordinatorOptions(config), breakLease: flags['break-lease'], instruments });
    await coordinator.start();
    const queues = config.queues.value ?? deployment.prefix.account;
    this.note(`Coordinator for ${deployment.target} (task queues on ${queues}, completions in ${deployment.completions.name}, outputs in ${deployment.outputs.outputsContainer})`);
    const settings = COORDINATOR_SETTINGS.map((s) => {
      const r = config.coordinator[s.key];
      const value = isDurationSetting(s) ? (r.value === 0 ? 'off' : formatAge(Math.round(r.value * 1000))) : r.value;
      return `${s.flag}=${value} (${r.source === 'default' ? 'default' : `${r.source} ${r.from ?? ''}`.trim()})`;
    });
    this.note(`Settings: ${settings.join(', ')}`);
    this.note(`Coordinator running${flags['break-lease'] ? ' (lease broken and taken over)' : ''}; Ctrl-C or SIGTERM stops it.`);

    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals === 1) {
        this.note(`${signal}: stopping after the current batch…`);
        // A failing stop surfaces through run() below.
        coordinator.stop().catch(() => undefined);
      } else {
        this.note(`${signal} again: exiting without waiting`);
        process.exit(130);
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      await coordinator.run();
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const c = coordinator.counters;
      this.note(`Coordinator stopped — ${c.completionsApplied} completions, ${c.pushes} tasks pushed, ${c.batches} batches`);
    }
  }
}
