import { describe, expect, it } from '@jest/globals';
import {
  createRuntime,
  isTerminalWorkflowStatus,
  parseWorkflow,
  reduce,
  type Effect,
  type DispatchEffect,
  type WorkflowDefinition,
  type WorkflowRuntime,
} from '@jobq/dag-core';
import { decodeCoordinatorMessage, encodeCompletion, encodeEnvelope } from '@jobq/dag-core/wire';
import { JobqError } from '@jobq/ports';
import { runShell } from '@jobq/worker';
import { MAX_PIPELINE_DEPTH, type Coordinator, type CoordinatorCounters } from './index';
import { failureStack, useHarness, waitUntil, wrapStore, WrappedQueue, type WorkerHandle } from './test-helpers/failure-harness';

// Soak: many small random workflows run to the end while workers are killed, the coordinator is
// restarted (sometimes by a second one breaking its lease), task and completion messages are
// delivered twice, flushes meet 412s, and flushes or acks are lost. Each task's outcome is a pure
// function of its name and attempt, so the final runtime must be exactly what the reducer predicts
// when fed one completion per dispatch, and no attempt may have been applied twice.

const h = useHarness();

/** Workflows in the soak (the bound: the test ends when all of them are terminal). */
const WORKFLOWS = 200;
/** Workflows submitted at once (submitMany); the next wave goes when fewer than WAVE / 2 are active. */
const WAVE = 25;
const SEED = 0x5eed2026;
/** A disruption (worker kill, coordinator restart or takeover) every ~this many applied completions. */
const CHAOS_EVERY = 30;
const CHAOS_ROTATION = ['kill-worker', 'restart', 'kill-worker', 'takeover', 'kill-worker', 'restart-breaking'] as const;

/** mulberry32: a small seeded PRNG giving floats in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A task's behaviour is in its name: `t3_ok_v4` succeeds with output {"v":4}; `t1_bad_v0` always
// fails; `t2_flaky2_v7` fails attempt 1 and succeeds (with {"v":7}) from attempt 2 on;
// `t4_throw2_v1` likewise, but its attempt 1 fails inside the worker (the processor throws before
// the command starts, and must still report the attempt). A `_slow` suffix makes it sleep 0.3 s
// first (so that worker kills find tasks running).
interface Behaviour {
  succeedsFrom: number | null;
  value: number;
  slow: boolean;
}

function behaviourOf(taskName: string): Behaviour {
  const m = /^t\d+_(ok|bad|flaky(\d)|throw(\d))_v(\d)(_slow)?$/.exec(taskName);
  if (!m) throw new Error(`not a soak task name: ${taskName}`);
  const value = Number(m[4]);
  const slow = m[5] !== undefined;
  if (m[1] === 'ok') return { succeedsFrom: 1, value, slow };
  if (m[1] === 'bad') return { succeedsFrom: null, value, slow };
  return { succeedsFrom: Number(m[2] ?? m[3]), value, slow };
}

const outputOf = (b: Behaviour) => `{"v":${b.value}}`;
const succeeds = (b: Behaviour, attemptNo: number) => b.succeedsFrom !== null && attemptNo >= b.succeedsFrom;

function commandOf(taskName: string): string {
  const b = behaviourOf(taskName);
  const write = `printf '%s' '${outputOf(b)}' > "$JOBQ_OUTPUT_FILE"`;
  const wait = b.slow ? 'sleep 0.3; ' : '';
  if (b.succeedsFrom === null) return `${wait}exit 1`;
  if (b.succeedsFrom === 1) return `${wait}${write}`;
  return `${wait}if [ "$JOBQ_WORKFLOW_ATTEMPT" -ge ${b.succeedsFrom} ]; then ${write}; else exit 1; fi`;
}

interface RawTask {
  name: string;
  kwargs: { cmd: string };
  depends_on?: string[];
  dep_policy?: string | number;
  num_retries?: number;
  condition?: string;
}

/** A random DAG of 2–6 tasks. */
function randomWorkflow(random: () => number, index: number): object {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const n = 2 + Math.floor(random() * 5);
  const tasks: RawTask[] = [];
  for (let i = 0; i < n; i++) {
    const r = random();
    const kind = r < 0.65 ? 'ok' : r < 0.75 ? 'bad' : r < 0.9 ? `flaky${pick([2, 3])}` : 'throw2';
    const name = `t${i}_${kind}_v${Math.floor(random() * 10)}${random() < 0.25 ? '_slow' : ''}`;
    const task: RawTask = { name, kwargs: { cmd: commandOf(name) } };
    if (kind !== 'ok' || random() < 0.15) task.num_retries = pick([0, 1, 2, 2]);
    if (i > 0 && random() < 0.85) {
      const earlier = tasks.map((t) => t.name).filter(() => random() < 0.5);
      const deps = earlier.length > 0 ? earlier.slice(0, 3) : [tasks[Math.floor(random() * i)]!.name];
      task.depends_on = deps;
      const policy = pick<string | number>(['all', 'all', 'any', 'all_settled', 'n']);
      if (policy === 'n') task.dep_policy = 1 + Math.floor(random() * deps.length);
      else if (policy !== 'all') task.dep_policy = policy;
      // Conditions only where every parent has finished when they are evaluated (all, all_settled):
      // under `any` or N an unfinished parent reads as null and the verdict would depend on timing.
      if ((policy === 'all' || policy === 'all_settled') && random() < 0.35) {
        const parent = pick(deps);
        const k = Math.floor(random() * 10);
        task.condition = random() < 0.5 ? `inputs.${parent}.v >= ${k}` : `inputs.${parent}.v != ${k}`;
      }
    }
    tasks.push(task);
  }
  return { name: `soak-${index}`, result_policy: random() < 0.7 ? 'all_sinks_succeed' : 'all_tasks_succeed', tasks };
}

/** What the pure reducer says the workflow ends as, fed one completion (by behaviour) per dispatch. */
function predict(definition: WorkflowDefinition, workflowId: string): WorkflowRuntime {
  const now = '2026-01-01T00:00:00.000Z';
  let runtime = createRuntime(definition, { workflowId, now, outputsContainer: null });
  const dispatches: DispatchEffect[] = [];
  const take = (effects: readonly Effect[]) => {
    for (const effect of effects) {
      if (effect.type === 'dispatch') dispatches.push(effect);
      else if (effect.type === 'fetch-condition-inputs') throw new Error('inline outputs only: no condition input is read from a blob');
    }
  };
  let step = reduce(runtime, { type: 'activate', now });
  runtime = step.runtime;
  take(step.effects);
  for (let d = dispatches.shift(); d !== undefined; d = dispatches.shift()) {
    const b = behaviourOf(d.taskName);
    const ok = succeeds(b, d.attemptNo);
    step = reduce(runtime, {
      type: 'completion',
      now,
      taskName: d.taskName,
      attemptNo: d.attemptNo,
      success: ok,
      outputRef: ok ? outputOf(b) : null,
      error: ok ? null : 'exit code 1',
    });
    runtime = step.runtime;
    take(step.effects);
  }
  return runtime;
}

/** Attempts a dispatched task needs by its behaviour: 1 to succeed, num_retries + 1 when it never does. */
function attemptsNeeded(taskName: string, numRetries: number): number {
  const b = behaviourOf(taskName);
  const budget = numRetries + 1;
  return b.succeedsFrom === null ? budget : Math.min(b.succeedsFrom, budget);
}

/** `name=status@attempt`, sorted by name. */
const statusesOf = (runtime: WorkflowRuntime) =>
  Object.entries(runtime.tasks)
    .map(([name, t]) => `${name}=${t.status}@${t.attemptNo}`)
    .sort()
    .join(' ');

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** True when `promise` settles within `ms`, false after that. */
async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('Soak', () => {
  it(`${WORKFLOWS} random workflows under worker kills, coordinator restarts and takeovers, duplicate deliveries, 412s and lost flushes/acks end as the reducer predicts`, async () => {
    const random = prng(SEED);
    const chaos = prng(SEED ^ 0xc4a05);
    const faults = {
      workerKills: 0,
      restarts: 0,
      takeovers: 0,
      takeoversNotNoticed: 0,
      leaseLost: 0,
      duplicateTasks: 0,
      duplicateCompletions: 0,
      processorThrows: 0,
      forgedAttempts: 0,
      poisonSent: 0,
      bumps: 0,
      conflicts: 0,
      crashesBeforeFlush: 0,
      lostAcks: 0,
      receiveErrors: 0,
    };
    const s = await failureStack(h, {
      workers: 4,
      leaseRenewIntervalInMs: 200,
      workerCancelPollIntervalInMs: 5_000,
      // `throw2` tasks: the processor itself throws on attempt 1 (as spawn does on a NUL byte).
      runCommand: (options) => {
        if (/_throw\d_/.test(options.env.JOBQ_WORKFLOW_TASK ?? '') && options.env.JOBQ_WORKFLOW_ATTEMPT === '1') {
          faults.processorThrows++;
          throw new Error('injected: the workflow processor threw before the command started');
        }
        return runShell(options);
      },
      // Pipelining at its deepest (pipelineDepth): the most batches in flight, so the faults meet
      // overlapping receives, folds and saves (the default depth is smaller; depth 1 is tested elsewhere).
      coordinator: {
        receiveWaitInMs: 50,
        idleSleepInMs: 50,
        cancelPollIntervalInMs: 1_000,
        statsIntervalInMs: 5_000,
        timeoutSweepIntervalInMs: 2_000,
        pipelineDepth: MAX_PIPELINE_DEPTH,
      },
      coordinatorStore: (store) =>
        wrapStore(store, async (runtime, _etag, save) => {
          const r = chaos();
          if (r < 0.04) {
            // A concurrent writer got there first: the save meets a real 412.
            faults.bumps++;
            const current = await store.load(runtime.workflowId);
            if (current) await store.save(current.runtime, current.etag);
          } else if (r < 0.08) {
            faults.conflicts++;
            throw new JobqError('conflict', 'injected: the runtime blob changed (412)');
          } else if (r < 0.1) {
            faults.crashesBeforeFlush++;
            throw new JobqError('internal', 'injected crash before the flush');
          }
          return save();
        }),
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (_messages, send) => {
            await send();
            if (chaos() < 0.05) {
              faults.duplicateTasks++;
              await send();
            }
          },
        }),
      coordinatorCompletions: (queue) =>
        new WrappedQueue(queue, {
          receive: (_options, receive) => {
            if (chaos() < 0.02) {
              faults.receiveErrors++;
              return Promise.reject(new JobqError('unavailable', 'injected receive failure'));
            }
            return receive();
          },
          complete: (_message, complete) => {
            if (chaos() < 0.03) {
              faults.lostAcks++;
              return Promise.reject(new JobqError('internal', 'injected crash after the flush, before the ack'));
            }
            return complete();
          },
        }),
      workerCompletions: (queue) =>
        new WrappedQueue(queue, {
          send: async (messages, send) => {
            await send();
            const r = chaos();
            if (r < 0.05) {
              faults.duplicateCompletions++;
              await send();
            } else if (r < 0.08) {
              // A forged report of an attempt nobody dispatched: must be ignored, never applied.
              const decoded = decodeCoordinatorMessage(messages[0]!.body);
              if (decoded.kind === 'completion') {
                faults.forgedAttempts++;
                await queue.send({
                  body: encodeCompletion({ ...decoded.completion, attemptNo: Number.MAX_SAFE_INTEGER, success: false, error: 'forged' }),
                });
              }
            } else if (r < 0.1) {
              faults.poisonSent++;
              const engineBlob = encodeEnvelope({
                id: 'wakeup/_coordinator.stats',
                kwargs: { __workflow_wakeup: '_coordinator.stats' },
                numRetries: 0,
              });
              await queue.send({ body: r < 0.09 ? 'not an envelope at all' : engineBlob });
            }
          },
        }),
    });

    const coordinators: Coordinator[] = [s.coordinator];
    let coordinator = s.coordinator;
    /** Settles when the coordinator's loop has ended (stop or lease loss). */
    const ended = new Map<Coordinator, Promise<void>>();
    const watch = (c: Coordinator) =>
      ended.set(
        c,
        c.run().then(
          () => undefined,
          () => {
            faults.leaseLost++;
          },
        ),
      );
    watch(coordinator);
    const workers: WorkerHandle[] = [s.worker, s.startWorker(4)];

    const definitions = new Map<string, object>();
    const ids: string[] = [];
    let finished = false;

    const startedAt = Date.now();
    // One disruption every CHAOS_EVERY applied completions (counted, not timed), in a fixed rotation,
    // at a random moment within that stretch.
    let tasksStoppedByKills = 0;
    const applied = () => coordinators.reduce((n, c) => n + c.counters.completionsApplied, 0);
    const chaosLoop = async () => {
      for (let round = 0; !finished; round++) {
        const due = applied() + Math.ceil(CHAOS_EVERY * (0.5 + chaos()));
        while (!finished && applied() < due) await pause(50);
        if (finished) break;
        const action = CHAOS_ROTATION[round % CHAOS_ROTATION.length]!;
        if (action === 'kill-worker') {
          const k = Math.floor(chaos() * workers.length);
          faults.workerKills++;
          const summary = await workers[k]!.stop(0);
          tasksStoppedByKills += summary.left + summary.abandoned;
          workers[k] = s.startWorker(4);
        } else if (action === 'restart' || action === 'restart-breaking') {
          faults.restarts++;
          await coordinator.stop();
          await ended.get(coordinator);
          coordinator = s.newCoordinator({ breakLease: action === 'restart-breaking' });
          coordinators.push(coordinator);
          await coordinator.start();
          watch(coordinator);
        } else {
          // A second coordinator breaks the running one's lease; the old one stops at its next renewal.
          faults.takeovers++;
          const old = coordinator;
          coordinator = s.newCoordinator({ breakLease: true });
          coordinators.push(coordinator);
          await coordinator.start();
          watch(coordinator);
          if (!(await within(ended.get(old)!, 15_000))) faults.takeoversNotNoticed++;
          await old.stop();
        }
      }
    };

    /** Ids the index shows as not terminal whose runtime is not terminal either. */
    /** Workflows whose index row is not terminal. */
    const listedActive = async (): Promise<string[]> => {
      const listed: string[] = [];
      let continuationToken: string | undefined;
      do {
        const page = await s.store.listWorkflows({
          status: ['pending', 'running', 'cancelling'],
          ...(continuationToken ? { continuationToken } : {}),
        });
        listed.push(...page.items.map((w) => w.workflowId));
        continuationToken = page.continuationToken ?? undefined;
      } while (continuationToken !== undefined);
      return listed;
    };
    /** Workflows whose runtime is not terminal. */
    const active = async (): Promise<string[]> => {
      const still: string[] = [];
      for (const id of await listedActive()) {
        const loaded = await s.store.load(id);
        if (!loaded || !isTerminalWorkflowStatus(loaded.runtime.status)) still.push(id);
      }
      return still;
    };

    const chaosDone = chaosLoop();
    let elapsed: number;
    try {
      for (let first = 0; first < WORKFLOWS; first += WAVE) {
        const items = Array.from({ length: Math.min(WAVE, WORKFLOWS - first) }, (_, k) => {
          const id = `soak-${first + k}`;
          const definition = randomWorkflow(random, first + k);
          definitions.set(id, definition);
          ids.push(id);
          return { text: JSON.stringify(definition), filename: 'flow.json', id };
        });
        const results = await s.client.submitMany(items, { concurrency: 10 });
        expect(results.filter((r) => !r.ok)).toEqual([]);
        if (first + WAVE < WORKFLOWS) {
          await waitUntil(
            async () => (await active()).length < WAVE / 2,
            () => `wave at ${first}: ${JSON.stringify(faults)}`,
            120_000,
          );
        }
      }
      await waitUntil(
        async () => (await active()).length === 0,
        () => `not terminal: ${JSON.stringify(faults)}\n${s.logs.slice(-50).join('\n')}`,
        150_000,
      );
      elapsed = Date.now() - startedAt;
      // An index row whose last write was lost (failure mode 12) is rewritten by the next sweep.
      await waitUntil(
        async () => (await listedActive()).length === 0,
        () => `index rows still active: ${JSON.stringify(faults)}`,
        60_000,
      );
    } finally {
      finished = true;
      await chaosDone;
    }

    let attempts = 0;
    let tasks = 0;
    const mismatches: string[] = [];
    const indexLag: string[] = [];
    /** Final workflow and task statuses, for the summary. */
    const tally: { workflows: Record<string, number>; tasks: Record<string, number> } = { workflows: {}, tasks: {} };
    for (const id of ids) {
      const loaded = await s.store.load(id);
      expect(loaded).not.toBeNull();
      const actual = loaded!.runtime;
      const parsed = parseWorkflow(JSON.stringify(definitions.get(id)), { filename: 'flow.json' });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      const expected = predict(parsed.value, id);
      expect(isTerminalWorkflowStatus(expected.status)).toBe(true);
      if (actual.status !== expected.status || statusesOf(actual) !== statusesOf(expected)) {
        mismatches.push(`${id}: ${actual.status} ${statusesOf(actual)} != predicted ${expected.status} ${statusesOf(expected)}`);
      }
      tally.workflows[actual.status] = (tally.workflows[actual.status] ?? 0) + 1;
      for (const t of Object.values(actual.tasks)) tally.tasks[t.status] = (tally.tasks[t.status] ?? 0) + 1;
      // No attempt applied twice: each dispatched task is at exactly the attempt its behaviour needed.
      for (const def of parsed.value.tasks) {
        const task = actual.tasks[def.name]!;
        tasks++;
        attempts += task.attemptNo;
        if (task.status === 'completed' || task.status === 'failed') {
          if (task.attemptNo !== attemptsNeeded(def.name, def.numRetries)) mismatches.push(`${id}/${def.name}: attempt ${task.attemptNo}`);
        } else if (task.attemptNo !== 0) {
          mismatches.push(`${id}/${def.name}: ${task.status} at attempt ${task.attemptNo}`);
        }
      }
      // The index row is derived; one whose last write was lost has been rewritten by a sweep.
      const row = await s.store.getWorkflow(id);
      expect(row).not.toBeNull();
      if (row?.status !== actual.status) indexLag.push(`${id}: index ${row?.status}, runtime ${actual.status}`);
    }
    expect(mismatches).toEqual([]);
    expect(indexLag).toEqual([]);
    // Every kind of fault happened; each takeover cost the old coordinator its lease.
    for (const [kind, count] of Object.entries(faults)) {
      if (kind !== 'takeoversNotNoticed' && kind !== 'leaseLost') expect([kind, count > 0]).toEqual([kind, true]);
    }
    expect(faults.takeoversNotNoticed).toBe(0);
    expect(faults.leaseLost).toBe(faults.takeovers);

    const sum = (key: keyof CoordinatorCounters) => coordinators.reduce((n, c) => n + c.counters[key], 0);
    await waitUntil(
      () => sum('poison') >= faults.poisonSent,
      () => `poison read ${sum('poison')} of ${faults.poisonSent}`,
    );
    await coordinator.stop();
    // Every attempt's completion was applied at most once, by one coordinator.
    expect(sum('completionsApplied')).toBeLessThanOrEqual(attempts);
    // Poison (garbage, or a wake-up naming an engine blob) is dead-lettered, never applied.
    expect(sum('poison')).toBeGreaterThanOrEqual(faults.poisonSent);
    expect(sum('corruptWorkflows')).toBe(0);
    process.stdout.write(
      `soak: ${WORKFLOWS} workflows, ${tasks} tasks, ${attempts} attempts in ${(elapsed / 1000).toFixed(1)} s; statuses ${JSON.stringify(tally)}; ` +
        `faults ${JSON.stringify(faults)}; tasks stopped by worker kills ${tasksStoppedByKills}; coordinators ${coordinators.length}; applied ${sum('completionsApplied')}, ignored ${sum('completionsIgnored')}, ` +
        `conflicts ${sum('conflicts')}, left for redelivery ${sum('leftForRedelivery')}, saves ${sum('saves')}, index rows rewritten ${sum('rowRepairs')}\n`,
    );
    // A bound against a hang, not a speed check: a quiet machine runs it in about 2 minutes, a
    // loaded one (CI beside other work) in 4 or more; each wave and the end have bounds of their own.
  }, 600_000);
});
