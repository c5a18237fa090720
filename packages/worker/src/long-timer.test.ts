import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { sleep } from './backoff';
import { MAX_TIMER_DELAY_IN_MS, setLongTimeout } from './long-timer';
import { runShell, type ShellResult } from './subprocess';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor } from './workflow-processor';

const DAY = 24 * 3600 * 1000;
const THIRTY_DAYS = 30 * DAY;

// Fake timers mimic Node here: a setTimeout past 2^31 − 1 ms fires after 1 ms. Only the timer
// functions and the clock are faked, so child processes and file I/O run for real.
beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'queueMicrotask', 'hrtime', 'performance'] });
});
afterEach(() => {
  jest.useRealTimers();
});

/** Lets pending I/O callbacks and promise continuations run (real time: setImmediate is not faked). */
const settle = async (turns = 20) => {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Lets I/O run until `check()` holds; throws after 10 s of real time (the clock is not faked). */
const until = async (check: () => boolean, what: string) => {
  const end = performance.now() + 10_000;
  while (!check()) {
    if (performance.now() > end) throw new Error(`gave up waiting for ${what}`);
    await settle(1);
  }
};

describe('setLongTimeout', () => {
  it('a 30-day timer does not fire early and fires at 30 days', async () => {
    let fired = 0;
    setLongTimeout(() => fired++, THIRTY_DAYS);
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS - 1);
    expect(fired).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(fired).toBe(1);
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS);
    expect(fired).toBe(1);
  });

  it('fires at exactly the limit, and a cleared timer never fires (also between links of the chain)', async () => {
    let atLimit = 0;
    let cleared = 0;
    setLongTimeout(() => atLimit++, MAX_TIMER_DELAY_IN_MS);
    const timer = setLongTimeout(() => cleared++, THIRTY_DAYS);
    await jest.advanceTimersByTimeAsync(MAX_TIMER_DELAY_IN_MS);
    expect(atLimit).toBe(1);
    timer.clear();
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS);
    expect(cleared).toBe(0);
  });

  it('Infinity never fires; a negative delay fires on the next turn', async () => {
    let never = 0;
    let soon = 0;
    setLongTimeout(() => never++, Infinity);
    setLongTimeout(() => soon++, -5);
    await jest.advanceTimersByTimeAsync(1);
    expect(soon).toBe(1);
    await jest.advanceTimersByTimeAsync(10 * THIRTY_DAYS);
    expect(never).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('sleep() waits 30 days', async () => {
    let woke = false;
    void sleep(THIRTY_DAYS).then(() => (woke = true));
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS - 1);
    expect(woke).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(woke).toBe(true);
  });
});

describe('runShell with 30-day limits', () => {
  it('a task timeout of 30 days (timeout_s 2592000) stops the task at 30 days, not at once', async () => {
    let result: ShellResult | undefined;
    void runShell({ command: 'sleep 1000', env: { PATH: process.env.PATH }, killTimeoutInMs: 1_000, timeoutInMs: 2_592_000 * 1000 }).then(
      (r) => (result = r),
    );
    await settle();
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS - 1_000);
    await settle();
    expect(result).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1_000);
    await until(() => result !== undefined, 'the shell to end');
    expect(result).toMatchObject({ timedOut: true, killed: false, exitSignal: 'SIGTERM' });
  });

  it('a kill timeout of 30 days (JOBQ_KILL_TIMEOUT) sends SIGKILL at 30 days, not at once', async () => {
    const controller = new AbortController();
    let result: ShellResult | undefined;
    let started = false;
    void runShell({
      command: "trap '' TERM; echo up; while true; do sleep 0.05; done",
      env: { PATH: process.env.PATH },
      killTimeoutInMs: THIRTY_DAYS,
      signal: controller.signal,
      onLine: () => (started = true),
    }).then((r) => (result = r));
    await until(() => started, 'the shell to start');
    controller.abort('test');
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS - 1);
    await settle();
    expect(result).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    await until(() => result !== undefined, 'the shell to end');
    expect(result).toMatchObject({ stopped: true, killed: true, exitSignal: 'SIGKILL' });
  });
});

describe('WorkflowProcessor with a 30-day cancel poll interval', () => {
  it('polls the cancel flag after 30 days, not at once', async () => {
    let cancelled = false;
    let stops = 0;
    const completions = new RecordingCompletions();
    const processor = new WorkflowProcessor({
      outputs: memoryOutputs(),
      completions,
      isCancelled: () => Promise.resolve(cancelled),
      env: { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Timers' },
      killTimeoutInMs: 1_000,
      cancelPollIntervalInMs: THIRTY_DAYS,
      cancelPollJitter: 0,
      runCommand: (options) =>
        new Promise((resolve) => {
          cancelled = true; // the cancel arrives once the task runs
          options.signal?.addEventListener('abort', () => {
            stops++;
            resolve({ exitCode: null, exitSignal: 'SIGTERM', stopped: true, timedOut: false, killed: false, spawnError: null });
          });
        }),
    });
    let outcome: unknown;
    void processor
      .process(workflowContext({ workflowId: 'wf-timers', taskName: 'a', attemptNo: 1, kwargs: { cmd: 'true' } }))
      .then((o) => (outcome = o));
    await until(() => cancelled, 'the task to start');
    await jest.advanceTimersByTimeAsync(THIRTY_DAYS - 1);
    await settle();
    expect(stops).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    await until(() => outcome !== undefined, 'the outcome');
    expect(stops).toBe(1);
    expect(completions.sent).toEqual([expect.objectContaining({ success: false, error: 'stopped: workflow cancelled' })]);
  });
});
