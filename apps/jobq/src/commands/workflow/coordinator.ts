import { Flags } from '@oclif/core';
import { checkShardMemberId, errorMessage, formatDuration, type ShardCount, type TaskQueue } from '@jobq/ports';
import { ShardBalancer, type Coordinator } from '@jobq/coordinator';
import { JobqCommand } from '../../base';
import { COORDINATOR_SETTINGS, isDurationSetting, isShardingSetting, type CliConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { durationMs } from '../../duration-flags';
import { UsageError } from '../../errors';
import { configFlags, configFromFlags, coordinatorFlags, shardingFlags } from '../../flags';
import { metricsFlags, startMetrics } from '../../metrics';
import { coordinatorOptions, createCoordinator } from '../../services';
import { healthFlags, LIVENESS_STALE_AFTER_IN_MS, startHealth, type HealthSource } from '../../health';
import {
  balancerHealth,
  countedRunners,
  defaultMemberId,
  shardCompletionQueueOf,
  type ShardCompletionQueue,
} from '../../shard-coordinator';
import type { Instruments } from '@jobq/ports';

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
    'or when the lease is lost while running. With --health-port, GET /livez and GET /readyz answer in JSON; /readyz is 503 from the first SIGTERM. ' +
    'A deployment with a shard manifest (created by --shards N, N = 1, 2, 4, 8 or 16) is sharded: each coordinator is a member (--member-id) that claims and releases shards ' +
    'every --balance-interval until the shards are shared out evenly, running each shard it holds with its own lease, completion queue and stats, and releasing them all on SIGTERM; ' +
    'one holding no shard is a standby. --break-lease does not apply there (use `workflow break-lease --shard`); see docs/sharding.md.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject coordinator',
    '<%= config.bin %> workflow coordinator --batch-size 16 --idle-sleep 1',
    'JOBQ_WORKFLOW_PREFIX=myaccount/MyProject <%= config.bin %> workflow coordinator --break-lease',
    '<%= config.bin %> workflow myaccount/MyProject coordinator --shards 8 --member-id coord-1',
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
    ...shardingFlags,
    'member-id': Flags.string({
      description:
        'This coordinator\'s id among the coordinators of a sharded deployment: letters, digits, ".", "_" and "-" (default: the host name); keep it across restarts, and give each coordinator on one host its own [env: JOBQ_COORDINATOR_ID]',
      env: 'JOBQ_COORDINATOR_ID',
      helpGroup: 'COORDINATOR',
    }),
    'shard-lease-duration': Flags.custom<number>({
      description: 'Duration of the shard leases of a sharded coordinator: whole seconds from 15s to 60s (default 60s)',
      env: 'JOBQ_SHARD_LEASE_DURATION',
      hidden: true,
      parse: (input) => {
        const ms = durationMs(input, '--shard-lease-duration');
        if (ms < 15_000 || ms > 60_000 || ms % 1_000 !== 0)
          throw new UsageError(`--shard-lease-duration must be whole seconds from 15s to 60s, got "${input}"`);
        return Promise.resolve(ms);
      },
    })(),
    ...healthFlags,
    ...metricsFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowCoordinator);
    const config = configFromFlags(flags);
    const memberId = flags['member-id'] ?? defaultMemberId();
    try {
      checkShardMemberId(memberId);
    } catch (error) {
      throw new UsageError(`--member-id: ${errorMessage(error)}`);
    }
    const instruments = await startMetrics(flags, (line) => this.note(line));
    const current: { health: HealthSource } = { health: coordinatorHealth(null) };
    await startHealth(flags, { live: () => current.health.live(), ready: () => current.health.ready() }, (line) => this.note(line));
    const shardLeaseDurationInMs = flags['shard-lease-duration'];
    const deployment = await openDeployment(config, {
      instruments,
      ...(shardLeaseDurationInMs === undefined ? {} : { shardLeaseDurationInMs }),
    });
    const shards = await this.shardCount(deployment, config);
    if (shards !== null) {
      if (flags['break-lease'])
        throw new UsageError(
          `--break-lease does not apply to the ${shards} shards of ${deployment.target}: break a shard's lease with \`jobq workflow break-lease --shard K\` (or --shard all)`,
        );
      if (flags['wait-for-lease']) this.note('--wait-for-lease: a sharded coordinator holding no shard waits as a standby anyway');
      await this.runSharded(deployment, config, {
        shards,
        memberId,
        instruments,
        shardLeaseDurationInMs: shardLeaseDurationInMs ?? 60_000,
        setHealth: (health) => (current.health = health),
      });
      return;
    }
    const coordinator = createCoordinator(deployment, {
      ...coordinatorOptions(config),
      breakLease: flags['break-lease'],
      waitForLease: flags['wait-for-lease'],
      instruments,
    });
    current.health = coordinatorHealth(coordinator);

    const offSignals = this.onStopSignals(
      () => `stopping${coordinator.health().phase === 'waiting' ? ' the wait for the lease' : ' after the current batch'}…`,
      () => coordinator.stop(),
    );
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
      offSignals();
    }
  }

  /**
   * The deployment's shard count: with `--shards` (or its env/config key) the manifest it creates
   * or finds, which must match; without, the manifest's, or null for a deployment without one
   * (today's one-shard coordinator).
   */
  private async shardCount(deployment: Deployment, config: CliConfig): Promise<ShardCount | null> {
    const setting = config.coordinator.shards;
    const ownership = await deployment.ownership();
    if (setting.source === 'default') return (await ownership.readManifest())?.manifest.shards ?? null;
    const manifest = await ownership.ensureManifest(setting.value as ShardCount);
    if (manifest.shards !== setting.value) {
      throw new UsageError(
        `${setting.from ?? '--shards'}: ${setting.value} differs from the ${manifest.shards} shards of ${deployment.target} (_shards/manifest.json): ` +
          `leave it out to run with the manifest's count, or grow the deployment with \`jobq workflow reshard --shards ${setting.value}\` (shards only grow)`,
      );
    }
    return manifest.shards;
  }

  /** A sharded coordinator (docs/sharding.md#running-sharded-coordinators): a balancer running a shard runner on each shard it holds. */
  private async runSharded(
    deployment: Deployment,
    config: CliConfig,
    o: {
      shards: ShardCount;
      memberId: string;
      instruments: Instruments;
      shardLeaseDurationInMs: number;
      setHealth: (health: HealthSource) => void;
    },
  ): Promise<void> {
    const ownership = await deployment.ownership();
    const log = (line: string): void => this.note(`coordinator: ${line}`);
    const lockDurationInMs = Math.round(config.coordinator.visibilityTimeoutS.value * 1000);
    const queues = new Map<number, ShardCompletionQueue>();
    const completions = (shard: number): TaskQueue => {
      let queue = queues.get(shard);
      if (queue === undefined) {
        queue = shardCompletionQueueOf(deployment, shard, lockDurationInMs, (line) => log(`shard ${shard}: ${line}`));
        queues.set(shard, queue);
      }
      return queue;
    };
    const { runners, totals } = countedRunners({
      store: deployment.store,
      outputs: deployment.outputs,
      workers: deployment.workers,
      queues: (spec) => deployment.queue(spec),
      completions,
      options: { ...coordinatorOptions(config), instruments: o.instruments, log },
    });
    const balanceIntervalInMs = Math.round(config.coordinator.balanceIntervalS.value * 1000);
    // A member heartbeats every round and counts as live for a lease duration after its last one.
    if (balanceIntervalInMs * 3 > o.shardLeaseDurationInMs) {
      const from = config.coordinator.balanceIntervalS.from ?? '--balance-interval';
      throw new UsageError(
        `${from}: ${formatDuration(balanceIntervalInMs)} must be at most a third of the shard lease (${formatDuration(o.shardLeaseDurationInMs)})`,
      );
    }
    const balancer = new ShardBalancer({
      ownership,
      memberId: o.memberId,
      runners,
      options: { balanceIntervalInMs, stallAfterInMs: o.shardLeaseDurationInMs / 2, log },
    });
    o.setHealth(balancerHealth(balancer, { id: o.memberId, shardCount: o.shards }));

    const offSignals = this.onStopSignals(
      () => 'stopping: every shard finishes its current batch and is released…',
      () => balancer.stop(),
    );
    try {
      this.announceTarget(deployment, config, o.shards);
      this.note(
        `Coordinator running as member ${o.memberId} of ${o.shards} shard${o.shards === 1 ? '' : 's'}: ` +
          `balancing them every ${formatDuration(balanceIntervalInMs)} (shard leases of ${formatDuration(o.shardLeaseDurationInMs)}); Ctrl-C or SIGTERM stops it.`,
      );
      try {
        await balancer.run();
      } finally {
        const t = totals();
        this.note(
          `Coordinator stopped — ${t.completionsApplied} completions, ${t.pushes} tasks pushed, ${t.batches} batches ` +
            `(member ${o.memberId}; shards run: ${t.shards.length === 0 ? 'none' : t.shards.join(', ')})`,
        );
      }
    } finally {
      offSignals();
    }
  }

  /**
   * SIGINT or SIGTERM once: `stopping()` is noted and `stop()` called (a failing stop surfaces
   * through the run); a second signal exits 130 at once. Returns the function that removes the handlers.
   */
  private onStopSignals(stopping: () => string, stop: () => Promise<unknown>): () => void {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      signals++;
      if (signals === 1) {
        this.note(`${signal}: ${stopping()}`);
        stop().catch(() => undefined);
      } else {
        this.note(`${signal} again: exiting without waiting`);
        process.exit(130);
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    return () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    };
  }

  private announce(brokeLease: boolean, deployment: Deployment, config: CliConfig): Promise<void> {
    this.announceTarget(deployment, config, null);
    this.note(`Coordinator running${brokeLease ? ' (lease broken and taken over)' : ''}; Ctrl-C or SIGTERM stops it.`);
    return Promise.resolve();
  }

  /** The target and settings lines; the sharding settings only for a sharded coordinator. */
  private announceTarget(deployment: Deployment, config: CliConfig, shards: ShardCount | null): void {
    const sharded = shards !== null;
    const queues = config.queues.value ?? deployment.prefix.account;
    this.note(
      `Coordinator for ${deployment.target} (task queues on ${queues}, completions in ${deployment.completions.name}${sharded ? " and its shards' queues beside it" : ''}, outputs in ${deployment.outputs.outputsContainer})`,
    );
    const settings = COORDINATOR_SETTINGS.filter((s) => sharded || !isShardingSetting(s)).map((s) => {
      const r = config.coordinator[s.key];
      if (s.key === 'shards' && r.source === 'default') return `${s.flag}=${shards ?? 1} (the manifest)`;
      const value = isDurationSetting(s) ? (r.value === 0 ? 'off' : formatDuration(Math.round(r.value * 1000))) : r.value;
      return `${s.flag}=${value} (${r.source === 'default' ? 'default' : `${r.source} ${r.from ?? ''}`.trim()})`;
    });
    this.note(`Settings: ${settings.join(', ')}`);
  }
}
