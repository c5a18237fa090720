import { createInterface } from 'node:readline/promises';
import { Flags } from '@oclif/core';
import { JobqCommand } from '../../base';
import { requirePrefix } from '../../config';
import { openDeployment } from '../../deployment';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';

/** Asks a yes/no question on stderr; true only for "y" or "yes". */
async function confirm(question: string): Promise<boolean> {
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
    'and stops at once. Asks for confirmation unless -y/--yes is given; -y is required when stdin is not a terminal.';
  static override examples = ['<%= config.bin %> workflow myaccount/MyProject break-lease', '<%= config.bin %> workflow break-lease --yes'];
  static override flags = {
    ...configFlags,
    yes: Flags.boolean({ char: 'y', description: 'Do not ask for confirmation', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowBreakLease);
    const config = configFromFlags(flags);
    const prefix = requirePrefix(config);
    const target = `${prefix.account}/${prefix.prefix}`;
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
}
