import { afterEach } from '@jest/globals';
import { isMergeNode, isTerminalWorkflowStatus, shardOf, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeWorkflowTask, expandUpstreamRefs, type Completion, type WorkflowTaskInfo } from '@jobq/dag-core/wire';
import { MemoryOutputStore, MemoryOwnershipDeployment, MemoryOwnershipStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import {
  shardCompletionQueue,
  VirtualClock,
  type Clock,
  type CompletionRoute,
  type CoordinatorLease,
  type Instruments,
  type ShardCount,
  type TaskQueue,
  type WorkflowStore,
  type WorkerRegistry,
} from '@jobq/ports';
import {
  Worker,
  cancelCheckFromStore,
  publishCompletion,
  type ProcessOutcome,
  type Processor,
  type TaskContext,
  type WorkerSummary,
} from '@jobq/worker';
import { Coordinator, WorkflowClient, type CoordinatorOptions, type CoordinatorShard, type SubmitOptions } from '../index';
import { taskNameOf, WrappedQueue, type StackSeams } from './wrappers';

// The in-memory harness of the coordinator's logic tests: the memory store, output store and queues,
// the real Coordinator and the real Worker loop, all on one VirtualClock, with workers that run a
// task by interpreting its `cmd` in process (no child process, no file). Everything moves in virtual
// time only, so a test that waits for a lock to end, a sweep or a back-off waits for nothing, and a
// run is the same every time.

/** A task as a simulated worker sees it. */
export interface SimulatedTask {
  workflowId: string;
  taskName: string;
  attemptNo: number;
  /** The user's kwargs (`cmd`, …). */
  kwargs: Record<string, unknown>;
  /** Parent → output ref, as `$JOBQ_WORKFLOW_UPSTREAM_REFS` would hold them. */
  upstream: Record<string, string | null>;
  timeoutS: number | null;
}

/** How a simulated run ended: `stopped` when its signal fired (a lost lock, a shutdown, a cancel). */
export type SimulatedResult = { success: true; output: string | null } | { success: false; error: string } | { stopped: true };

/** Runs a task in process; it must honour `signal` and sleep on `clock` only. */
export type SimulatedRun = (task: SimulatedTask, context: { signal: AbortSignal; clock: Clock }) => Promise<SimulatedResult>;

/**
 * The default {@link SimulatedRun}: `cmd` is a list of steps separated by `;` —
 * `true` (or `:`), `sleep S` (S seconds of virtual time), `exit N`, `out JSON` (the output),
 * `fail-before K` (exit 1 while the attempt is below K). A task with `timeout_s` is stopped and
 * failed after it, as the worker does.
 */
export const scriptedRun: SimulatedRun = async (task, { signal, clock }) => {
  const cmd = typeof task.kwargs.cmd === 'string' ? task.kwargs.cmd : '';
  const steps = async (): Promise<SimulatedResult> => {
    let output: string | null = null;
    for (const step of cmd.split(';').map((s) => s.trim())) {
      const [verb = '', ...rest] = step.split(' ');
      const arg = rest.join(' ');
      if (verb === '' || verb === 'true' || verb === ':') continue;
      if (verb === 'sleep') {
        await clock.sleep(Number(arg) * 1000, signal);
        if (signal.aborted) return { stopped: true };
      } else if (verb === 'exit') {
        if (Number(arg) !== 0) return { success: false, error: `exit code ${arg}` };
        return { success: true, output };
      } else if (verb === 'out') {
        output = arg;
      } else if (verb === 'fail-before') {
        if (task.attemptNo < Number(arg)) return { success: false, error: 'exit code 1' };
      } else {
        throw new Error(`simulated task: unknown step "${step}"`);
      }
    }
    return { success: true, output };
  };
  if (task.timeoutS === null) return steps();
  const limit = new AbortController();
  const timedOut = clock
    .sleep(task.timeoutS * 1000, limit.signal)
    .then((): SimulatedResult | null => (limit.signal.aborted ? null : { success: false, error: `timed out after ${task.timeoutS}s` }));
  try {
    const first = await Promise.race([steps(), timedOut]);
    return first ?? { stopped: true };
  } finally {
    limit.abort();
  }
};

/** Options of {@link SimulatedWorkflowProcessor}. */
export interface SimulatedProcessorOptions {
  outputs: MemoryOutputStore;
  completions: TaskQueue;
  clock: Clock;
  isCancelled: (workflowId: string) => Promise<boolean>;
  run: SimulatedRun;
  /** Cancel-flag poll while a task runs (virtual ms). */
  cancelPollIntervalInMs: number;
  completionSendMaxAttempts: number;
  /** Called as each run starts (`workflowId/taskName`). */
  onRun?: (key: string) => void;
  /** Routes each completion to its shard's queue (default: all to `completions`). */
  route?: CompletionRoute;
}

/** A workflow processor that runs tasks in process (see {@link SimulatedRun}) and reports them as the real one does. */
export class SimulatedWorkflowProcessor implements Processor {
  readonly name = 'simulated';

  constructor(private readonly options: SimulatedProcessorOptions) {}

  accepts(kwargs: Readonly<Record<string, unknown>>): boolean {
    return Object.hasOwn(kwargs, '__workflow_id') && Object.hasOwn(kwargs, '__workflow_task');
  }

  async process(context: TaskContext): Promise<ProcessOutcome> {
    const decoded = decodeWorkflowTask(context.envelope.kwargs);
    if (!decoded.ok || decoded.value === null) return { kind: 'failed', error: decoded.ok ? 'not a workflow task' : decoded.error };
    const info = decoded.value;
    const o = this.options;
    const finish = (success: boolean, outputRef: string | null, error: string | null, cancelled = false) =>
      this.publish(context, {
        workflowId: info.workflowId,
        taskName: info.taskName,
        attemptNo: info.attemptNo,
        success,
        outputRef,
        error,
        ...(cancelled ? { cancelled } : {}),
      });
    if (isMergeNode(info.taskName, context.envelope.kwargs)) return finish(true, null, null);
    if (await o.isCancelled(info.workflowId)) return finish(false, null, 'workflow cancelled', true);
    if (context.signal.aborted) return { kind: 'leave', reason: `not started: ${String(context.signal.reason)}` };
    const upstream = await this.upstreamOf(info);
    o.onRun?.(`${info.workflowId}/${info.taskName}`);

    // Stopped by the context (lock lost, shutdown) or by a cancel seen while it runs.
    const stop = new AbortController();
    const onAbort = () => stop.abort(context.signal.reason);
    context.signal.addEventListener('abort', onAbort, { once: true });
    let cancelled = false;
    const polling = (async () => {
      while (!stop.signal.aborted) {
        await o.clock.sleep(o.cancelPollIntervalInMs, stop.signal);
        if (stop.signal.aborted) return;
        if (await o.isCancelled(info.workflowId).catch(() => false)) {
          cancelled = true;
          stop.abort('cancelled');
        }
      }
    })();
    let result: SimulatedResult;
    try {
      result = await o.run(
        {
          workflowId: info.workflowId,
          taskName: info.taskName,
          attemptNo: info.attemptNo,
          kwargs: info.userKwargs,
          upstream,
          timeoutS: info.timeoutS,
        },
        { signal: stop.signal, clock: o.clock },
      );
    } finally {
      stop.abort('finished');
      context.signal.removeEventListener('abort', onAbort);
      await polling;
    }
    if ('stopped' in result) {
      if (cancelled) return finish(false, null, 'stopped: workflow cancelled', true);
      return { kind: 'leave', reason: `stopped: ${String(context.signal.reason)}` };
    }
    if (!result.success) return finish(false, null, result.error);
    const stored = await o.outputs.putOutput(info.workflowId, info.taskName, info.attemptNo, result.output ?? '');
    return finish(true, stored.ref, null);
  }

  async giveUp(context: TaskContext, reason: string): Promise<void> {
    const decoded = decodeWorkflowTask(context.envelope.kwargs);
    if (!decoded.ok || decoded.value === null) return;
    const info = decoded.value;
    await this.publish(context, {
      workflowId: info.workflowId,
      taskName: info.taskName,
      attemptNo: info.attemptNo,
      success: false,
      outputRef: null,
      error: reason,
    });
  }

  private async upstreamOf(info: WorkflowTaskInfo): Promise<Record<string, string | null>> {
    const compact = info.upstreamBlob !== null ? await this.options.outputs.getUpstreamOverflow(info.upstreamBlob) : info.upstream;
    return compact === null ? {} : expandUpstreamRefs(info.workflowId, compact, this.options.outputs.outputsContainer);
  }

  private async publish(context: TaskContext, completion: Completion): Promise<ProcessOutcome> {
    const queue = this.options.route ? await this.options.route.queueFor(completion.workflowId) : this.options.completions;
    const sent = await publishCompletion(queue, completion, {
      maxAttempts: this.options.completionSendMaxAttempts,
      backoff: { initialInMs: 20, maxInMs: 100 },
      clock: this.options.clock,
      log: (line) => context.log(line),
      ...(context.trace === undefined ? {} : { trace: context.trace }),
    });
    if (sent.sent) return { kind: 'done' };
    return {
      kind: 'leave',
      reason: `the completion of task "${completion.taskName}" could not be sent after ${sent.attempts} attempt(s): ${sent.error}; the message is left for redelivery`,
    };
  }
}

/** Options of {@link MemoryStacks.open}. */
export interface MemoryStackOptions extends StackSeams<MemoryWorkflowStore> {
  /** The clock of everything (default a new `VirtualClock`). */
  clock?: VirtualClock;
  /** Slots of the worker started with the stack (default 4). */
  workers?: number;
  coordinator?: CoordinatorOptions;
  /** Start the coordinator at once (default true). */
  start?: boolean;
  /** Lock of the completion queue (default 2 000 ms). */
  completionLockInMs?: number;
  /** Lock of the task queue (default 2 000 ms). */
  taskLockInMs?: number;
  /** How the workers run a task (default {@link scriptedRun}). */
  run?: SimulatedRun;
  /** Routes the workers' completions by shard (default: all to the completion queue). */
  workerRoute?: CompletionRoute;
  /** Where the workers record their metrics (default nowhere). */
  workerInstruments?: Instruments;
  /** The worker heartbeats the coordinator prunes (default none). */
  workerRegistry?: WorkerRegistry;
  /**
   * The stack is shard `index` of a deployment of `count` shards (docs/sharding.md): its coordinators
   * are that shard's runners, each claiming the shard through a store of {@link MemoryStack.ownership}
   * (open them with {@link MemoryStack.openCoordinator}); the completion queue is the shard's; a submit
   * without an id gets one in the shard; and a workflow of another shard is placed in the store
   * ({@link MemoryStack.foreignId}, its wake-up on its own shard's queue). Default: no shards.
   */
  shard?: { index: number; count: ShardCount };
  /** Wraps the lease the coordinators hold: the store's coordinator lease, or the shard claim's. */
  coordinatorLease?: (lease: CoordinatorLease) => CoordinatorLease;
}

/** One listing a coordinator made through the store (see {@link MemoryStack.listings}). */
export interface MemoryListing {
  method: 'listWorkflows' | 'listRequests' | 'listReruns';
  filter: Record<string, unknown> | undefined;
  /** The index partitions it reads: the shard filter's (`p mod count = index`), else all 16. */
  partitions: number[];
  /** The workflow ids of the items it returned. */
  ids: string[];
}

/** Ports of one coordinator that differ from the stack's (see {@link MemoryStack.newCoordinator}). */
export interface MemoryCoordinatorPorts {
  store?: (store: MemoryWorkflowStore) => WorkflowStore;
  completions?: (queue: TaskQueue) => TaskQueue;
  /** Runs as this shard's runner (its lease from the claim). */
  shard?: CoordinatorShard;
  /** Wraps the lease it holds (instead of the stack's `coordinatorLease`). */
  lease?: (lease: CoordinatorLease) => CoordinatorLease;
}

/** One running {@link Worker} of a stack. */
export interface MemoryWorkerHandle {
  readonly worker: Worker;
  readonly done: Promise<WorkerSummary>;
  /** Stops it (default: at once) and waits for `run()`. */
  stop(gracePeriodInMs?: number): Promise<WorkerSummary>;
}

/** One deployment's worth of engine, in memory, on a virtual clock. */
export interface MemoryStack {
  clock: VirtualClock;
  store: MemoryWorkflowStore;
  outputs: MemoryOutputStore;
  completions: MemoryTaskQueue;
  taskQueue: MemoryTaskQueue;
  client: WorkflowClient;
  coordinator: Coordinator;
  logs: string[];
  workerLogs: string[];
  /** Task messages the coordinator pushed (each send of each message), by task name. */
  pushed: Map<string, number>;
  /** Simulated runs started, by `workflowId/taskName`. */
  runs: Map<string, number>;
  worker: MemoryWorkerHandle;
  newCoordinator(options?: CoordinatorOptions, ports?: MemoryCoordinatorPorts): Coordinator;
  /**
   * {@link newCoordinator}, or in a shard stack the shard's runner: it claims the shard first
   * (`breakLease` breaks the shard's lease first, the shard's equivalent of `--break-lease`).
   */
  openCoordinator(options?: CoordinatorOptions, ports?: MemoryCoordinatorPorts): Promise<Coordinator>;
  /** The shard of a shard stack (see {@link MemoryStackOptions.shard}); null otherwise. */
  shard: { index: number; count: ShardCount } | null;
  /** The shard ownership of a shard stack; null otherwise. */
  ownership: MemoryOwnershipDeployment | null;
  /** A workflow of another shard, in the same store (a shard stack's; null otherwise). */
  foreignId: string | null;
  /** The queue of {@link foreignId}'s shard, holding its wake-up (a shard stack's; null otherwise). */
  foreignCompletions: MemoryTaskQueue | null;
  /** Every listing the coordinators made through the store, in order. */
  listings: MemoryListing[];
  /** Every workflow id the coordinators' store calls named or got back. */
  touched: Set<string>;
  startWorker(numWorkers?: number): MemoryWorkerHandle;
  submit(definition: object, options?: SubmitOptions): Promise<string>;
  /** Runs virtual time until `until()` holds; throws with `describe()` (and the coordinator log) after `withinMs` of virtual time (default 10 min). */
  until(until: () => boolean | Promise<boolean>, describe?: () => string, withinMs?: number): Promise<void>;
  waitFor(workflowId: string, until: (runtime: WorkflowRuntime) => boolean, withinMs?: number): Promise<WorkflowRuntime>;
  run(definition: object, options?: SubmitOptions, withinMs?: number): Promise<WorkflowRuntime>;
  /** Runs of one task (summed over workflows unless `workflowId` is given). */
  runCount(taskName: string, workflowId?: string): number;
}

/** Opens memory stacks for the tests of a file and stops them after each test. */
export function useMemoryStacks(): { open(options?: MemoryStackOptions): Promise<MemoryStack> } {
  let disposals: Array<() => Promise<void>> = [];
  afterEach(async () => {
    const list = disposals.reverse();
    disposals = [];
    for (const dispose of list) await dispose().catch(() => undefined);
  });
  return { open: (options) => openMemoryStack(options, (fn) => disposals.push(fn)) };
}

async function openMemoryStack(options: MemoryStackOptions = {}, dispose: (fn: () => Promise<void>) => void): Promise<MemoryStack> {
  const clock = options.clock ?? new VirtualClock();
  const shard = options.shard ?? null;
  const outputs = new MemoryOutputStore({ outputsContainer: 'mem-outputs', workflowsContainer: 'mem-workflows' });
  // A purge deletes the overflow blobs with the runtime, as the Azure store deletes `upstream/{wf}/`.
  const store = new MemoryWorkflowStore({ stateBlobs: outputs });
  const completions = new MemoryTaskQueue({
    name: shardCompletionQueue('mem-workflow-completions', shard?.index ?? 0),
    lockDurationInMs: options.completionLockInMs ?? 2_000,
    clock,
  });
  const taskQueue = new MemoryTaskQueue({ name: 'mem-default', lockDurationInMs: options.taskLockInMs ?? 2_000, clock });
  const logs: string[] = [];
  const workerLogs: string[] = [];
  const pushed = new Map<string, number>();
  const runs = new Map<string, number>();
  const client = new WorkflowClient({ store, completions, outputsContainer: outputs.outputsContainer, now: () => new Date(clock.now()) });

  const workerCompletions = options.workerCompletions ? options.workerCompletions(completions) : completions;
  const isCancelled = cancelCheckFromStore(store);
  const startWorker = (numWorkers = options.workers ?? 4): MemoryWorkerHandle => {
    const worker = new Worker({
      queue: taskQueue,
      numWorkers,
      receiveWaitInMs: 50,
      maxIdleBackoffInMs: 100,
      gracePeriodInMs: 0,
      clock,
      ...(options.workerInstruments ? { instruments: options.workerInstruments } : {}),
      log: (line) => workerLogs.push(line),
      processors: [
        new SimulatedWorkflowProcessor({
          outputs,
          completions: workerCompletions,
          clock,
          isCancelled,
          run: options.run ?? scriptedRun,
          cancelPollIntervalInMs: options.workerCancelPollIntervalInMs ?? 200,
          completionSendMaxAttempts: options.completionSendMaxAttempts ?? 5,
          onRun: (key) => runs.set(key, (runs.get(key) ?? 0) + 1),
          ...(options.workerRoute ? { route: options.workerRoute } : {}),
        }),
      ],
    });
    const done = worker.run();
    void done.catch(() => undefined);
    const handle: MemoryWorkerHandle = {
      worker,
      done,
      stop: async (gracePeriodInMs = 0) => {
        await worker.stop({ gracePeriodInMs });
        return done;
      },
    };
    dispose(async () => {
      await handle.stop();
    });
    return handle;
  };
  const worker = startWorker();

  const counting = new WrappedQueue(taskQueue, {
    send: async (messages, send) => {
      await send();
      for (const m of messages) {
        const name = taskNameOf(m.body) ?? '?';
        pushed.set(name, (pushed.get(name) ?? 0) + 1);
      }
    },
  });
  const coordinatorTasks = options.coordinatorTasks ? options.coordinatorTasks(counting) : counting;
  const coordinatorStore = options.coordinatorStore ? options.coordinatorStore(store) : store;
  const coordinatorCompletions = options.coordinatorCompletions ? options.coordinatorCompletions(completions) : completions;
  const listings: MemoryListing[] = [];
  const touched = new Set<string>();
  const recorded = (inner: WorkflowStore, lease: ((lease: CoordinatorLease) => CoordinatorLease) | undefined) =>
    recordingStore(inner, { listings, touched, lease });
  const newCoordinator = (extra: CoordinatorOptions = {}, ports: MemoryCoordinatorPorts = {}) => {
    if (shard !== null && ports.shard === undefined) throw new Error('a shard stack opens its coordinators with openCoordinator()');
    const coordinator = new Coordinator({
      store: recorded(ports.store ? ports.store(store) : coordinatorStore, ports.lease ?? options.coordinatorLease),
      completions: ports.completions ? ports.completions(completions) : coordinatorCompletions,
      outputs,
      ...(options.workerRegistry ? { workers: options.workerRegistry } : {}),
      ...(ports.shard ? { shard: ports.shard } : {}),
      queues: (spec) => {
        if (spec !== 'default') throw new Error(`no queue for spec "${spec}"`);
        return coordinatorTasks;
      },
      options: {
        receiveWaitInMs: 100,
        idleSleepInMs: 50,
        cancelPollIntervalInMs: 200,
        statsIntervalInMs: 500,
        log: (line) => logs.push(line),
        ...options.coordinator,
        ...extra,
        clock,
      },
    });
    dispose(() => coordinator.stop());
    return coordinator;
  };
  // Shard 0's lease is the store's coordinator lease, as on Azure (docs/sharding.md#names).
  const ownership = shard === null ? null : new MemoryOwnershipDeployment(clock, { shards: shard.count, workflows: store });
  let members = 0;
  const openCoordinator = async (extra: CoordinatorOptions = {}, ports: MemoryCoordinatorPorts = {}): Promise<Coordinator> => {
    if (shard === null || ownership === null) return newCoordinator(extra, ports);
    const member = new MemoryOwnershipStore({ deployment: ownership });
    if (extra.breakLease === true) await member.breakLease(shard.index);
    const claim = await member.claim(shard.index, `member-${++members}`);
    if (claim === null) throw new Error(`shard ${shard.index}'s lease is held: stop its runner, or break it`);
    const wrap = ports.lease ?? options.coordinatorLease;
    const held = wrap === undefined ? claim : { ...claim, lease: wrap(claim.lease) };
    return newCoordinator(extra, { ...ports, shard: { index: shard.index, count: shard.count, claim: held } });
  };
  const coordinator = await openCoordinator();
  if (options.start ?? true) await coordinator.start();

  const until = async (check: () => boolean | Promise<boolean>, describe: () => string = () => '', withinMs = 600_000) => {
    await clock.runUntil(check, () => `${describe()}\n${logs.slice(-40).join('\n')}`, { withinMs });
  };
  const waitFor = async (workflowId: string, check: (runtime: WorkflowRuntime) => boolean, withinMs?: number) => {
    let last: WorkflowRuntime | undefined;
    await until(
      async () => {
        last = (await store.load(workflowId))?.runtime;
        return last !== undefined && check(last);
      },
      () => `${workflowId}: ${JSON.stringify(last?.tasks)}`,
      withinMs,
    );
    if (!last) throw new Error('unreachable');
    return last;
  };
  let nextId = 0;
  /** A new workflow id in shard `k` (of the stack's count), found by trying `wf-{k}-{i}` in turn. */
  const idInShard = (k: number): string => {
    for (;;) {
      const id = `wf-${k}-${nextId++}`;
      if (shard === null || shardOf(id, shard.count) === k) return id;
    }
  };
  const submit = async (definition: object, submitOptions: SubmitOptions = {}) => {
    const idOptions = shard === null || submitOptions.id !== undefined ? {} : { id: idInShard(shard.index) };
    const { workflowId } = await client.submit(
      { text: JSON.stringify(definition), filename: 'flow.json' },
      { ...submitOptions, ...idOptions },
    );
    return workflowId;
  };
  // A shard stack's workflow of the next shard, submitted as its client would: its wake-up on its own shard's queue.
  let foreignId: string | null = null;
  let foreignCompletions: MemoryTaskQueue | null = null;
  if (shard !== null) {
    const other = (shard.index + 1) % shard.count;
    foreignCompletions = new MemoryTaskQueue({ name: shardCompletionQueue('mem-workflow-completions', other), clock });
    const foreignClient = new WorkflowClient({
      store,
      completions: foreignCompletions,
      outputsContainer: outputs.outputsContainer,
      now: () => new Date(clock.now()),
    });
    const definition = { name: 'foreign', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] };
    ({ workflowId: foreignId } = await foreignClient.submit(
      { text: JSON.stringify(definition), filename: 'flow.json' },
      { id: idInShard(other) },
    ));
  }
  const run = async (definition: object, submitOptions: SubmitOptions = {}, withinMs?: number) =>
    waitFor(await submit(definition, submitOptions), (r) => isTerminalWorkflowStatus(r.status), withinMs);
  const runCount = (taskName: string, workflowId?: string) => {
    let n = 0;
    for (const [key, count] of runs)
      if (workflowId === undefined ? key.endsWith(`/${taskName}`) : key === `${workflowId}/${taskName}`) n += count;
    return n;
  };
  return {
    clock,
    store,
    outputs,
    completions,
    taskQueue,
    client,
    coordinator,
    logs,
    workerLogs,
    pushed,
    runs,
    worker,
    newCoordinator,
    openCoordinator,
    shard,
    ownership,
    foreignId,
    foreignCompletions,
    listings,
    touched,
    startWorker,
    submit,
    until,
    waitFor,
    run,
    runCount,
  };
}

const LISTINGS = new Set(['listWorkflows', 'listRequests', 'listReruns']);

/** The index partitions a listing of `filter` reads: its shard's, or all 16. */
function partitionsRead(filter: Record<string, unknown> | undefined): number[] {
  const shard = filter?.shard as { index: number; count: number } | undefined;
  const all = Array.from({ length: 16 }, (_, p) => p);
  return shard === undefined ? all : all.filter((p) => p % shard.count === shard.index);
}

/** The workflow ids a store call names: string arguments and the `workflowId` of object arguments. */
function idsIn(values: readonly unknown[]): string[] {
  const ids: string[] = [];
  for (const value of values) {
    if (typeof value === 'string') ids.push(value);
    else if (typeof value === 'object' && value !== null && typeof (value as { workflowId?: unknown }).workflowId === 'string')
      ids.push((value as { workflowId: string }).workflowId);
  }
  return ids;
}

/**
 * The store a coordinator of the stack writes through: it records each listing (its filter, the
 * partitions it reads, the ids it returns) and every workflow id the calls name or get back, and
 * wraps the coordinator lease it acquires with `lease`.
 */
function recordingStore(
  inner: WorkflowStore,
  record: { listings: MemoryListing[]; touched: Set<string>; lease: ((lease: CoordinatorLease) => CoordinatorLease) | undefined },
): WorkflowStore {
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      const call = (args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      if (key === 'acquireLease' && record.lease !== undefined) {
        const wrap = record.lease;
        return async (...args: unknown[]) => wrap(await (call(args) as Promise<CoordinatorLease>));
      }
      return (...args: unknown[]) => {
        for (const id of idsIn(args)) record.touched.add(id);
        const result = call(args);
        if (!LISTINGS.has(key)) return result;
        const filter = args[0] as Record<string, unknown> | undefined;
        const listing: MemoryListing = {
          method: key as MemoryListing['method'],
          filter,
          partitions: partitionsRead(filter),
          ids: [],
        };
        record.listings.push(listing);
        return (result as Promise<{ items: { workflowId: string }[] }>).then((page) => {
          listing.ids = page.items.map((item) => item.workflowId);
          for (const id of listing.ids) record.touched.add(id);
          return page;
        });
      };
    },
  });
}
