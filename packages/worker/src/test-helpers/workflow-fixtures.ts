import { decodeCoordinatorMessage, decodeEnvelope, encodeTaskMessage, type Completion, type TaskMessageInput } from '@jobq/dag-core/wire';
import { JobqError, type OutgoingMessage, type OperationOptions, type ReceivedMessage, type TaskQueue } from '@jobq/ports';
import type { TaskContext } from '../processor';

/** A task context for `encodeTaskMessage(input)`, its log lines collected in `lines`. */
export function workflowContext(
  input: TaskMessageInput,
  signal: AbortSignal = new AbortController().signal,
): TaskContext & { lines: string[] } {
  const body = encodeTaskMessage(input);
  const envelope = decodeEnvelope(body);
  if (!envelope.ok) throw new Error(envelope.error);
  const message: ReceivedMessage = {
    messageId: `m-${input.taskName}`,
    body,
    deliveryCount: 1,
    enqueuedAt: new Date(),
    lockedUntil: new Date(Date.now() + 60_000),
  };
  const lines: string[] = [];
  return { message, envelope: envelope.value, signal, lines, log: (line: string) => lines.push(line) };
}

/**
 * Receives and deletes every completion on the queue now. The processor under test has sent them
 * before it returned, so nothing is waited for (unless `waitInMs` says so).
 */
export async function drainCompletions(queue: TaskQueue, waitInMs = 0): Promise<Completion[]> {
  const out: Completion[] = [];
  for (;;) {
    const batch = await queue.receive({ maxMessages: 32, maxWaitTimeInMs: out.length === 0 ? waitInMs : 0 });
    if (batch.length === 0) return out;
    for (const message of batch) {
      const decoded = decodeCoordinatorMessage(message.body);
      if (decoded.kind !== 'completion') throw new Error(`not a completion: ${message.body}`);
      out.push(decoded.completion);
      await queue.complete(message);
    }
  }
}

/** A queue whose `send` fails `failures` times (or always) before passing through; counts calls. */
export function flakyQueue(inner: TaskQueue, failures: number | 'always'): TaskQueue & { sendCalls: number } {
  let left = failures;
  const flaky = {
    sendCalls: 0,
    get name() {
      return inner.name;
    },
    lockDurationInMs: inner.lockDurationInMs,
    maxMessageBytes: inner.maxMessageBytes,
    send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions) {
      flaky.sendCalls++;
      if (left === 'always' || left > 0) {
        if (left !== 'always') left--;
        return Promise.reject(new JobqError('unavailable', 'injected completion queue outage'));
      }
      return inner.send(messages, options);
    },
    receive: inner.receive.bind(inner),
    renewLock: inner.renewLock.bind(inner),
    complete: inner.complete.bind(inner),
    abandon: inner.abandon.bind(inner),
    deadLetter: inner.deadLetter.bind(inner),
    peek: inner.peek.bind(inner),
    approximateMessageCount: inner.approximateMessageCount.bind(inner),
    deadLetterQueue: inner.deadLetterQueue.bind(inner),
    close: inner.close.bind(inner),
  };
  return flaky;
}

/** Waits until `check()` is true (polling every 20 ms), or throws after `timeoutInMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutInMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutInMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
