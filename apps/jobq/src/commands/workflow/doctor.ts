import { Flags } from '@oclif/core';
import { explainRuntime, type WorkflowRuntime, type WorkflowStatus } from '@jobq/dag-core';
import { formatElapsed, isJobqError, listSome, mapLimit, type CoordinatorStats } from '@jobq/ports';
import { JobqCommand, errorLine } from '../../base';
import { maskSecret, type CliConfig, type Resolved } from '../../config';
import { workloadIdentityLine, workloadIdentityStatus } from '../../credential';
import { openDeployment, type Deployment } from '../../deployment';
import { ReportedFailure } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { collectWorkflows } from '../../listing';
import { queuesNamespace, serviceBusAccessLine } from '../../servicebus-access';
import { checkServiceBusQueues, type ServiceBusQueueToCheck } from '../../servicebus-doctor';
import { storageAccess, storageAccessLine } from '../../storage-access';
import { durationMs, legacyDurationFlag } from '../../duration-flags';
import { DEFAULT_WORKER_STALE_IN_MS, workersCheck } from '../../worker-doctor';
import { FORWARDED_WARN_SHARE, OWNERLESS_AFTER_MS, forwardedShare, readShards, type ShardsReport } from '../../shard-views';

/** The outcome of one check. */
export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  message: string;
  /** What to do about it; null when there is nothing to do. */
  hint: string | null;
}

const MARK: Record<CheckStatus, string> = { ok: '✔', warn: '⚠', fail: '✖' };
const ACTIVE: readonly WorkflowStatus[] = ['pending', 'running', 'cancelling'];
const NAMES_SHOWN = 3;
const MAX_QUEUES = 20;
const LOAD_CONCURRENCY = 8;
const START_HINT = 'start one: jobq workflow coordinator (one per prefix)';

/** `a, b, c and N more`. */
function someNames(names: readonly string[]): string {
  return listSome(names, NAMES_SHOWN);
}

/** Milliseconds as `45s`, `12m` or `3h05m`. */
const age = formatElapsed;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function source(resolved: Resolved<unknown>): string {
  return resolved.from === null ? 'default' : resolved.source === 'file' ? `config file ${resolved.from}` : resolved.from;
}

/**
 * Check 1: the configuration, with where each value came from (secrets masked), and whether the
 * workload identity variables of `DefaultAzureCredential` are set (by name, never their values).
 */
export function configCheck(config: CliConfig, env: NodeJS.ProcessEnv = process.env): DoctorCheck {
  const prefix = config.prefix.value;
  if (prefix === null) {
    return {
      name: 'config',
      status: 'fail',
      message: 'no workflow prefix configured',
      hint: 'pass ACCOUNT/PREFIX (jobq workflow ACCOUNT/PREFIX doctor), set JOBQ_WORKFLOW_PREFIX, or put connection.prefix in jobq.yaml',
    };
  }
  const parts = [`${prefix.account}/${prefix.prefix} (prefix from ${source(config.prefix)})`];
  const access = storageAccess(config);
  parts.push(`storage access: ${access.map(storageAccessLine).join(', ')}`);
  parts.push(
    config.queues.value === null ? "queues: the prefix's account" : `queues: ${config.queues.value} (from ${source(config.queues)})`,
  );
  const namespace = queuesNamespace(config);
  if (namespace !== null) parts.push(`service bus access: ${serviceBusAccessLine(config, namespace)}`);
  parts.push(
    config.blobs.value === null
      ? `blobs: container ${prefix.prefix.toLowerCase()}-outputs`
      : `blobs: ${config.blobs.value} (from ${source(config.blobs)})`,
  );
  if (config.file !== null) parts.push(`config file ${config.file}`);
  const identity = workloadIdentityStatus(env);
  parts.push(workloadIdentityLine(identity));
  const tuned = Object.values(config.coordinator).filter((r) => r.source !== 'default');
  if (tuned.length > 0) parts.push(`coordinator settings: ${tuned.map((r) => `${r.from}=${r.value}`).join(', ')}`);
  // A connection string that is configured but used for none of the accounts is almost always a mistake.
  const ignored = access.some((a) => a.note !== null) && !access.some((a) => a.uses === 'connection string');
  if (!ignored && !identity.configured && identity.set.length > 0) {
    return {
      name: 'config',
      status: 'warn',
      message: parts.join('; '),
      hint: `workload identity needs ${identity.missing.join(', ')} too: check the pod's service account (azure.workload.identity/client-id) and its azure.workload.identity/use label`,
    };
  }
  return ignored
    ? {
        name: 'config',
        status: 'warn',
        message: parts.join('; '),
        hint: "the connection string is for another account: fix its AccountName or endpoints, or the prefix's account",
      }
    : { name: 'config', status: 'ok', message: parts.join('; '), hint: null };
}

/** Runtimes of these workflows, a few at a time; workflows that cannot be read are counted, not fatal. */
async function loadRuntimes(deployment: Deployment, ids: readonly string[]): Promise<{ runtimes: WorkflowRuntime[]; errors: string[] }> {
  const runtimes: WorkflowRuntime[] = [];
  const errors: string[] = [];
  await mapLimit(ids, LOAD_CONCURRENCY, async (id) => {
    try {
      const loaded = await deployment.store.load(id);
      if (loaded !== null) runtimes.push(loaded.runtime);
    } catch (error) {
      errors.push(`${id}: ${errorLine(error)}`);
    }
  });
  return { runtimes, errors };
}

function statText(stats: CoordinatorStats, key: string): string {
  const value = stats[key];
  return typeof value === 'string' ? value : '?';
}

function statNumber(stats: CoordinatorStats, key: string): number {
  const value = stats[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

export interface DoctorSettings {
  stalePendingMs: number;
  staleRunningMs: number;
  staleReadyMs: number;
  staleStatsMs: number;
  staleQueueMs: number;
  /** A heartbeat older than this does not count (`--worker-stale`). */
  workerStaleMs?: number;
  maxWorkflows: number;
}

/** What the checks after `config` share: the opened deployment, the settings, and what earlier checks found. */
interface CheckContext {
  deployment: Deployment;
  settings: DoctorSettings;
  /** Milliseconds since the epoch when the run began. */
  now: number;
  /** Workflows by status (the `store` check); the run stops when they cannot be counted. */
  counts: Record<WorkflowStatus, number>;
  total: number;
  /** Workflows pending, running or cancelling. */
  active: number;
  /** A coordinator holds the lease (the `coordinator lease` check). */
  leaseHeld: boolean;
  /** The coordinator's stats (the `coordinator stats` check); null when none could be read. */
  stats: CoordinatorStats | null;
  /** The runtimes of the active workflows, read once for the checks that need them. */
  activeWork: () => Promise<ActiveWork>;
  /** The shards (docs/sharding.md#inspecting-shards), read once: null without a manifest (the shard checks print nothing). */
  shards: () => Promise<ShardsRead>;
}

/** What the shard checks read, or why it could not be read. */
type ShardsRead = { ok: true; report: ShardsReport } | { ok: false; message: string } | null;

/** The shards of a deployment with a manifest; null without one. */
async function readShardsIfAny(deployment: Deployment, now: number): Promise<ShardsRead> {
  try {
    if ((await (await deployment.ownership()).readManifest()) === null) return null;
    return { ok: true, report: await readShards(deployment, { now }) };
  } catch (error) {
    return { ok: false, message: `cannot read the shards: ${errorLine(error)}` };
  }
}

/** What the runtimes of the active workflows show, or why they could not be listed. */
export type ActiveWork =
  | {
      ok: true;
      /** `in 3 active workflows`, with how many were left out or could not be read. */
      scope: string;
      longRunning: string[];
      stuckReady: string[];
      /** Queue spec → tasks dispatched to it (running, or ready in an activated workflow). */
      dispatched: Map<string, number>;
    }
  | { ok: false; message: string };

/** One check of the deployment: its lines (none when it does not apply). */
interface Check {
  /** The name its lines carry. */
  name: string;
  run: (ctx: CheckContext) => Promise<DoctorCheck | DoctorCheck[] | null> | DoctorCheck | null;
}

/** The store check, first: the index answers (workflow counts); without them no other check runs. */
async function storeCheck(deployment: Deployment): Promise<{ check: DoctorCheck; counts: Record<WorkflowStatus, number> | null }> {
  const target = deployment.target;
  let counts: Record<WorkflowStatus, number>;
  try {
    counts = await deployment.store.countWorkflows();
  } catch (error) {
    const missing = isJobqError(error, 'not-found');
    return {
      check: {
        name: 'store',
        status: 'fail',
        message: missing
          ? `the workflow index of ${target} does not exist: nothing was ever submitted to this prefix`
          : `cannot list workflows in ${target}: ${errorLine(error)}`,
        hint: missing
          ? 'check the prefix (it is case-sensitive for tables); submitting a workflow or starting a coordinator creates the storage'
          : 'check the account name, the credential (az login, or the connection string) and network access to the storage account',
      },
      counts: null,
    };
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const byStatus = (Object.entries(counts) as Array<[WorkflowStatus, number]>).filter(([, n]) => n > 0).map(([s, n]) => `${s} ${n}`);
  return {
    check: {
      name: 'store',
      status: 'ok',
      message: `${plural(total, 'workflow')} in ${target}${byStatus.length > 0 ? ` (${byStatus.join(', ')})` : ''}`,
      hint: null,
    },
    counts,
  };
}

/** The checks after `store`, in the order they print (the command's description lists them). */
const CHECKS: Check[] = [
  {
    name: 'completion queue',
    run: async ({ deployment, total }) => {
      const queueName = deployment.completions.name;
      try {
        const messages = await deployment.completions.approximateMessageCount();
        return {
          name: 'completion queue',
          status: 'ok',
          message: `${queueName}: about ${plural(messages, 'message')} waiting`,
          hint: null,
        };
      } catch (error) {
        const missing = isJobqError(error, 'not-found');
        return {
          name: 'completion queue',
          status: missing && total === 0 ? 'warn' : 'fail',
          message: missing
            ? `${queueName} does not exist${total === 0 ? ' yet: nothing was submitted and no coordinator has run on this prefix' : ''}`
            : `cannot read ${queueName}: ${errorLine(error)}`,
          hint: missing
            ? 'submitting a workflow or starting a coordinator creates it'
            : 'check the queues account (JOBQ_WORKFLOW_QUEUES), the credential and network access',
        };
      }
    },
  },
  {
    name: 'coordinator lease',
    run: async (ctx) => {
      try {
        const state = (await ctx.deployment.store.leaseState())?.state ?? null;
        ctx.leaseHeld = state === 'leased';
        if (ctx.leaseHeld) return { name: 'coordinator lease', status: 'ok', message: 'held by a running coordinator', hint: null };
        const why = state === null ? 'no coordinator has ever run on this prefix' : `nobody holds it (lease ${state})`;
        const active = ctx.active;
        return {
          name: 'coordinator lease',
          status: active > 0 ? 'fail' : 'warn',
          message: `${why}${active > 0 ? `, and ${plural(active, 'workflow')} ${active === 1 ? 'is' : 'are'} active` : ''}`,
          hint: START_HINT,
        };
      } catch (error) {
        return {
          name: 'coordinator lease',
          status: 'fail',
          message: `cannot read the coordinator lease: ${errorLine(error)}`,
          hint: 'check the credential and network access to the blob service',
        };
      }
    },
  },
  {
    name: 'coordinator stats',
    run: async (ctx) => {
      const { leaseHeld, settings } = ctx;
      try {
        const stats = await ctx.deployment.store.readCoordinatorStats();
        ctx.stats = stats;
        const writtenAt = stats !== null && typeof stats.writtenAt === 'string' ? Date.parse(stats.writtenAt) : NaN;
        if (stats === null) {
          return {
            name: 'coordinator stats',
            status: 'warn',
            message: leaseHeld
              ? 'the coordinator holding the lease has written no stats yet'
              : 'no stats were ever written: no coordinator has run on this prefix',
            hint: leaseHeld ? 'run doctor again in a few seconds' : START_HINT,
          };
        }
        if (!Number.isFinite(writtenAt)) {
          return {
            name: 'coordinator stats',
            status: 'warn',
            message: 'the stats document has no writtenAt time',
            hint: 'a coordinator of another version may be running',
          };
        }
        const statsAge = ctx.now - writtenAt;
        const summary = `${statNumber(stats, 'completionsApplied')} completions applied, ${statNumber(stats, 'pushes')} tasks pushed, ${statNumber(stats, 'batches')} batches since ${statText(stats, 'startedAt')}`;
        if (statsAge <= settings.staleStatsMs)
          return { name: 'coordinator stats', status: 'ok', message: `written ${age(statsAge)} ago: ${summary}`, hint: null };
        if (leaseHeld) {
          return {
            name: 'coordinator stats',
            status: 'fail',
            message: `the coordinator holds the lease but last wrote its stats ${age(statsAge)} ago (at ${statText(stats, 'writtenAt')})`,
            hint: 'it may be stuck or cut off from storage: check its log, restart it (jobq workflow coordinator --break-lease)',
          };
        }
        return {
          name: 'coordinator stats',
          status: 'warn',
          message: `last written ${age(statsAge)} ago (at ${statText(stats, 'writtenAt')}): no coordinator is running`,
          hint: START_HINT,
        };
      } catch (error) {
        return {
          name: 'coordinator stats',
          status: 'warn',
          message: `cannot read the coordinator stats: ${errorLine(error)}`,
          hint: 'the stats blob may be damaged; a running coordinator rewrites it every 10 s',
        };
      }
    },
  },
  {
    // From the stats: only when there are some.
    name: 'poison messages',
    run: ({ deployment, stats }) => {
      if (stats === null) return null;
      const poison = statNumber(stats, 'poison');
      return poison > 0
        ? {
            name: 'poison messages',
            status: 'warn',
            message: `${plural(poison, 'poison message')} on ${deployment.completions.name} deleted since the coordinator started (${statText(stats, 'startedAt')})`,
            hint: 'something writes messages the coordinator cannot read to the completion queue: check the coordinator log and the versions of the workers',
          }
        : { name: 'poison messages', status: 'ok', message: 'none since the coordinator started', hint: null };
    },
  },
  {
    // Only with a shard manifest, as the three after it (docs/sharding.md#inspecting-shards).
    name: 'shard owners',
    run: async (ctx) => {
      const read = await ctx.shards();
      if (read === null) return null;
      if (!read.ok)
        return {
          name: 'shard owners',
          status: 'fail',
          message: read.message,
          hint: 'an unsupported version needs a newer jobq; otherwise check the credential and network access to the blob service',
        };
      return shardOwnerChecks(read.report);
    },
  },
  {
    name: 'shard queues',
    run: async (ctx) => {
      const read = await ctx.shards();
      return read?.ok ? shardQueueChecks(read.report) : null;
    },
  },
  {
    name: 'forwarded messages',
    run: async (ctx) => {
      const read = await ctx.shards();
      return read?.ok ? forwardedChecks(read.report) : null;
    },
  },
  {
    name: 'coordinators',
    run: async (ctx) => {
      const read = await ctx.shards();
      return read?.ok ? membersCheck(read.report) : null;
    },
  },
  {
    // Set aside by the coordinator, with their reasons.
    name: 'corrupt workflows',
    run: async ({ deployment, counts }) => {
      if (counts.corrupt === 0) return { name: 'corrupt workflows', status: 'ok', message: 'none', hint: null };
      try {
        const corrupt = await collectWorkflows(deployment.client, { status: ['corrupt'] }, 10_000);
        const shown = corrupt.items
          .slice(0, 3)
          .map((w) => `${w.workflowId} (${(w.error ?? 'no reason recorded').replace(/^corrupt: /, '')})`);
        return {
          name: 'corrupt workflows',
          status: 'fail',
          message: `${plural(counts.corrupt, 'workflow')} set aside as corrupt: ${shown.join('; ')}${counts.corrupt > 3 ? `; and ${counts.corrupt - 3} more` : ''}`,
          hint: 'the coordinator cannot process them and moves their messages to the dead-letter queue; submit them again under new ids (jobq workflow list --status corrupt)',
        };
      } catch (error) {
        return {
          name: 'corrupt workflows',
          status: 'fail',
          message: `${plural(counts.corrupt, 'workflow')} set aside as corrupt (cannot list them: ${errorLine(error)})`,
          hint: null,
        };
      }
    },
  },
  {
    // Index rows pending, updated long ago.
    name: 'pending workflows',
    run: async ({ deployment, settings, now, leaseHeld }) => {
      try {
        const pending = await collectWorkflows(deployment.client, { status: ['pending'] }, 10_000);
        const stale = pending.items.filter((w) => now - Date.parse(w.updatedAt) >= settings.stalePendingMs);
        const limit = `${Math.round(settings.stalePendingMs / 1000)}s`;
        return stale.length > 0
          ? {
              name: 'pending workflows',
              status: 'warn',
              message: `${plural(stale.length, 'workflow')} pending for more than ${limit}: ${someNames(stale.map((w) => w.workflowId))}: no coordinator is activating workflows`,
              hint: leaseHeld ? 'the coordinator holds the lease but does not activate them: check its log for errors' : START_HINT,
            }
          : {
              name: 'pending workflows',
              status: 'ok',
              message: `none pending for more than ${limit}${pending.items.length > 0 ? ` (${pending.items.length} pending)` : ''}`,
              hint: null,
            };
      } catch (error) {
        return { name: 'pending workflows', status: 'warn', message: `cannot list pending workflows: ${errorLine(error)}`, hint: null };
      }
    },
  },
  {
    name: 'running tasks',
    run: async (ctx) => {
      const work = await ctx.activeWork();
      if (!work.ok) return { name: 'running tasks', status: 'warn', message: work.message, hint: null };
      const runningLimit = age(ctx.settings.staleRunningMs);
      return work.longRunning.length > 0
        ? {
            name: 'running tasks',
            status: 'warn',
            message: `${plural(work.longRunning.length, 'task')} running for more than ${runningLimit} ${work.scope}: ${someNames(work.longRunning)}`,
            hint: 'a lost message or a dead worker leaves a task running: only timeout_s recovers it; see jobq workflow explain ID --task NAME',
          }
        : { name: 'running tasks', status: 'ok', message: `none running for more than ${runningLimit} ${work.scope}`, hint: null };
    },
  },
  {
    name: 'ready tasks',
    run: async (ctx) => {
      const work = await ctx.activeWork();
      if (!work.ok) return { name: 'ready tasks', status: 'warn', message: work.message, hint: null };
      const readyLimit = age(ctx.settings.staleReadyMs);
      return work.stuckReady.length > 0
        ? {
            name: 'ready tasks',
            status: 'warn',
            message: `${plural(work.stuckReady.length, 'task')} ready and not dispatched for more than ${readyLimit} ${work.scope}: ${someNames(work.stuckReady)}`,
            hint: ctx.leaseHeld
              ? 'the coordinator should dispatch them (ready-repair runs every --ready-sweep-interval-s): check its log'
              : `no coordinator is running: ${START_HINT}`,
          }
        : { name: 'ready tasks', status: 'ok', message: `none stuck for more than ${readyLimit} ${work.scope}`, hint: null };
    },
  },
  {
    name: 'task queues',
    run: async (ctx) => {
      const work = await ctx.activeWork();
      if (!work.ok) return { name: 'task queues', status: 'warn', message: work.message, hint: null };
      return queuesCheck(ctx.deployment, work.dispatched, ctx.settings.staleQueueMs, ctx.now);
    },
  },
  {
    // Skipped when the active workflows cannot be listed.
    name: 'workers',
    run: async (ctx) => {
      const work = await ctx.activeWork();
      if (!work.ok) return null;
      return workersCheck(ctx.deployment, checkedQueues(work.dispatched), ctx.settings.workerStaleMs ?? DEFAULT_WORKER_STALE_IN_MS);
    },
  },
  {
    name: 'service bus queues',
    run: async (ctx) => {
      const work = await ctx.activeWork();
      return serviceBusQueuesCheck(ctx.deployment, work.ok ? checkedQueues(work.dispatched) : []);
    },
  },
];

/** `coord-a 2, coord-b 2`: the shards each live member holds. */
function holdings(report: ShardsReport): string {
  return report.members.map((m) => `${m.id} ${m.held.length}`).join(', ');
}

function startShardsHint(report: ShardsReport): string {
  return `start a coordinator: jobq workflow coordinator --shards ${report.count}`;
}

/**
 * ✖ a shard without an owner for longer than lease + balance interval, counted from its last
 * owner's last sign of life (its claim, or its last stats write); ⚠ one free for less (a hand-over
 * or a take-over under way); ✖ shard 0 held by a coordinator that knows nothing of shards.
 */
export function shardOwnerChecks(report: ShardsReport): DoctorCheck[] {
  const name = 'shard owners';
  const n = report.count;
  const found: DoctorCheck[] = [];
  const live = report.members.length;
  for (const shard of report.shards) {
    if (shard.unshardedHolder && n > 1) {
      found.push({
        name,
        status: 'fail',
        message: `shard 0 of ${n} is held by a coordinator without shards (${shard.owner === null ? 'no claim recorded an owner' : 'its stats have no shard count'}): it works every shard's workflows beside their owners and keeps shard 0 from its sharded owner`,
        hint: `stop it (an older jobq, or a coordinator started without --shards) and run jobq workflow coordinator --shards ${n}`,
      });
    }
    if (shard.leased) continue;
    const last = shard.owner === null ? 'never claimed' : `last owned by ${shard.owner}, epoch ${shard.epoch}`;
    const since = shard.lastSignAgeMs;
    if (since === null || since > OWNERLESS_AFTER_MS) {
      found.push({
        name,
        status: 'fail',
        message: `shard ${shard.index} of ${n} has no owner (${last}${since === null ? '' : `; its owner last showed life ${age(since)} ago`}): its workflows do not progress`,
        hint:
          live === 0
            ? `no coordinator with shards is running: ${startShardsHint(report)}`
            : `${plural(live, 'live coordinator')} (${report.members.map((m) => m.id).join(', ')}) did not claim it within ${age(OWNERLESS_AFTER_MS)}: check their logs`,
      });
    } else {
      found.push({
        name,
        status: 'warn',
        message: `shard ${shard.index} of ${n} has no owner for now (${last}; its owner last showed life ${age(since)} ago): a coordinator should claim it within ${age(OWNERLESS_AFTER_MS - since)}`,
        hint: live === 0 ? `no coordinator with shards is running: ${startShardsHint(report)}` : 'run doctor again in a minute',
      });
    }
  }
  if (found.length > 0) return found;
  return [{ name, status: 'ok', message: `${plural(n, 'shard')}, every one held${live > 0 ? `: ${holdings(report)}` : ''}`, hint: null }];
}

/** ✖ a shard's completion queue that is missing or cannot be read. */
export function shardQueueChecks(report: ShardsReport): DoctorCheck[] {
  const name = 'shard queues';
  const found: DoctorCheck[] = [];
  let waiting = 0;
  const sizes: string[] = [];
  for (const shard of report.shards) {
    const queue = shard.queue;
    if (queue === null) continue;
    if (queue.state === 'missing') {
      found.push({
        name,
        status: 'fail',
        message: `shard ${shard.index}'s completion queue ${queue.name} does not exist: completions sent to it are lost to that shard`,
        hint: `the coordinator that claims shard ${shard.index} creates it again; check that one runs (jobq workflow shards)`,
      });
    } else if (queue.state === 'unreachable') {
      found.push({
        name,
        status: 'fail',
        message: `cannot read shard ${shard.index}'s completion queue ${queue.name}: ${queue.error ?? 'unknown error'}`,
        hint: 'check the queues account (JOBQ_WORKFLOW_QUEUES), the credential and network access',
      });
    } else {
      waiting += queue.messages ?? 0;
      sizes.push(`${shard.index}: ${queue.messages ?? 0}`);
    }
  }
  if (found.length > 0) return found;
  return [
    {
      name,
      status: 'ok',
      message: `${plural(report.count, 'completion queue')}, about ${plural(waiting, 'message')} waiting (${sizes.join(', ')})`,
      hint: null,
    },
  ];
}

/** ⚠ a shard that forwarded more than 1 % of its messages to other shards. */
export function forwardedChecks(report: ShardsReport): DoctorCheck[] {
  const name = 'forwarded messages';
  const found: DoctorCheck[] = [];
  let forwarded = 0;
  let messages = 0;
  for (const shard of report.shards) {
    const stats = shard.stats;
    if (stats === null) continue;
    forwarded += stats.forwarded;
    messages += Math.max(stats.messages, stats.forwarded);
    const share = forwardedShare(stats);
    if (share !== null && share > FORWARDED_WARN_SHARE) {
      found.push({
        name,
        status: 'warn',
        message: `shard ${shard.index} forwarded ${stats.forwarded} of its ${Math.max(stats.messages, stats.forwarded)} messages (${(share * 100).toFixed(1)} %) to other shards since its runner started${stats.startedAt === null ? '' : ` (${stats.startedAt})`}`,
        hint: 'workers or clients send completions to the wrong shard queue: upgrade them (older and Python workers send every completion to shard 0)',
      });
    }
  }
  if (found.length > 0) return found;
  return [{ name, status: 'ok', message: `${forwarded} of ${plural(messages, 'message')} forwarded to another shard`, hint: null }];
}

/** ⚠ more live coordinators than shards (the extra ones stand by). */
export function membersCheck(report: ShardsReport): DoctorCheck {
  const name = 'coordinators';
  const live = report.members.length;
  const n = report.count;
  if (live > n) {
    const idle = report.members.filter((m) => m.held.length === 0).map((m) => m.id);
    return {
      name,
      status: 'warn',
      message: `${plural(live, 'live coordinator')} for ${plural(n, 'shard')}: ${idle.length > 0 ? `${someNames(idle)} ${idle.length === 1 ? 'holds' : 'hold'} none` : holdings(report)}`,
      hint: `the extra ones only stand by: stop them, or grow the shards (jobq workflow reshard --shards ${Math.min(n * 2, 16)})`,
    };
  }
  if (live === 0) {
    return { name, status: 'warn', message: 'no coordinator with shards has heartbeated in the last 60 s', hint: startShardsHint(report) };
  }
  return { name, status: 'ok', message: `${plural(live, 'live coordinator')} for ${plural(n, 'shard')}: ${holdings(report)}`, hint: null };
}

/** The task queue specs the queue checks look at: the first {@link MAX_QUEUES}, sorted. */
function checkedQueues(dispatched: Map<string, number>): string[] {
  return [...dispatched.keys()].sort().slice(0, MAX_QUEUES);
}

/**
 * The runtimes of the active workflows (at most `maxWorkflows`), read through `explainRuntime`
 * (`@jobq/dag-core`): tasks running longer than `staleRunningMs`, ready tasks nothing holds back in
 * a runtime unchanged for `staleReadyMs`, and the queues work was dispatched to.
 */
export async function readActiveWork(deployment: Deployment, settings: DoctorSettings, active: number, now: number): Promise<ActiveWork> {
  let runtimes: WorkflowRuntime[];
  let scope: string;
  try {
    const listed = await collectWorkflows(deployment.client, { status: ['running', 'cancelling', 'pending'] }, settings.maxWorkflows);
    const loaded = await loadRuntimes(
      deployment,
      listed.items.map((w) => w.workflowId),
    );
    runtimes = loaded.runtimes;
    scope = listed.more
      ? `in the first ${settings.maxWorkflows} active workflows (of ${active}; --max-workflows reads more)`
      : `in ${plural(listed.items.length, 'active workflow')}`;
    if (loaded.errors.length > 0) scope += `; ${loaded.errors.length} could not be read (${someNames(loaded.errors)})`;
  } catch (error) {
    return { ok: false, message: `cannot list active workflows: ${errorLine(error)}` };
  }
  const longRunning: string[] = [];
  const stuckReady: string[] = [];
  const dispatched = new Map<string, number>();
  const at = new Date(now).toISOString();
  for (const runtime of runtimes) {
    const stillForMs = now - Date.parse(runtime.updatedAt);
    for (const task of explainRuntime(runtime, at).tasks) {
      if (task.status === 'running' || (task.status === 'ready' && runtime.activated))
        dispatched.set(task.queue, (dispatched.get(task.queue) ?? 0) + 1);
      // A retry sent with a delay counts from when it is due.
      if (task.status === 'running' && task.ageMs !== null && task.ageMs >= settings.staleRunningMs)
        longRunning.push(`${runtime.workflowId}/${task.name} (${age(task.ageMs)})`);
      if (task.status === 'ready' && task.heldBy === null && stillForMs >= settings.staleReadyMs)
        stuckReady.push(`${runtime.workflowId}/${task.name} (${age(stillForMs)})`);
    }
  }
  return { ok: true, scope, longRunning, stuckReady, dispatched };
}

/** Checks 2 onwards, against an opened deployment; each check is added to `checks` as soon as it is known. */
async function deploymentChecks(deployment: Deployment, settings: DoctorSettings, checks: DoctorCheck[]): Promise<void> {
  const now = Date.now();
  const store = await storeCheck(deployment);
  checks.push(store.check);
  const counts = store.counts;
  if (counts === null) return;
  const active = ACTIVE.reduce((n, s) => n + counts[s], 0);
  let work: Promise<ActiveWork> | undefined;
  let shards: Promise<ShardsRead> | undefined;
  const ctx: CheckContext = {
    deployment,
    settings,
    now,
    counts,
    total: Object.values(counts).reduce((a, b) => a + b, 0),
    active,
    leaseHeld: false,
    stats: null,
    activeWork: () => (work ??= readActiveWork(deployment, settings, active, now)),
    shards: () => (shards ??= readShardsIfAny(deployment, now)),
  };
  for (const check of CHECKS) {
    const result = await check.run(ctx);
    if (result !== null) checks.push(...(Array.isArray(result) ? result : [result]));
  }
}

/** The Service Bus queues among the completion queue and these task queue specs: settings and dead-letter counts; null when none is on Service Bus. */
async function serviceBusQueuesCheck(deployment: Deployment, specs: readonly string[]): Promise<DoctorCheck | null> {
  const queues: ServiceBusQueueToCheck[] = [{ spec: deployment.completionsSpec, queue: deployment.completions, completions: true }];
  const seen = new Set<string>([deployment.locate(deployment.completionsSpec).key]);
  for (const spec of specs) {
    try {
      const location = deployment.locate(spec);
      if (location.backend !== 'servicebus' || seen.has(location.key)) continue;
      seen.add(location.key);
      queues.push({
        spec: `sb://${location.access.namespace}/${location.queueName}`,
        queue: await deployment.queue(spec),
        completions: false,
      });
    } catch {
      // The task queues check above already says what is wrong with this queue.
    }
  }
  const check = await checkServiceBusQueues(queues);
  return check === null ? null : { name: 'service bus queues', ...check };
}

/** The task queues the active workflows use: their sizes, and whether their oldest message waits too long (no worker). */
async function queuesCheck(
  deployment: Deployment,
  dispatched: Map<string, number>,
  staleQueueMs: number,
  now: number,
): Promise<DoctorCheck> {
  if (dispatched.size === 0)
    return { name: 'task queues', status: 'ok', message: 'no task of an active workflow is queued or running', hint: null };
  const specs = [...dispatched.keys()].sort().slice(0, MAX_QUEUES);
  const parts: string[] = [];
  const idle: string[] = [];
  const broken: string[] = [];
  await Promise.all(
    specs.map(async (spec, i) => {
      let part: string;
      try {
        const queue = await deployment.queue(spec);
        const [count, peeked] = await Promise.all([queue.approximateMessageCount(), queue.peek(1)]);
        const enqueuedAt = peeked[0]?.enqueuedAt ?? null;
        const oldest = enqueuedAt === null ? null : now - enqueuedAt.getTime();
        part = `${spec}: about ${plural(count, 'message')}${oldest === null ? '' : `, oldest ${age(oldest)}`}`;
        if (oldest !== null && oldest >= staleQueueMs) idle.push(`${spec} (oldest message ${age(oldest)} old)`);
      } catch (error) {
        part = `${spec}: ${isJobqError(error, 'not-found') ? 'does not exist' : errorLine(error)}`;
        broken.push(part);
      }
      parts[i] = part;
    }),
  );
  const more = dispatched.size > specs.length ? ` (+${dispatched.size - specs.length} more queues not checked)` : '';
  if (broken.length > 0) {
    return {
      name: 'task queues',
      status: 'warn',
      message: `${broken.join('; ')}${more}`,
      hint: 'tasks were dispatched to these queues: check the queue names, JOBQ_WORKFLOW_QUEUES and access to their accounts',
    };
  }
  if (idle.length > 0) {
    return {
      name: 'task queues',
      status: 'warn',
      message: `no worker seems to take messages from ${idle.join(', ')}${more}`,
      hint: `start a worker on each: jobq worker -q ${idle[0]?.split(' ')[0] ?? 'QUEUE'}`,
    };
  }
  return { name: 'task queues', status: 'ok', message: `${parts.join('; ')}${more}`, hint: null };
}

/** Runs every check; never throws for what it diagnoses. */
export async function runDoctor(
  resolve: () => CliConfig,
  settings: DoctorSettings,
): Promise<{ target: string | null; checks: DoctorCheck[] }> {
  const checks: DoctorCheck[] = [];
  let config: CliConfig;
  try {
    config = resolve();
  } catch (error) {
    checks.push({
      name: 'config',
      status: 'fail',
      message: errorLine(error),
      hint: 'fix the setting named above (flag, environment variable or jobq.yaml)',
    });
    return { target: null, checks };
  }
  const first = configCheck(config);
  checks.push(first);
  const prefix = config.prefix.value;
  if (first.status === 'fail' || prefix === null) return { target: null, checks };
  const target = `${prefix.account}/${prefix.prefix}`;
  let deployment: Deployment;
  try {
    deployment = await openDeployment(config, { createIfMissing: false });
  } catch (error) {
    checks.push({
      name: 'store',
      status: 'fail',
      message: `cannot open the deployment: ${errorLine(error)}`,
      hint: 'check the prefix, JOBQ_WORKFLOW_QUEUES and JOBQ_WORKFLOW_BLOBS',
    });
    return { target, checks };
  }
  await deploymentChecks(deployment, settings, checks);
  return { target, checks };
}

export default class WorkflowDoctor extends JobqCommand {
  static override summary = 'Check the deployment: configuration, storage, coordinator and stuck work';
  static override description =
    'Runs these checks in order and prints one line each (✔ ok, ⚠ warning, ✖ error) with a hint:\n' +
    '  config             the prefix, where each setting comes from, and whether workload identity is set (AZURE_* names)\n' +
    '  store              the workflow index answers (workflow counts)\n' +
    '  completion queue   the completion queue answers (message count)\n' +
    '  coordinator lease  a coordinator holds the lease\n' +
    '  coordinator stats  its stats were written recently\n' +
    '  poison messages    completions it could not read (from the stats)\n' +
    'With a shard manifest (docs/sharding.md), four more:\n' +
    "  shard owners       every shard held (an error past lease + balance interval, 80 s from its owner's last sign of life);\n" +
    '                     shard 0 not held by a coordinator without shards\n' +
    "  shard queues       each shard's completion queue exists and answers\n" +
    "  forwarded messages at most 1 % of a shard's messages forwarded to other shards (from its stats)\n" +
    '  coordinators       no more live coordinators than shards\n' +
    '  corrupt workflows  set aside by the coordinator, with the reason\n' +
    '  pending workflows  pending longer than --stale-pending\n' +
    '  running tasks      running longer than --stale-running\n' +
    '  ready tasks        ready, not dispatched for --stale-ready\n' +
    '  task queues        their sizes; oldest message older than --stale-queue\n' +
    '  service bus queues LockDuration, MaxDeliveryCount (< 100 warns), duplicate detection and dead-letter counts\n' +
    '                     of the Service Bus queues among these (only when the queues are on Service Bus)\n' +
    'The last three read the runtimes of at most --max-workflows active workflows. No lease while workflows are active is an ' +
    'error, otherwise a warning. Secrets are masked. Nothing is created or changed. Exits 1 when any check is an error; warnings never fail.';
  static override examples = [
    '<%= config.bin %> workflow doctor',
    '<%= config.bin %> workflow myaccount/MyProject doctor --stale-pending 30s',
    '<%= config.bin %> workflow doctor --json',
  ];
  static override flags = {
    ...configFlags,
    'stale-pending': Flags.string({ description: 'Warn about workflows pending longer than this (a duration)', default: '2m' }),
    'stale-running': Flags.string({ description: 'Warn about tasks running longer than this (a duration)', default: '60m' }),
    'stale-ready': Flags.string({ description: 'Warn about ready tasks not dispatched for longer than this (a duration)', default: '60m' }),
    'stale-stats': Flags.string({ description: 'Coordinator stats older than this are stale (a duration, at least 1s)', default: '60s' }),
    'stale-queue': Flags.string({
      description: 'Warn about a task queue whose oldest message is older than this (no worker; a duration)',
      default: '5m',
    }),
    'worker-stale': Flags.string({
      description:
        'A worker heartbeat older than this does not count: a queue with waiting messages that no fresher heartbeat names is an error',
      default: '2m',
    }),
    'max-workflows': Flags.integer({ description: 'Read the runtimes of at most this many active workflows', default: 50, min: 1 }),
    json: Flags.boolean({
      description: 'Print one JSON document: { ok, target, checks: [{ name, status, message, hint }], summary }',
      default: false,
    }),
    'stale-pending-sec': legacyDurationFlag('stale-pending-sec', 'stale-pending', 'seconds'),
    'stale-running-min': legacyDurationFlag('stale-running-min', 'stale-running', 'minutes'),
    'stale-ready-min': legacyDurationFlag('stale-ready-min', 'stale-ready', 'minutes'),
    'stale-stats-sec': legacyDurationFlag('stale-stats-sec', 'stale-stats', 'seconds'),
    'stale-queue-min': legacyDurationFlag('stale-queue-min', 'stale-queue', 'minutes'),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowDoctor);
    const { target, checks } = await runDoctor(() => configFromFlags(flags), {
      stalePendingMs: durationMs(flags['stale-pending'], '--stale-pending'),
      staleRunningMs: durationMs(flags['stale-running'], '--stale-running'),
      staleReadyMs: durationMs(flags['stale-ready'], '--stale-ready'),
      staleStatsMs: durationMs(flags['stale-stats'], '--stale-stats', 1_000),
      staleQueueMs: durationMs(flags['stale-queue'], '--stale-queue'),
      workerStaleMs: durationMs(flags['worker-stale'], '--worker-stale'),
      maxWorkflows: flags['max-workflows'],
    });
    const summary = { ok: 0, warn: 0, fail: 0 };
    for (const check of checks) summary[check.status]++;
    const ok = summary.fail === 0;
    if (flags.json) {
      this.printJson({ ok, target, checks: checks.map((c) => ({ ...c, message: maskSecret(c.message) })), summary });
    } else {
      const width = Math.max(...checks.map((c) => c.name.length));
      const lines: string[] = [];
      for (const check of checks) {
        lines.push(`${MARK[check.status]} ${check.name.padEnd(width)}  ${maskSecret(check.message)}`);
        if (check.hint !== null && check.status !== 'ok') lines.push(`  ${' '.repeat(width)}  → ${check.hint}`);
      }
      lines.push('', `Doctor: ${summary.ok} passed, ${summary.warn} warning(s), ${summary.fail} error(s).`);
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    if (!ok) throw new ReportedFailure(`${summary.fail} check(s) failed`);
  }
}
