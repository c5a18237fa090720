import { setTimeout as sleep } from 'node:timers/promises';
import { Args, Flags } from '@oclif/core';
import type { Coordinator } from '@jobq/coordinator';
import {
  taskStatus,
  taskState,
  isMergeNode,
  isTerminalWorkflowStatus,
  taskQueue,
  type TaskStatus,
  type WorkflowDefinition,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { DEFAULT_HEARTBEAT_INTERVAL_IN_MS, type Worker } from '@jobq/worker';
import type { WorkflowSummary } from '@jobq/ports';
import type { Dashboard } from '@jobq/dashboard';
import { JobqCommand, errorLine } from '../../base';
import { storageConfigured, type CliConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { LOCAL_MAX_IDLE_BACKOFF_IN_MS, localWorkerEnvironment, startEmbeddedStorage } from '../../embedded';
import { ReportedFailure, UsageError } from '../../errors';
import { configFlags, configFromFlags, coordinatorFlags } from '../../flags';
import { ProgressReporter, formatCounts } from '../../progress';
import { RunOutput, countsWithWaiting, failureLines, taskEvents, waitingRetries, type Verbosity } from '../../run-output';
import { queuesNamespace } from '../../servicebus-access';
import { DEFAULT_DASHBOARD_PORT, dashboardLine, dashboardPortFlag, startDeploymentDashboard, workflowPageUrl } from '../../dashboard';
import { metricsFlags, startMetrics } from '../../metrics';
import { coordinatorOptions, createCoordinator, createWorker } from '../../services';
import { skipLines, skippedTask, skipWarnings, type SkippedTask } from '../../skips';
import { paramFlags, paramOverrides } from '../../params';
import { printDiagnostics } from '../../diagnostics';
import { loadWorkflowFile } from '../../workflow-file';
import { readTaskOutputs } from '../../task-outputs';

/** One task in the `--json` document. */
export interface RunTaskReport {
  name: string;
  status: TaskStatus;
  attempt_no: number;
  queue: string;
  error: string | null;
  /** Why the task was skipped (its condition, and what decided it); null unless skipped. */
  skip_reason: string | null;
  output: unknown;
}

/** The `--json` document of `jobq workflow run`. */
export interface RunReport {
  workflow_id: string;
  name: string;
  status: string;
  tasks: RunTaskReport[];
}

/** How often the runtime is read while watching. */
const POLL_INTERVAL_IN_MS = 250;
/** A workflow no coordinator has activated after this long gets one warning line. */
const NOT_ACTIVATED_WARNING_IN_MS = 30_000;
/** Every this many polls the runtime is read even though the index row says the workflow runs. */
const FULL_READ_EVERY = 20;
/** Skipped tasks listed by name, with their reasons, in the summary. */
const SKIPPED_SHOWN = 20;
/** Failed tasks listed by name, with their errors, in the summary. */
const FAILED_SHOWN = 20;
/** How long a cancel requested by Ctrl-C may take to settle before everything is stopped. */
const CANCEL_SETTLE_IN_MS = 5_000;

export default class WorkflowRun extends JobqCommand {
  static override traced = true;

  static override summary = 'Run a workflow file to the end and show its progress';
  static override description =
    'With no storage configured (no ACCOUNT/PREFIX positional or --prefix, no JOBQ_WORKFLOW_PREFIX, no connection.prefix in a config file), starts an embedded stack: ' +
    'an in-memory Azurite on loopback, a coordinator and local workers for every queue the workflow names ' +
    '(every ACCOUNT/… queue mapped onto the local stack), submits the workflow, shows live progress on stderr, ' +
    'and stops everything it started. With --queues sb://local (any sb://NAMESPACE), or when the workflow names sb://… queues, a local Service Bus broker ' +
    'joins the stack: every sb://NAMESPACE/NAME queue is mapped onto it and, with --queues, the completion queue and bare queue names live there too ' +
    '(nothing of it is kept on disk). With storage configured, submits there and watches ' +
    '(local workers only with --workers; the coordinator of that deployment must be running, and the COORDINATOR flags apply only to the embedded one). Exits 0 when the workflow completes, 1 when it fails or is cancelled. ' +
    'Ctrl-C cancels the workflow and stops everything. ' +
    'With --dashboard the dashboard (jobq dashboard) serves the stack on 127.0.0.1:8050 or --dashboard-port (0 picks a free one) and "jobq: dashboard on URL" names the workflow\'s page; ' +
    "with --linger it stays up after the workflow ends (the summary printed) until Ctrl-C, and the exit code is still the workflow's. " +
    "On stderr: the progress line, each line a task prints prefixed with its name and attempt ([train#2] …), the local coordinator's and workers' own lines " +
    "(not the workers' routine lines about each task: started, done, completion sent), and a summary listing the failed and skipped tasks with their reasons. " +
    '--quiet keeps only the progress line, problems and the summary; --verbose adds every task event (dispatched, completed, failed, retrying, skipped) ' +
    "and the workers' routine lines (it reads the whole workflow at each poll).";
  static override examples = [
    '<%= config.bin %> workflow run examples/diamond.yaml',
    '<%= config.bin %> workflow run examples/diamond.yaml --workers 4 --json',
    '<%= config.bin %> workflow run examples/flaky-retries.yaml --verbose',
    '<%= config.bin %> workflow run examples/diamond.yaml --queues sb://local',
    '<%= config.bin %> workflow run sweep.yaml --param lr=0.01',
    '<%= config.bin %> workflow myaccount/Prod run dag.yaml',
  ];
  static override args = { file: Args.string({ description: 'Workflow file (YAML or JSON)', required: true, ignoreStdin: true }) };
  static override flags = {
    ...configFlags,
    ...coordinatorFlags,
    workers: Flags.integer({ description: 'Local workers per queue (default 2 with the embedded stack; none otherwise)', min: 1, max: 64 }),
    'max-fan-in': Flags.integer({ description: 'Split dependency lists longer than this with merge nodes (≥ 2)', min: 2 }),
    ...paramFlags,
    json: Flags.boolean({ description: "Print one JSON document with the final status and every task's output", default: false }),
    dashboard: Flags.boolean({
      description: "Serve the dashboard (jobq dashboard) while the workflow runs and print the workflow's URL",
      default: false,
      helpGroup: 'DASHBOARD',
    }),
    'dashboard-port': dashboardPortFlag,
    linger: Flags.boolean({
      description:
        "With --dashboard: keep the dashboard (and the embedded stack) up after the workflow ends, until Ctrl-C (the exit code is the workflow's)",
      default: false,
      dependsOn: ['dashboard'],
      helpGroup: 'DASHBOARD',
    }),
    quiet: Flags.boolean({ description: 'Show only the progress line, problems and the summary (no task output lines)', default: false }),
    verbose: Flags.boolean({
      char: 'v',
      description: "Also show every task event and the local workers' routine lines about each task",
      default: false,
    }),
    ...metricsFlags,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkflowRun);
    if (flags.quiet && flags.verbose) throw new UsageError('--quiet and --verbose cannot be used together');
    const verbosity: Verbosity = flags.quiet ? 'quiet' : flags.verbose ? 'verbose' : 'normal';
    const baseConfig = configFromFlags(flags);
    const params = paramOverrides(flags);
    if (!params.ok) {
      printDiagnostics([params.report]);
      throw new ReportedFailure(`${flags['params-file']} is not a valid params file`);
    }
    const loaded = loadWorkflowFile(args.file, flags['max-fan-in'], params.overrides);
    printDiagnostics([loaded]);
    if (!loaded.ok) throw new ReportedFailure(`${args.file} is not a valid workflow`, 1, 'invalid_workflow');
    const definition = loaded.definition;

    const embedded = !storageConfigured(baseConfig);
    const numWorkers = flags.workers ?? (embedded ? 2 : 0);
    const progress = new ProgressReporter();
    const out = new RunOutput(progress, verbosity);
    const cleanups: Array<() => Promise<void>> = [];
    const session = new RunSession(progress, out);
    session.installSignalHandlers();
    let report: RunReport | null = null;
    let printed = false;
    try {
      let config: CliConfig = baseConfig;
      // Tasks find `jobq` on their PATH (for `jobq task get-upstream …`), installed or not.
      const local = await localWorkerEnvironment(embedded);
      cleanups.push(local.cleanup);
      const workerEnv = local.env;
      if (embedded) {
        // A local Service Bus broker joins Azurite for --queues sb://… (completions and bare queue
        // names on it) and for the workflow's sb://… queues (every namespace mapped onto it).
        const completionsOnServiceBus = queuesNamespace(baseConfig) !== null;
        const serviceBus = completionsOnServiceBus || definition.tasks.some((t) => taskQueue(definition, t).startsWith('sb://'));
        const started = await startEmbeddedStorage(baseConfig, {
          serviceBus: serviceBus ? { completions: completionsOnServiceBus } : null,
        });
        cleanups.push(() => started.stop());
        config = started.config;
        const broker = serviceBus
          ? ` and a Service Bus broker (sb://local${completionsOnServiceBus ? ': completions and task queues' : ': the sb://… queues'})`
          : '';
        out.info(
          `embedded stack: in-memory Azurite on 127.0.0.1${broker}, prefix ${config.prefix.value?.account}/${config.prefix.value?.prefix}`,
        );
      }
      session.checkInterrupted();
      const instruments = await startMetrics(flags, (line) => out.problem(line));
      const deployment = await openDeployment(config, { mapAllAccounts: embedded, instruments });
      // Closed before the local broker stops (cleanups run last first).
      cleanups.push(() => deployment.close());

      if (embedded) {
        const coordinator = createCoordinator(deployment, {
          ...coordinatorOptions(config),
          log: (line) => out.service('coordinator', line),
          instruments,
        });
        await coordinator.start();
        cleanups.push(() => coordinator.stop());
        session.watchCoordinator(coordinator);
      }
      if (numWorkers > 0) {
        // One worker per queue: specs that name the same queue (mapped onto the local stack, or
        // Service Bus names differing in case) share it.
        const byQueue = new Map<string, string>();
        for (const spec of [...new Set(definition.tasks.map((t) => taskQueue(definition, t)))].sort()) {
          const key = deployment.locate(spec).key;
          if (!byQueue.has(key)) byQueue.set(key, spec);
        }
        const queues = [...byQueue.values()];
        for (const queue of queues) {
          const worker = await createWorker(deployment, {
            queue,
            numWorkers,
            maxIdleBackoffInMs: LOCAL_MAX_IDLE_BACKOFF_IN_MS,
            gracePeriodInMs: 5_000,
            env: workerEnv,
            log: (line) => out.service(`worker ${queue}`, line),
            taskLines: (line) => out.task(queue, line),
            onConfigError: (error) => session.fail(error),
            instruments,
            // Heartbeats as `jobq worker` writes them, so `jobq workers`, status and doctor see the run's workers.
            heartbeatIntervalInMs: DEFAULT_HEARTBEAT_INTERVAL_IN_MS,
            version: this.config.version,
          });
          cleanups.push(() => worker.stop(session.interrupted ? { gracePeriodInMs: 0 } : {}));
          session.watchWorker(worker, queue);
        }
        out.info(`${numWorkers} local worker(s) on ${queues.join(', ')}`);
      } else {
        out.info(`no local workers (see --workers): the coordinator and workers of ${deployment.target} run the tasks`);
      }
      session.checkInterrupted();

      let dashboard: Dashboard | null = null;
      if (flags.dashboard) {
        dashboard = await startDeploymentDashboard(deployment, { port: flags['dashboard-port'] ?? DEFAULT_DASHBOARD_PORT });
        const started = dashboard;
        cleanups.push(() => started.close());
      }
      session.checkInterrupted();

      const submitted = await deployment.client.submit({ definition });
      out.info(`submitted workflow "${definition.name}" as ${submitted.workflowId} on ${deployment.target}`);
      if (dashboard !== null) out.problem(dashboardLine(workflowPageUrl(dashboard, submitted.workflowId)));
      const runtime = await session.watch(deployment, submitted.workflowId, definition);
      progress.done();
      report = await buildReport(deployment, submitted.workflowId, definition, runtime, (line) => this.note(line));
      if (dashboard !== null && flags.linger && !session.interrupted && session.failure === null) {
        // The summary now: the dashboard (and what it reads) stays up until Ctrl-C.
        this.printOutcome(report, flags.json);
        printed = true;
        this.note(`jobq: the dashboard stays up on ${workflowPageUrl(dashboard, submitted.workflowId)} until Ctrl-C (--linger)`);
        await session.linger();
      }
    } finally {
      progress.done();
      session.closing = true;
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          this.note(`jobq: while stopping: ${errorLine(error)}`);
        }
      }
      session.removeSignalHandlers();
    }

    if (session.failure !== null && report === null) throw session.failure;
    if (report === null) throw new ReportedFailure('the workflow did not finish');
    if (!printed) this.printOutcome(report, flags.json);
    if (session.failure !== null) this.note(`jobq: ${errorLine(session.failure)}`);
    if (report.status !== 'completed' || session.interrupted || session.failure !== null)
      throw new ReportedFailure(`workflow ${report.status}`);
  }

  /** The `--json` document or the summary, and the warnings about skips. */
  private printOutcome(report: RunReport, json: boolean): void {
    if (json) this.printJson(report);
    else this.printSummary(report);
    // A skip for a missing field or an error is most likely a mistake: say so, --json or not.
    for (const line of skipWarnings(skippedOf(report))) this.note(line);
  }

  private printSummary(report: RunReport): void {
    const counts: Partial<Record<TaskStatus, number>> = {};
    for (const task of report.tasks) counts[task.status] = (counts[task.status] ?? 0) + 1;
    this.note(`workflow "${report.name}" ${report.workflow_id}: ${report.status} (${formatCounts(counts)})`);
    const failed = report.tasks
      .filter((t) => t.status === 'failed')
      .map((t) => ({ name: t.name, attemptNo: t.attempt_no, error: t.error }));
    for (const line of failureLines(failed, { limit: FAILED_SHOWN, more: '--json lists every task' })) this.note(line);
    // Skips that deserve a warning are said once, as warnings.
    const skipped = skippedOf(report).filter((s) => !s.warning);
    for (const line of skipLines(skipped, { prefix: '  skipped: ', limit: SKIPPED_SHOWN, more: '--json lists every task' }))
      this.note(line);
  }
}

function skippedOf(report: RunReport): SkippedTask[] {
  return report.tasks.filter((t) => t.status === 'skipped').map((t) => skippedTask(t.name, t.skip_reason));
}

/** The live state of one `workflow run`: interruption, fatal errors of the local services, watching. */
class RunSession {
  interrupted = false;
  failure: Error | null = null;
  /** Set once everything is being stopped on purpose: services ending then are not failures. */
  closing = false;
  /** The runtime last read, for the task events (--verbose) and the retries waiting for their delay. */
  private last: WorkflowRuntime | null = null;
  /** Retries waiting for their delay at the last runtime read, by task name: when each is due (ms). */
  private waiting = new Map<string, number>();
  private readonly wake = new AbortController();
  private signals = 0;
  /** Set while `--linger` waits: the next signal ends the wait (it interrupts nothing). */
  private endLinger: (() => void) | null = null;
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.endLinger !== null) {
      this.out.problem(`${signal} received: stopping the dashboard`);
      const end = this.endLinger;
      this.endLinger = null;
      end();
      return;
    }
    this.signals++;
    if (this.signals === 1) {
      this.out.problem(`${signal} received: cancelling the workflow and stopping (press Ctrl-C again to stop at once)`);
    } else {
      this.out.problem(`${signal} received again: stopping at once`);
    }
    this.interrupted = true;
    this.wake.abort();
  };

  constructor(
    private readonly progress: ProgressReporter,
    private readonly out: RunOutput,
  ) {}

  installSignalHandlers(): void {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  removeSignalHandlers(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }

  /** Waits for Ctrl-C or SIGTERM (`--linger`), which then stop everything without changing the exit code. */
  linger(): Promise<void> {
    return new Promise((resolve) => (this.endLinger = resolve));
  }

  /** Records a fatal error of a local service and stops watching. */
  fail(error: Error): void {
    if (this.closing) return;
    this.failure ??= error;
    this.wake.abort();
  }

  checkInterrupted(): void {
    if (this.interrupted) throw new ReportedFailure('interrupted');
    if (this.failure !== null) throw this.failure;
  }

  watchCoordinator(coordinator: Coordinator): void {
    coordinator.run().then(
      () => {
        if (!this.interrupted) this.fail(new Error('the local coordinator stopped'));
      },
      (error: unknown) => this.fail(error instanceof Error ? error : new Error(String(error))),
    );
  }

  watchWorker(worker: Worker, queue: string): void {
    worker.run().then(
      () => undefined,
      (error: unknown) => this.fail(new Error(`the local worker on ${queue} stopped: ${errorLine(error)}`)),
    );
  }

  /**
   * Follows the workflow until it ends, Ctrl-C, or a local service fails; returns its runtime when
   * it ended (else the last one read). Each poll reads the index row — status and task counts, one
   * small read whatever the workflow's size — and the runtime itself only once the row says the
   * workflow ended, or every {@link FULL_READ_EVERY}th poll in case a row write lags behind (and to
   * see retries waiting for their delay). With --verbose the runtime is read at every poll, for
   * its task events.
   */
  async watch(deployment: Deployment, workflowId: string, definition: WorkflowDefinition): Promise<WorkflowRuntime | null> {
    let runtime: WorkflowRuntime | null = null;
    let readErrors = 0;
    const started = Date.now();
    let warned = false;
    const everyPoll = this.out.verbosity === 'verbose';
    const merges = definition.tasks.filter((t) => isMergeNode(t.name, t.kwargs)).length;
    for (let poll = 1; !this.wake.signal.aborted; poll++) {
      try {
        const summary = await deployment.store.getWorkflow(workflowId);
        if (summary !== null) {
          if (!warned && summary.status === 'pending' && Date.now() - started > NOT_ACTIVATED_WARNING_IN_MS) {
            warned = true;
            this.out.problem(
              `the workflow is still not activated after ${NOT_ACTIVATED_WARNING_IN_MS / 1000} s: is a coordinator running for ${deployment.target}? (jobq workflow doctor)`,
            );
          }
        }
        const full = everyPoll || summary === null || isTerminalWorkflowStatus(summary.status) || poll % FULL_READ_EVERY === 0;
        const loaded = full ? await deployment.store.load(workflowId) : null;
        if (loaded !== null) this.seen(loaded.runtime);
        if (loaded !== null && (everyPoll || summary === null || isTerminalWorkflowStatus(loaded.runtime.status))) {
          this.progress.update(progressLine(definition, loaded.runtime, this.waitingNow()));
        } else if (summary !== null) {
          this.progress.update(summaryLine(definition, summary, merges, this.waitingNow()));
        }
        if (loaded !== null) {
          runtime = loaded.runtime;
          if (isTerminalWorkflowStatus(runtime.status)) return runtime;
        }
        readErrors = 0;
      } catch (error) {
        readErrors++;
        if (readErrors >= 5) throw error;
        this.out.problem(`could not read the workflow (will retry): ${errorLine(error)}`);
      }
      await sleep(POLL_INTERVAL_IN_MS, undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
    if (this.interrupted) return this.cancel(deployment, workflowId, definition, runtime);
    return runtime;
  }

  private seen(runtime: WorkflowRuntime): void {
    const now = Date.now();
    for (const line of taskEvents(this.last, runtime, now)) this.out.event(line);
    this.last = runtime;
    this.waiting = waitingRetries(runtime, now);
  }

  /** Retries still waiting for their delay, as of the last runtime read (one due since then runs, or soon will). */
  private waitingNow(): number {
    const now = Date.now();
    let n = 0;
    for (const due of this.waiting.values()) if (due > now) n++;
    return n;
  }

  /** Ctrl-C: requests a cancel and, unless interrupted twice, waits a little for it to settle. */
  private async cancel(
    deployment: Deployment,
    workflowId: string,
    definition: WorkflowDefinition,
    last: WorkflowRuntime | null,
  ): Promise<WorkflowRuntime | null> {
    let runtime = last;
    const budget = AbortSignal.timeout(CANCEL_SETTLE_IN_MS);
    try {
      await deployment.client.cancel(workflowId, { abortSignal: budget });
    } catch (error) {
      this.out.problem(`could not request the cancel: ${errorLine(error)}`);
      return runtime;
    }
    while (!budget.aborted && this.signals < 2) {
      try {
        const loaded = await deployment.store.load(workflowId, { abortSignal: budget });
        if (loaded !== null) {
          runtime = loaded.runtime;
          this.seen(runtime);
          this.progress.update(progressLine(definition, runtime, this.waitingNow()));
          if (isTerminalWorkflowStatus(runtime.status)) break;
        }
      } catch {
        break;
      }
      await sleep(POLL_INTERVAL_IN_MS);
    }
    return runtime;
  }
}

/** Task counts by status, merge nodes left out. */
function countTasks(definition: WorkflowDefinition, runtime: WorkflowRuntime): Partial<Record<TaskStatus, number>> {
  const counts: Partial<Record<TaskStatus, number>> = {};
  for (const task of definition.tasks) {
    if (isMergeNode(task.name, task.kwargs)) continue;
    const status = taskStatus(runtime, task.name);
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

/**
 * The progress line from the index row: its counts include the merge nodes, if any (said so);
 * `waiting` retries (known from the last runtime read) are shown apart from the running tasks.
 */
function summaryLine(definition: WorkflowDefinition, summary: WorkflowSummary, merges: number, waiting: number): string {
  const counts = Object.fromEntries(Object.entries(summary.counts).filter(([, n]) => n > 0)) as Partial<Record<TaskStatus, number>>;
  return `${definition.name}: ${summary.status} — ${countsWithWaiting(counts, waiting)}${merges > 0 ? ` (counting ${merges} merge node${merges === 1 ? '' : 's'})` : ''}`;
}

function progressLine(definition: WorkflowDefinition, runtime: WorkflowRuntime, waiting: number): string {
  return `${definition.name}: ${runtime.status} — ${countsWithWaiting(countTasks(definition, runtime), waiting)}`;
}

/** The `--json` document: every task but merge nodes, in definition order, outputs decoded. */
async function buildReport(
  deployment: Deployment,
  workflowId: string,
  definition: WorkflowDefinition,
  last: WorkflowRuntime | null,
  note: (line: string) => void,
): Promise<RunReport> {
  let runtime = last;
  if (runtime === null) runtime = (await deployment.store.load(workflowId))?.runtime ?? null;
  const outputs = await readTaskOutputs(deployment.outputs, definition, runtime, note);
  const tasks: RunTaskReport[] = [];
  for (const task of definition.tasks) {
    if (isMergeNode(task.name, task.kwargs)) continue;
    const state = runtime === null ? undefined : taskState(runtime, task.name);
    const output = outputs.get(task.name) ?? null;
    tasks.push({
      name: task.name,
      status: state?.status ?? 'pending',
      attempt_no: state?.attemptNo ?? 0,
      queue: taskQueue(definition, task),
      error: state?.error ?? null,
      skip_reason: state?.status === 'skipped' ? state.error : null,
      output,
    });
  }
  return { workflow_id: workflowId, name: definition.name, status: runtime?.status ?? 'pending', tasks };
}
