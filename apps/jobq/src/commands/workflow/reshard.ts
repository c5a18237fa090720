import { Flags } from '@oclif/core';
import { isJobqError, JobqError, SHARD_COUNTS, shardCompletionQueue, type ShardCount } from '@jobq/ports';
import { storeNames } from '@jobq/store-azure';
import { JobqCommand } from '../../base';
import { openDeployment, type Deployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { openQueueAt } from '../../queues';
import { confirm } from './break-lease';

/** The shards whose lease is held now, as "0 (coord-1), 3 (coord-2)". */
async function heldLeases(deployment: Deployment): Promise<string> {
  const view = await (await deployment.ownership()).list();
  return view.shards
    .filter((s) => s.leased)
    .map((s) => `${s.index}${s.owner === null ? '' : ` (${s.owner})`}`)
    .join(', ');
}

export default class WorkflowReshard extends JobqCommand {
  static override summary = 'Grow the shard count of a deployment';
  static override description =
    'Raises the shard count in the shard manifest (docs/sharding.md) to --shards M, a multiple of the current count (no manifest: 1 shard), ' +
    "after creating the new shards' completion queues. Shards only grow: to have fewer, start a new prefix and drain this one. " +
    'Refused (exit 1, naming the shards whose lease is held) while any coordinator holds a shard: stop every coordinator of the prefix first, ' +
    'then start them again once it is done. Messages already queued stay where they are: a coordinator forwards those of another shard. ' +
    'Asks for confirmation unless -y/--yes is given; -y is required when stdin is not a terminal.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject reshard --shards 8',
    '<%= config.bin %> workflow reshard --shards 4 --yes',
  ];
  static override flags = {
    ...configFlags,
    shards: Flags.custom<ShardCount>({
      description: `The new shard count: ${SHARD_COUNTS.join(', ')}, a multiple of the current one`,
      required: true,
      parse: (input) => {
        const value = Number(input);
        if (!SHARD_COUNTS.includes(value as ShardCount))
          throw new UsageError(`--shards ${input} is not allowed (one of ${SHARD_COUNTS.join(', ')})`);
        return Promise.resolve(value as ShardCount);
      },
    })(),
    yes: Flags.boolean({ char: 'y', description: 'Do not ask for confirmation', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowReshard);
    const config = configFromFlags(flags);
    const to = flags.shards;
    if (!flags.yes && !process.stdin.isTTY) throw new UsageError('stdin is not a terminal: pass -y/--yes to reshard without confirmation');
    const deployment = await openDeployment(config, { createIfMissing: false });
    const ownership = await deployment.ownership();
    const current = await ownership.readManifest();
    const from = current?.manifest.shards ?? 1;
    if (to === from) {
      process.stdout.write(`${deployment.target} already has ${from} shard${from === 1 ? '' : 's'}: nothing to do.\n`);
      return;
    }
    if (to < from) {
      throw new UsageError(
        `--shards ${to}: ${deployment.target} has ${from} shards, and shards only grow: for fewer, create a new prefix with \`workflow coordinator --shards ${to}\`, ` +
          'submit there, and let this prefix drain (its coordinators finish what it holds)',
      );
    }
    if (to % from !== 0) {
      const allowed = SHARD_COUNTS.filter((n) => n > from && n % from === 0).join(', ');
      throw new UsageError(
        `--shards ${to} is not a multiple of the ${from} shards of ${deployment.target}: each shard splits whole (allowed: ${allowed})`,
      );
    }
    const held = await heldLeases(deployment);
    if (held !== '') throw this.leasesHeld(deployment, held);
    if (!flags.yes) {
      const ok = await confirm(`Grow ${deployment.target} from ${from} to ${to} shards? It cannot be undone. [y/N] `);
      if (!ok) {
        this.note('Aborted: the shards were left alone.');
        throw new ReportedFailure('aborted');
      }
    }
    // The new shards' queues first: once the manifest names them, workers route completions there.
    const base = storeNames(deployment.prefix.prefix).completionQueue;
    const lockDurationInMs = Math.round(config.coordinator.visibilityTimeoutS.value * 1000);
    const created: string[] = [];
    for (let shard = from; shard < to; shard++) {
      await openQueueAt(deployment.locate(deployment.shardCompletionsSpec(shard)), { lockDurationInMs, createIfMissing: true });
      created.push(shardCompletionQueue(base, shard));
    }
    try {
      await ownership.growManifest(to, current?.etag ?? '');
    } catch (error) {
      if (isJobqError(error, 'lease-held')) throw this.leasesHeld(deployment, (await heldLeases(deployment)) || 'one was taken meanwhile');
      if (isJobqError(error, 'conflict'))
        throw new JobqError('conflict', `the shard manifest of ${deployment.target} changed while resharding: run the command again`);
      throw error;
    }
    process.stdout.write(
      `Resharded ${deployment.target}: ${from} → ${to} shards (completion queues ${created[0]}${created.length > 1 ? ` … ${created[created.length - 1]}` : ''} created).\n`,
    );
  }

  private leasesHeld(deployment: Deployment, held: string): JobqError {
    return new JobqError(
      'lease-held',
      `shard leases of ${deployment.target} are held (shard ${held}): stop every coordinator of the prefix, then run reshard again`,
    );
  }
}
