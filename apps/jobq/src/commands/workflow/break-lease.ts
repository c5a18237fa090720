import { createInterface } from 'node:readline/promises';
import { Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { requirePrefix } from '../../config';
import { openDeployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import type { Deployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';

/** Asks a yes/no question on stderr; true only for "y" or "yes". */
export async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

export default class WorkflowBreakLease extends JobqCommand {
  static override summary = 'Break the coordinator lease of the deployment';
  static override description =
    "Breaks the lease on the prefix's coordinator lock so that a new coordinator can start at once, for example after a coordinator " +
    'was killed and its lease has not run out yet (it runs out by itself within 60 s). A coordinator still running loses the lease ' +
    'and stops at once. Asks for confirmation unless -y/--yes is given; -y is required when stdin is not a terminal. ' +
    "With --shard K (or all) it breaks the lease of shard K (or of every shard) of a sharded deployment (docs/sharding.md): that shard's runner " +
    'stops, and a coordinator takes the shard over in its next balancing round.';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject break-lease',
    '<%= config.bin %> workflow break-lease --yes',
    '<%= config.bin %> workflow myaccount/MyProject break-lease --shard 3 --yes',
  ];
  static override flags = {
    ...configFlags,
    yes: Flags.boolean({ char: 'y', description: 'Do not ask for confirmation', default: false }),
    shard: Flags.string({
      description:
        'Break shard K\'s lease (0 is the coordinator lease), or every shard\'s with "all" (a sharded deployment: docs/sharding.md)',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowBreakLease);
    const config = configFromFlags(flags);
    const prefix = requirePrefix(config);
    const target = `${prefix.account}/${prefix.prefix}`;
    if (flags.shard !== undefined) {
      await this.breakShards(flags.shard, flags.yes, await openDeployment(config, { createIfMissing: false }));
      return;
    }
    if (!flags.yes) {
      if (!process.stdin.isTTY)
        throw new UsageError('stdin is not a terminal: pass -y/--yes to break the coordinator lease without confirmation');
      const ok = await confirm(`Break the coordinator lease of ${target}? A coordinator still running there stops at once. [y/N] `);
      if (!ok) {
        this.note('Aborted: the lease was left alone.');
        throw new ReportedFailure('aborted');
      }
    }
    const deployment = await openDeployment(config, { createIfMissing: false });
    const lease = await deployment.store.acquireLease({ breakExisting: true });
    await lease.release();
    process.stdout.write(`Lease broken for ${deployment.target}.\n`);
  }

  /** `--shard K|all`: breaks shard K's lease, or every shard's (K must be a shard of the manifest: exit 2 otherwise). */
  private async breakShards(which: string, yes: boolean, deployment: Deployment): Promise<void> {
    if (!/^(all|\d{1,2})$/.test(which)) throw new UsageError(`--shard expects a shard number or "all", got "${which}"`);
    if (!yes && !process.stdin.isTTY)
      throw new UsageError('stdin is not a terminal: pass -y/--yes to break the shard lease without confirmation');
    const ownership = await deployment.ownership();
    const count = (await ownership.readManifest())?.manifest.shards ?? 1;
    if (which !== 'all' && Number(which) >= count) {
      throw new UsageError(
        `--shard ${which} is out of range: ${deployment.target} has ${count} shard${count === 1 ? '' : 's'} (0${count === 1 ? '' : `–${count - 1}`})`,
      );
    }
    const shards = which === 'all' ? Array.from({ length: count }, (_, k) => k) : [Number(which)];
    const named = which === 'all' ? `every shard lease (${count})` : `the lease of shard ${which}`;
    if (!yes) {
      const ok = await confirm(`Break ${named} of ${deployment.target}? The shard runners holding them stop at once. [y/N] `);
      if (!ok) {
        this.note('Aborted: the leases were left alone.');
        throw new ReportedFailure('aborted');
      }
    }
    for (const shard of shards) {
      await ownership.breakLease(shard);
      process.stdout.write(`Lease of shard ${shard} broken for ${deployment.target}.\n`);
    }
  }
}
