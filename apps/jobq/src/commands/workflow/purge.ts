import { Flags } from '@oclif/core';
import { mapLimit } from '@jobq/ports';
import { finishedWorkflows, purgeWorkflow, type WorkflowPurge as PurgeOutcome } from '@jobq/coordinator';
import { JobqCommand, errorLine } from '../../base';
import { parseCutoff } from '../../age';
import { openDeployment } from '../../deployment';
import { ReportedFailure } from '../../errors';
import { configFlags, configFromFlags } from '../../flags';
import { ProgressReporter } from '../../progress';
import type { PurgeEntryJson } from '../../json-output';

/** One workflow in the report. */
type Entry = Omit<PurgeOutcome, 'outcome'> & { outcome: PurgeOutcome['outcome'] | 'failed'; error: string | null };

function entryJson(e: Entry): PurgeEntryJson {
  return {
    workflow_id: e.workflowId,
    outcome: e.outcome,
    status: e.status,
    finished_at: e.finishedAt,
    reason: e.reason,
    blobs: e.blobs,
    output_blobs: e.outputBlobs,
    task_rows: e.taskRows,
    error: e.error,
  };
}

/** A progress line at most this often (and at the end). */
const PROGRESS_EVERY_MS = 1_000;

export default class WorkflowPurge extends JobqCommand {
  static override summary = 'Delete finished workflows older than a cutoff, with their outputs';
  static override description =
    'Finds the workflows that finished (completed, failed, cancelled or corrupt) before the cutoff — --finished-before takes a duration ' +
    '(30d, 12h, 90m, 2w, or seconds; 0 = every finished workflow) or a date (2026-01-31, 2026-01-31T12:00:00Z) — with a server-side ' +
    'query of the index, then deletes each one: its runtime, its upstream overflow blobs, its outputs, stashed files and task logs ' +
    '(in the outputs target, which may be another account: JOBQ_WORKFLOW_BLOBS), its task rows, its pending request and its index row, last. ' +
    "Before deleting anything it re-reads the workflow's runtime and leaves it alone when it is not finished (running, pending, a retry " +
    'waiting) or finished after the cutoff since it was listed: such workflows are reported as skipped. --dry-run deletes nothing and ' +
    'prints what would be deleted. Prints one line per workflow on stdout ("purged ID …", or "would purge ID …"); skipped workflows, ' +
    'progress and a summary go to stderr. A purge that fails half-way leaves the workflow listed: run the command again to finish it. ' +
    'Exits 1 when any workflow could not be purged because of an error (skipped workflows are not errors).';
  static override examples = [
    '<%= config.bin %> workflow myaccount/MyProject purge --finished-before 30d --dry-run',
    '<%= config.bin %> workflow purge --finished-before 2026-01-01',
    '<%= config.bin %> workflow purge --finished-before 12h --json',
  ];
  static override flags = {
    ...configFlags,
    'finished-before': Flags.string({
      description: 'Cutoff: a duration before now (30d, 12h, 3600) or a date/time (2026-01-31, 2026-01-31T12:00:00Z)',
      required: true,
    }),
    'dry-run': Flags.boolean({ description: 'Delete nothing; print what would be deleted', default: false }),
    concurrency: Flags.integer({ description: 'Workflows purged at once', default: 4, min: 1, max: 64 }),
    json: Flags.boolean({
      description:
        'Print one JSON document: {target, finished_before, dry_run, purged, would_purge, skipped, failed, workflows: [{workflow_id, outcome, status, finished_at, reason, blobs, output_blobs, task_rows, error}]}',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkflowPurge);
    const { cutoff, age } = parseCutoff(flags['finished-before'], '--finished-before', new Date());
    const dryRun = flags['dry-run'];
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const progress = new ProgressReporter();
    const when = `finished before ${cutoff}${age === null ? '' : ` (${age} ago)`}`;

    const ids: string[] = [];
    let lastShown = Date.now();
    for await (const summary of finishedWorkflows(deployment.store, cutoff)) {
      ids.push(summary.workflowId);
      if (Date.now() - lastShown >= PROGRESS_EVERY_MS) {
        lastShown = Date.now();
        progress.update(`Listing workflows ${when}: ${ids.length} found…`);
      }
    }
    progress.done();
    if (ids.length === 0) {
      if (flags.json)
        this.printJson({
          target: deployment.target,
          finished_before: cutoff,
          dry_run: dryRun,
          purged: 0,
          would_purge: 0,
          skipped: 0,
          failed: 0,
          workflows: [],
        });
      this.note(`No workflows ${when} in ${deployment.target}.`);
      return;
    }
    this.note(
      `${dryRun ? 'Dry run: checking' : 'Purging'} ${ids.length} workflow${ids.length === 1 ? '' : 's'} ${when} in ${deployment.target}…`,
    );

    let settled = 0;
    lastShown = Date.now();
    const entries = await mapLimit(ids, flags.concurrency, async (workflowId): Promise<Entry> => {
      let entry: Entry;
      try {
        const result = await purgeWorkflow(deployment.store, deployment.outputs, workflowId, { dryRun, finishedBefore: cutoff });
        entry = { ...result, error: null };
      } catch (error) {
        entry = {
          workflowId,
          outcome: 'failed',
          status: null,
          finishedAt: null,
          reason: null,
          blobs: 0,
          outputBlobs: 0,
          taskRows: 0,
          error: errorLine(error),
        };
      }
      settled++;
      if (!flags.json) this.report(entry, progress);
      if (Date.now() - lastShown >= PROGRESS_EVERY_MS && settled < ids.length) {
        lastShown = Date.now();
        progress.update(`${dryRun ? 'Checked' : 'Purged'} ${settled}/${ids.length}…`);
      }
      return entry;
    });
    progress.done();

    const count = (outcome: Entry['outcome']) => entries.filter((e) => e.outcome === outcome).length;
    const done = count(dryRun ? 'would-purge' : 'purged');
    const skipped = count('skipped') + count('not-found');
    const failed = count('failed');
    if (flags.json) {
      this.printJson({
        target: deployment.target,
        finished_before: cutoff,
        dry_run: dryRun,
        purged: dryRun ? 0 : done,
        would_purge: dryRun ? done : 0,
        skipped,
        failed,
        workflows: entries.map(entryJson),
      });
    }
    const blobs = entries.reduce((n, e) => n + e.blobs + e.outputBlobs, 0);
    const rows = entries.reduce((n, e) => n + e.taskRows, 0);
    const tail = `${skipped > 0 ? `; ${skipped} skipped` : ''}${failed > 0 ? `; ${failed} failed` : ''}`;
    if (dryRun)
      this.note(
        `Dry run: ${done} workflow${done === 1 ? '' : 's'} ${when} would be purged from ${deployment.target} (${rows} task rows); nothing was deleted${tail}.`,
      );
    else
      this.note(
        `Purged ${done} workflow${done === 1 ? '' : 's'} ${when} from ${deployment.target}: ${blobs} blobs, ${rows} task rows${tail}.`,
      );
    if (failed > 0) throw new ReportedFailure(`${failed} purge(s) failed`);
  }

  /** One line for a workflow: stdout for what was (or would be) purged, stderr for the rest. */
  private report(entry: Entry, progress: ProgressReporter): void {
    const finished = entry.finishedAt === null ? '' : `, finished ${entry.finishedAt}`;
    switch (entry.outcome) {
      case 'purged':
        process.stdout.write(
          `purged ${entry.workflowId} (${entry.status}${finished}): ${entry.blobs + entry.outputBlobs} blobs, ${entry.taskRows} task rows\n`,
        );
        return;
      case 'would-purge':
        process.stdout.write(
          `would purge ${entry.workflowId} (${entry.status}${finished}): its runtime, blobs, outputs and ${entry.taskRows} task rows\n`,
        );
        return;
      case 'skipped':
        progress.log(`skipped ${entry.workflowId}: ${entry.reason ?? 'not finished'}`);
        return;
      case 'not-found':
        progress.log(`skipped ${entry.workflowId}: it no longer exists`);
        return;
      case 'failed':
        progress.log(`jobq: ${entry.workflowId}: ${entry.error ?? 'failed'}`);
    }
  }
}
