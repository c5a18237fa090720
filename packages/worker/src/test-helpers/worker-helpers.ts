import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeEnvelope } from '@jobq/dag-core/wire';
import {
  JobqError,
  realClock,
  type Clock,
  type OperationOptions,
  type ReceiveOptions,
  type ReceivedMessage,
  type TaskQueue,
  type VirtualClock,
} from '@jobq/ports';
import type { Worker, WorkerSummary } from '../worker';

/** A jobq envelope body for a plain task. */
export function task(id: string, kwargs: Record<string, unknown>, numRetries = 0): { body: string } {
  return { body: encodeEnvelope({ id, kwargs, numRetries }) };
}

/** A temp directory removed by `cleanup()`. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'jobq-worker-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The lines of a file, or [] when it does not exist. */
export function lines(path: string): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
}

/** Polls `check` every 20 ms until it is true or `timeoutInMs` passes. */
export async function waitFor(check: () => boolean, timeoutInMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('waitFor: timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A log that collects lines. */
export function collectingLog(): { log: (line: string) => void; lines: string[] } {
  const collected: string[] = [];
  return { log: (line) => collected.push(line), lines: collected };
}

/**
 * Wraps a queue: counts calls, and lets a test make `renewLock` answer `lock-lost` or make
 * `receive` fail with a transient error a few times.
 */
export class WrappedQueue implements TaskQueue {
  receiveCalls = 0;
  renewCalls = 0;
  completeCalls = 0;
  abandonCalls = 0;
  /** The reason of each `deadLetter` call, in order. */
  readonly deadLetterReasons: string[] = [];
  loseLocks = false;
  failReceives = 0;
  /** After this many messages were delivered, receives return nothing (so a lost message is not redelivered). */
  deliverAtMost = Infinity;
  delivered = 0;

  /** `clock`: the time of the empty answers once `deliverAtMost` is reached (the inner queue's, when it has one). */
  constructor(
    readonly inner: TaskQueue,
    private readonly clock: Clock = (inner as { clock?: Clock }).clock ?? realClock,
  ) {}

  get name(): string {
    return this.inner.name;
  }
  get lockDurationInMs(): number {
    return this.inner.lockDurationInMs;
  }
  get maxMessageBytes(): number {
    return this.inner.maxMessageBytes;
  }
  send(...args: Parameters<TaskQueue['send']>): Promise<void> {
    return this.inner.send(...args);
  }
  receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    this.receiveCalls++;
    if (this.failReceives > 0) {
      this.failReceives--;
      return Promise.reject(new JobqError('unavailable', 'receive: simulated outage'));
    }
    if (this.delivered >= this.deliverAtMost)
      return this.clock.sleep(Math.min(options.maxWaitTimeInMs, 50), options.abortSignal).then(() => []);
    return this.inner
      .receive({ ...options, maxMessages: Math.min(options.maxMessages, this.deliverAtMost - this.delivered) })
      .then((messages) => {
        this.delivered += messages.length;
        return messages;
      });
  }
  renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    this.renewCalls++;
    if (this.loseLocks) return Promise.reject(new JobqError('lock-lost', 'renew: simulated lost lock'));
    return this.inner.renewLock(message, options);
  }
  complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    this.completeCalls++;
    return this.inner.complete(message, options);
  }
  abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    this.abandonCalls++;
    return this.inner.abandon(message, options);
  }
  deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    this.deadLetterReasons.push(reason);
    return this.inner.deadLetter(message, reason, options);
  }
  peek(...args: Parameters<TaskQueue['peek']>) {
    return this.inner.peek(...args);
  }
  approximateMessageCount(options?: OperationOptions): Promise<number> {
    return this.inner.approximateMessageCount(options);
  }
  deadLetterQueue(): TaskQueue {
    return this.inner.deadLetterQueue();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Runs a worker whose clock is `clock` until `run()` settles, moving virtual time as it goes; its summary. */
export async function runOnClock(clock: VirtualClock, worker: Worker): Promise<WorkerSummary> {
  let outcome: { summary: WorkerSummary } | { error: unknown } | undefined;
  void worker.run().then(
    (summary) => (outcome = { summary }),
    (error: unknown) => (outcome = { error }),
  );
  await clock.runUntil(
    () => outcome !== undefined,
    () => 'the worker never stopped',
  );
  if (outcome === undefined) throw new Error('unreachable');
  if ('error' in outcome) throw outcome.error;
  return outcome.summary;
}
