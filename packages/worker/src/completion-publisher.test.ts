import { decodeCoordinatorMessage, type Completion } from '@jobq/dag-core/wire';
import { JobqError, type OutgoingMessage, type TaskQueue } from '@jobq/ports';
import { backoffDelay, publishCompletion } from './completion-publisher';

const completion: Completion = { workflowId: 'wf1', taskName: 't', success: true, attemptNo: 2, outputRef: '{"a":1}', error: null };

function fakeQueue(failures: Array<Error | null>) {
  const sent: OutgoingMessage[] = [];
  const queue = {
    name: 'fake-completions',
    send(message: OutgoingMessage) {
      const failure = failures.shift();
      if (failure) return Promise.reject(failure);
      sent.push(message);
      return Promise.resolve();
    },
  };
  return { queue: queue as unknown as TaskQueue, sent };
}

describe('publishCompletion', () => {
  it('backs off exponentially up to the cap', () => {
    const backoff = { initialInMs: 1000, maxInMs: 60_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(n, backoff))).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  });

  it('sends the encoded completion with its id, retrying after failures', async () => {
    const outage = new JobqError('unavailable', 'down');
    const { queue, sent } = fakeQueue([outage, outage]);
    const sleeps: number[] = [];
    const lines: string[] = [];
    const result = await publishCompletion(queue, completion, {
      maxAttempts: 5,
      sleep: (ms) => (sleeps.push(ms), Promise.resolve()),
      log: (l) => lines.push(l),
    });
    expect(result).toEqual({ sent: true, attempts: 3 });
    expect(sleeps).toEqual([1000, 2000]);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.messageId).toBe('wf1/t/2/done');
    expect(decodeCoordinatorMessage(sent[0]?.body ?? '')).toEqual({
      kind: 'completion',
      completion: { ...completion, startedAt: null, cancelled: false },
    });
    expect(lines[0]).toMatch(/attempt 1\/5.*down/);
  });

  it('gives up after the cap', async () => {
    const { queue, sent } = fakeQueue(Array.from({ length: 10 }, () => new Error('boom')));
    const sleeps: number[] = [];
    const result = await publishCompletion(queue, completion, {
      maxAttempts: 3,
      backoff: { initialInMs: 5, maxInMs: 8 },
      sleep: (ms) => (sleeps.push(ms), Promise.resolve()),
    });
    expect(result).toEqual({ sent: false, attempts: 3, error: 'boom', permanent: false, tooLarge: false });
    expect(sleeps).toEqual([5, 8]);
    expect(sent).toHaveLength(0);
  });

  it('stops at once on message-too-large', async () => {
    const { queue } = fakeQueue([new JobqError('message-too-large', 'too big'), null]);
    const result = await publishCompletion(queue, completion, { sleep: () => Promise.resolve() });
    expect(result).toEqual({ sent: false, attempts: 1, error: 'too big', permanent: true, tooLarge: true });
  });

  it.each([
    ['an expired SAS (auth)', new JobqError('auth', 'Server failed to authenticate the request (403)')],
    ['a bad request (400)', new JobqError('invalid-argument', 'The request is invalid (400)')],
    ['a missing queue', new JobqError('not-found', 'The specified queue does not exist (404)')],
  ])('stops at once on a permanent error: %s', async (_what, error) => {
    const { queue, sent } = fakeQueue([error, null]);
    const sleeps: number[] = [];
    const lines: string[] = [];
    const result = await publishCompletion(queue, completion, {
      sleep: (ms) => (sleeps.push(ms), Promise.resolve()),
      log: (l) => lines.push(l),
    });
    expect(result).toEqual({ sent: false, attempts: 1, error: error.message, permanent: true, tooLarge: false });
    expect(sleeps).toEqual([]);
    expect(sent).toHaveLength(0);
    expect(lines).toEqual([expect.stringMatching(new RegExp(`permanent error \\(${error.code}\\).*not trying again`))]);
  });

  it('tries again on a transient JobqError marked retryable, and on errors that are not JobqErrors', async () => {
    const { queue, sent } = fakeQueue([new JobqError('internal', 'odd answer', { retryable: true }), new Error('socket hang up')]);
    const result = await publishCompletion(queue, completion, { sleep: () => Promise.resolve() });
    expect(result).toEqual({ sent: true, attempts: 3 });
    expect(sent).toHaveLength(1);
  });
});
