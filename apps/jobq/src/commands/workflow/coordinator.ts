import { Flags } from '@oclif/core';
import { formatDuration } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { COORDINATOR_SETTINGS, isDurationSetting } from '../../config';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags, coordinatorFlags } from '../../flags';
import { metricsFlags, startMetrics } from '../../metrics';
import { coordinatorOptions, createCoordinator } from '../../services';
import { healthFlags, LIVENESS_STALE_AFTER_IN_MS, startHealth, type HealthSource } from '../../health';
import type { Coordinator } from '@jobq/coordinator';

/** What the coordinator's /livez and /readyz say (docs/operations.md#health-endpoints). */
export function coordinatorHealth(coordinator: Coordinator | null, now: () => number = Date.now): HealthSource {
  return {
    live() {
      if (coordinator === null) return { ok: true, details: { role: 'coordinator', phase: 'starting', holds: 'nothing' } };
      const h = coordinator.health();
      const sinceTick = Math.max(0, now() - h.lastTickAt);
      return {
        ok: h.phase === 'stopping' || h.phase === 'stopped' || sinceTick <= LIVENESS_STALE_AFTER_IN_MS,
        details: { role: 'coordinator', phase: h.phase, holds: h.holds, last_tick_ms_ago: sinceTick },
      };
    },
    ready() {
      if (coordinator === null) return { ok: false, details: { role: 'coordinator', phase: 'starting', holds: 'nothing' } };
      const h = coordinator.health();
      // A standby waiting for the lease is ready: it holds nothing, and says so.
      return { ok: h.phase === 'running' || h.phase === 'waiting', details: { role: 'coordinator', phase: h.phase, holds: h.holds } };
    },
  };
}

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
    '(--break-lease takes it over; the other coordinator then stops; --wait-for-lease waits as a standby instead, ready on /readyz, until the lease is free) ' +
    'or when the lease is lost while running. With --health-port, GET /livez and GET /readyz answer in JSON; /readyz is 503 from the first SIGTERM.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject coordinator',
    '<%= config.bin %> workflow coordinator --batch-size 16 --idle-sleep 1',
    'JOBQ_WORKFLOW_PREFIX=myaccount/MyProject <%= config.bin %> workflow coordinator --break-lease',
  ];
  static override flags = {
    ...configFlags,
    ...coordinatorFlags,
    'break-lease': Flags.boolean({
      description: 'Break a lease held by another coordinator first (that coordinator stops at once)',
      default: false,
    }),
    'wait-for-lease': Flags.boolean({
      description:
        'While another coordinator holds the lease, wait as a standby (trying every 2s) and take over once it is free, instead of exiting 1; SIGTERM ends the wait',
      default: false,
      env: 'JOBQ_WAIT_FOR_LEASE',
      exclusive: ['break-lease'],
    }),
    ...healthFlags,
    ...metricsFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowCoordinator);
    const config = configFromFlags(flags);
    const instruments = await startMetrics(flags, (line) => this.note(line));
    const current: { coordinator: Coordinator | null } = { coordinator: null };
    await startHealth(
      flags,
      { live: () => coordinatorHealth(current.coordinator).live(), ready: () => coordinatorHealth(current.coordinator).ready() },
      (line) => this.note(line),
    );
    const deployment = await openDeployment(config, { instruments });
    const coordinator = createCoordinator(deployment, {
      ...coordinatorOptions(config),
      breakLease: flags['break-lease'],
      waitForLease: flags['wait-for-lease'],
      instruments,
    });
    current.coordinator = coordinator;

    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals === 1) {
        this.note(
          `${signal}: stopping${coordinator.health().phase === 'waiting' ? ' the wait for the lease' : ' after the current batch'}…`,
        );
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
      if (!(await coordinator.start())) {
        this.note('Coordinator stopped while waiting for the lease (it held nothing)');
        return;
      }
      await this.announce(flags['break-lease'], deployment, config);
      try {
        await coordinator.run();
      } finally {
        const c = coordinator.counters;
        this.note(`Coordinator stopped — ${c.completionsApplied} completions, ${c.pushes} tasks pushed, ${c.batches} batches`);
      }
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }

  private announce(
    brokeLease: boolean,
    deployment: Awaited<ReturnType<typeof openDeployment>>,
    config: ReturnType<typeof configFromFlags>,
  ): Promise<void> {
    const queues = config.queues.value ?? deployment.prefix.account;
    this.note(
      `Coordinator for ${deployment.target} (task queues on ${queues}, completions in ${deployment.completions.name}, outputs in ${deployment.outputs.outputsContainer})`,
    );
    const settings = COORDINATOR_SETTINGS.map((s) => {
      const r = config.coordinator[s.key];
      const value = isDurationSetting(s) ? (r.value === 0 ? 'off' : formatDuration(Math.round(r.value * 1000))) : r.value;
      return `${s.flag}=${value} (${r.source === 'default' ? 'default' : `${r.source} ${r.from ?? ''}`.trim()})`;
    });
    this.note(`Settings: ${settings.join(', ')}`);
    this.note(`Coordinator running${brokeLease ? ' (lease broken and taken over)' : ''}; Ctrl-C or SIGTERM stops it.`);
    return Promise.resolve();
  }
}
