import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { VirtualClock } from '@jobq/ports';
import { countingPolicy, openStorageQueue } from '@jobq/queue-storage';
import type { TablePipelinePolicy } from '@jobq/store-azure';
import { DEFAULT_LATENCY_MS, RequestTap, benchLatencyMs, delayPolicies } from './storage-latency';

type TableRequest = Parameters<TablePipelinePolicy['sendRequest']>[0];
type TableResponse = Awaited<ReturnType<TablePipelinePolicy['sendRequest']>>;

/** A stand-in for the rest of a table pipeline: records when each request arrives, answers when told. */
function downstream(clock: VirtualClock) {
  const arrived: { url: string; at: number; answer: (r: TableResponse) => void; fail: (e: Error) => void }[] = [];
  const next = (request: TableRequest) =>
    new Promise<TableResponse>((answer, fail) => arrived.push({ url: request.url, at: clock.now(), answer, fail }));
  return { arrived, next };
}

const request = (url: string) => ({ url }) as TableRequest;
const response = (status: number) => ({ status }) as TableResponse;

/** Records when a promise settles, on the virtual clock. */
function track<T>(clock: VirtualClock, promise: Promise<T>) {
  const state: { at: number | null; value?: T; error?: unknown } = { at: null };
  promise.then(
    (value) => Object.assign(state, { at: clock.now(), value }),
    (error: unknown) => Object.assign(state, { at: clock.now(), error }),
  );
  return state;
}

describe('delayPolicies', () => {
  it('holds each request half the latency on the way out and half on the way back, concurrent requests overlapping', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const policy = delayPolicies(20, clock).table();
    const { arrived, next } = downstream(clock);
    const a = track(clock, policy.sendRequest(request('a'), next));
    const b = track(clock, policy.sendRequest(request('b'), next));
    await clock.advance(9);
    expect(arrived).toHaveLength(0);
    await clock.advance(1);
    // Both out at t = 10: the second did not wait for the first.
    expect(arrived.map((r) => [r.url, r.at])).toEqual([
      ['a', 10],
      ['b', 10],
    ]);
    const answerA = response(201);
    arrived[0]!.answer(answerA);
    arrived[1]!.answer(response(204));
    await clock.advance(9);
    expect(a.at).toBeNull();
    await clock.advance(1);
    expect(a.at).toBe(20);
    expect(b.at).toBe(20);
    expect(a.value).toBe(answerA); // the same object, unchanged
    expect(b.value?.status).toBe(204);
  });

  it('delays an error as a response and hands it on unchanged', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const factory = delayPolicies(6, clock).blob();
    const boom = new Error('409 conflict');
    const sent: number[] = [];
    const policy = factory.create(
      { sendRequest: () => (sent.push(clock.now()), Promise.reject(boom)) } as Parameters<typeof factory.create>[0],
      {} as Parameters<typeof factory.create>[1],
    );
    const result = track(clock, policy.sendRequest({} as Parameters<typeof policy.sendRequest>[0]));
    await clock.advance(6);
    expect(sent).toEqual([3]);
    expect(result.at).toBe(6);
    expect(result.error).toBe(boom);
  });

  it('with 0 ms sends at once and sets no timer', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const { arrived, next } = downstream(clock);
    const done = track(clock, delayPolicies(0, clock).table().sendRequest(request('x'), next));
    await clock.settle();
    expect(arrived).toHaveLength(1);
    arrived[0]!.answer(response(200));
    await clock.settle();
    expect(done.at).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  describe('on a real queue client (Azurite)', () => {
    let storage: LocalStorage;
    beforeAll(async () => {
      storage = await startAzurite();
    });
    afterAll(async () => {
      await storage?.stop();
    });

    it('each SDK call passes the delay once before it goes out, and gets its answer back', async () => {
      const clock = new VirtualClock({ startMs: 0 });
      const queue = await openStorageQueue({ connection: { connectionString: storage.connectionString }, queueName: 'latency-policy' });
      const counted = countingPolicy();
      const delayed = await openStorageQueue({
        connection: { connectionString: storage.connectionString },
        queueName: 'latency-policy',
        createIfMissing: false,
        policies: [delayPolicies(20, clock).queue(), counted.policy],
      });
      try {
        await queue.send([{ body: 'one' }, { body: 'two' }]);
        const received = track(clock, delayed.receive({ maxMessages: 32, maxWaitTimeInMs: 0 }));
        await clock.settle();
        expect(counted.counter.total).toBe(0); // held on the way out
        await clock.advance(10);
        expect(await clock.advanceUntil(() => received.at !== null, { withinMs: 10 })).toBe(true);
        expect(counted.counter.total).toBe(1);
        expect(received.at).toBe(20);
        expect(received.value?.map((m) => m.body).sort()).toEqual(['one', 'two']);
      } finally {
        await queue.deleteQueue();
      }
    });
  });
});

describe('benchLatencyMs', () => {
  it('reads JOBQ_BENCH_LATENCY_MS, 20 when unset', () => {
    expect(benchLatencyMs({})).toBe(DEFAULT_LATENCY_MS);
    expect(benchLatencyMs({ JOBQ_BENCH_LATENCY_MS: '5' })).toBe(5);
    expect(benchLatencyMs({ JOBQ_BENCH_LATENCY_MS: '0' })).toBe(0);
    expect(benchLatencyMs({ JOBQ_BENCH_LATENCY_MS: ' 7.5 ' })).toBe(7.5);
  });

  it('refuses anything else in one line naming the variable', () => {
    for (const raw of ['-1', 'fast', '1e3', '90000']) {
      expect(() => benchLatencyMs({ JOBQ_BENCH_LATENCY_MS: raw })).toThrow(
        `JOBQ_BENCH_LATENCY_MS="${raw}" is not a number of milliseconds between 0 and 60000`,
      );
    }
  });
});

describe('RequestTap', () => {
  it('counts the requests through its policies, and requests in flight together as one round trip', async () => {
    const clock = new VirtualClock({ startMs: 0 });
    const tap = new RequestTap();
    const policy = tap.policies.table();
    const { arrived, next } = downstream(clock);
    const answerAll = async () => {
      await clock.settle();
      for (const r of arrived.splice(0)) r.answer(response(200));
      await clock.settle();
    };
    const run = (async () => {
      // Three at once, then one after another: two round trips, four requests.
      await Promise.all([1, 2, 3].map((i) => policy.sendRequest(request(`batch${i}`), next)));
      await policy.sendRequest(request('save'), next);
    })();
    await answerAll();
    await answerAll();
    await run;
    expect(tap.requests).toBe(4);
    expect(tap.roundTrips).toBe(2);
  });
});
