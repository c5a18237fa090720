import { Flags } from '@oclif/core';
import { formatElapsed } from '@jobq/ports';
import { JobqCommand } from '../../base';
import { openDeployment } from '../../deployment';
import { configFlags, configFromFlags } from '../../flags';
import { table } from '../../format';
import type { WorkflowShardsJson } from '../../json-output';
import { holderText, readShards, type ShardView, type ShardsReport } from '../../shard-views';

function queueCell(shard: ShardView): string {
  const queue = shard.queue;
  if (queue === null) return '?';
  if (queue.state === 'missing') return 'missing';
  if (queue.state === 'unreachable') return 'error';
  return String(queue.messages);
}

function ownerCell(shard: ShardView): string {
  if (shard.unshardedHolder) return '(without shards)';
  if (shard.leased) return shard.owner ?? '?';
  return shard.owner === null ? '-' : `(was ${shard.owner})`;
}

function counter(shard: ShardView, value: (s: NonNullable<ShardView['stats']>) => number): string {
  return shard.stats === null ? '-' : String(value(shard.stats));
}

function shardsJson(target: string, report: ShardsReport): WorkflowShardsJson {
  return {
    target,
    manifest: report.manifest === null ? null : { version: report.manifest.version, shards: report.manifest.shards },
    shard_count: report.count,
    server_time: report.serverTime.toISOString(),
    shards: report.shards.map((s) => ({
      index: s.index,
      leased: s.leased,
      owner: s.owner,
      epoch: s.epoch,
      claimed_at: s.claimedAt === null ? null : s.claimedAt.toISOString(),
      held_without_shards: s.unshardedHolder,
      queue: s.queue?.name ?? '',
      queue_spec: s.queue?.spec ?? '',
      queue_state: s.queue?.state ?? 'unreachable',
      queue_error: s.queue?.error ?? null,
      approximate_message_count: s.queue?.messages ?? null,
      stats:
        s.stats === null
          ? null
          : {
              written_at: s.stats.writtenAt,
              started_at: s.stats.startedAt,
              messages: s.stats.messages,
              completions_applied: s.stats.completionsApplied,
              forwarded: s.stats.forwarded,
              poison: s.stats.poison,
              receive_errors: s.stats.receiveErrors,
            },
      stats_error: s.statsError,
    })),
    members: report.members.map((m) => ({
      member_id: m.id,
      last_heartbeat_at: m.lastSeen.toISOString(),
      age_s: Math.round(m.ageMs / 1000),
      shards_held: m.held.length,
    })),
  };
}

function shardsText(target: string, report: ShardsReport): string[] {
  const head =
    report.manifest === null
      ? `${target}: no manifest: one shard`
      : `${target}: ${report.count} shards (manifest version ${report.manifest.version})`;
  const rows = report.shards.map((s) => [
    String(s.index),
    ownerCell(s),
    String(s.epoch),
    s.leased ? 'held' : 'free',
    s.queue?.name ?? '',
    queueCell(s),
    counter(s, (c) => c.messages),
    counter(s, (c) => c.completionsApplied),
    counter(s, (c) => c.forwarded),
    s.stats === null ? (s.statsError === null ? 'none' : 'error') : s.stats.ageMs === null ? '?' : `${formatElapsed(s.stats.ageMs)} ago`,
  ]);
  const lines = [
    head,
    '',
    table(
      [
        { header: 'Shard', right: true },
        'Owner',
        { header: 'Epoch', right: true },
        'Lease',
        'Completion queue',
        { header: 'Messages', right: true },
        { header: 'Received', right: true },
        { header: 'Applied', right: true },
        { header: 'Forwarded', right: true },
        'Stats written',
      ],
      rows,
    ),
  ];
  // What a cell cannot say: why a queue or a stats document could not be read.
  for (const s of report.shards) {
    if (s.queue?.error) lines.push(`shard ${s.index}: cannot read ${s.queue.name}: ${s.queue.error}`);
    if (s.statsError !== null) lines.push(`shard ${s.index}: cannot read its stats: ${s.statsError}`);
    if (s.unshardedHolder && report.manifest !== null) lines.push(`shard ${s.index}: ${holderText(s)} (jobq workflow doctor)`);
  }
  lines.push('');
  if (report.members.length === 0) {
    lines.push('No live members: no coordinator with shards has heartbeated in the last 60 s.');
  } else {
    lines.push(
      `Members (${report.members.length} live)`,
      table(
        ['Member', 'Last heartbeat', { header: 'Shards', right: true }, 'Held'],
        report.members.map((m) => [
          m.id,
          `${formatElapsed(m.ageMs)} ago`,
          String(m.held.length),
          m.held.length === 0 ? '-' : m.held.join(', '),
        ]),
      ),
    );
  }
  return lines;
}

export default class WorkflowShards extends JobqCommand {
  static override summary = 'Show the shards of the deployment: owners, epochs, completion queues, counters and members';
  static override description =
    'Reads the shard manifest (_shards/manifest.json; without one the deployment has one shard) and shows, per shard: its owner ' +
    '(the member that claimed it; "(was X)" for a free shard), its epoch (claims so far), whether its lease is held, its completion ' +
    'queue and about how many messages wait there (missing: the queue does not exist), and from its stats document the messages its runner ' +
    'received, the completions it applied and the messages it forwarded to other shards, and when it wrote them. Then the live members ' +
    '(coordinators that heartbeated in the last 60 s, by the storage clock), their last heartbeat and the shards each holds. ' +
    'Nothing is created or changed. Exits 1 when the manifest has a version this jobq does not read (docs/sharding.md#inspecting-shards).';
  static override examples = ['<%= config.bin %> workflow shards', '<%= config.bin %> workflow myaccount/MyProject shards --json'];
  static override flags = {
    ...configFlags,
    json: Flags.boolean({ description: 'Print one JSON document: the manifest, the shards and the live members', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowShards);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const report = await readShards(deployment);
    if (flags.json) {
      this.printJson(shardsJson(deployment.target, report));
      return;
    }
    process.stdout.write(`${shardsText(deployment.target, report).join('\n')}\n`);
  }
}
