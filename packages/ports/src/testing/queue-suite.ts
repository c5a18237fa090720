import { afterEach, describe, expect, it } from './jest-globals';
import { decodeEnvelope, encodeEnvelope } from '@jobq/dag-core/wire';
import { isJobqError } from '../errors';
import { sleep } from '../sleep';
import type { ReceivedMessage, TaskQueue } from '../task-queue';

/** A fresh, empty queue for one test, and how to dispose of it. */
export interface TaskQueueFixture {
  queue: TaskQueue;
  dispose(): Promise<void>;
}

/** Options of {@link describeTaskQueueContract}. */
export interface TaskQueueContractOptions {
  /** Per-test timeout; lock-expiry tests wait a little over two lock durations. */
  timeoutInMs?: number;
  /**
   * The delay the delayed-send test gives a message (default 2 000 ms; whole seconds on a backend
   * that counts them). The test takes about that long and checks what the queue shows while more
   * than 1 s of the delay is left.
   */
  delayInMs?: number;
}

/** Receives until `count` messages arrived or `withinMs` passed. */
async function receiveAtLeast(queue: TaskQueue, count: number, withinMs: number): Promise<ReceivedMessage[]> {
  const out: ReceivedMessage[] = [];
  const deadline = Date.now() + withinMs;
  while (out.length < count && Date.now() < deadline) {
    out.push(...(await queue.receive({ maxMessages: Math.min(32, count - out.length), maxWaitTimeInMs: 500 })));
  }
  return out;
}

async function expectJobqError(promise: Promise<unknown>, code: string): Promise<void> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(isJobqError(caught) ? caught.code : caught).toBe(code);
}

/**
 * The contract of {@link TaskQueue}, as jest tests. Every adapter runs it with a factory that
 * opens a fresh, empty queue whose lock duration is short (1–3 s), so expiry can be observed.
 */
export function describeTaskQueueContract(
  label: string,
  open: () => Promise<TaskQueueFixture>,
  options: TaskQueueContractOptions = {},
): void {
  describe(`TaskQueue contract: ${label}`, () => {
    let fixture: TaskQueueFixture | undefined;
    const fresh = async (): Promise<TaskQueue> => {
      fixture = await open();
      return fixture.queue;
    };
    afterEach(async () => {
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 30_000;

    it(
      'sends one message and receives it once, with its body and a delivery count of 1',
      async () => {
        const queue = await fresh();
        await queue.send({ body: '{"hello":"world ✓"}' });
        const [message, ...rest] = await receiveAtLeast(queue, 1, 5_000);
        expect(rest).toEqual([]);
        expect(message?.body).toBe('{"hello":"world ✓"}');
        expect(message?.deliveryCount).toBe(1);
        expect(message!.lockedUntil.getTime()).toBeGreaterThan(Date.now());
        // Held under its lock: nobody else gets it.
        expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 300 })).toEqual([]);
        await queue.complete(message!);
      },
      timeout,
    );

    it(
      'sends a batch and receives every message exactly once, in batches no larger than asked',
      async () => {
        const queue = await fresh();
        const bodies = Array.from({ length: 75 }, (_, i) => `{"n":${i}}`);
        await queue.send(bodies.map((body) => ({ body })));
        const seen: string[] = [];
        const deadline = Date.now() + 15_000;
        while (seen.length < bodies.length && Date.now() < deadline) {
          const batch = await queue.receive({ maxMessages: 10, maxWaitTimeInMs: 500 });
          expect(batch.length).toBeLessThanOrEqual(10);
          for (const m of batch) {
            seen.push(m.body);
            await queue.complete(m);
          }
        }
        expect(seen.sort()).toEqual([...bodies].sort());
        expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 300 })).toEqual([]);
      },
      timeout,
    );

    it(
      'returns an empty list from an empty queue after the wait',
      async () => {
        const queue = await fresh();
        expect(await queue.receive({ maxMessages: 5, maxWaitTimeInMs: 200 })).toEqual([]);
      },
      timeout,
    );

    it(
      'delivers a message again after its lock expires, with a higher delivery count; the old lock is then lost',
      async () => {
        const queue = await fresh();
        await queue.send({ body: 'expire-me' });
        const [first] = await receiveAtLeast(queue, 1, 5_000);
        await sleep(queue.lockDurationInMs + 500);
        const [second] = await receiveAtLeast(queue, 1, queue.lockDurationInMs + 5_000);
        expect(second?.body).toBe('expire-me');
        expect(second?.deliveryCount).toBe(2);
        await expectJobqError(queue.complete(first!), 'lock-lost');
        await expectJobqError(queue.renewLock(first!), 'lock-lost');
        await queue.complete(second!);
        expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 300 })).toEqual([]);
      },
      timeout,
    );

    it(
      'keeps a message held while its lock is renewed, and completes it with the renewed lock',
      async () => {
        const queue = await fresh();
        await queue.send({ body: 'keep-me' });
        const [message] = await receiveAtLeast(queue, 1, 5_000);
        const before = message!.lockedUntil.getTime();
        for (let i = 0; i < 3; i++) {
          await sleep(queue.lockDurationInMs / 2);
          await queue.renewLock(message!);
        }
        expect(message!.lockedUntil.getTime()).toBeGreaterThan(before);
        // Past the first lock's end (1.5 durations later), the message has not come back.
        expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 200 })).toEqual([]);
        await queue.complete(message!);
        await sleep(queue.lockDurationInMs + 300);
        expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 300 })).toEqual([]);
      },
      timeout,
    );

    it(
      'does not deliver a completed message again',
      async () => {
        const queue = await fresh();
        await queue.send({ body: 'done' });
        const [message] = await receiveAtLeast(queue, 1, 5_000);
        await queue.complete(message!);
        await sleep(queue.lockDurationInMs + 300);
        expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 300 })).toEqual([]);
        await expectJobqError(queue.complete(message!), 'lock-lost');
      },
      timeout,
    );

    it(
      'gives an abandoned message back at once with a higher delivery count',
      async () => {
        const queue = await fresh();
        await queue.send({ body: 'again' });
        const [first] = await receiveAtLeast(queue, 1, 5_000);
        await queue.abandon(first!);
        const [second] = await receiveAtLeast(queue, 1, Math.max(2_000, queue.lockDurationInMs / 2));
        expect(second?.body).toBe('again');
        expect(second?.deliveryCount).toBe(2);
        await queue.complete(second!);
      },
      timeout,
    );

    it(
      'moves a dead-lettered message to the dead-letter queue and never delivers it again',
      async () => {
        const queue = await fresh();
        await queue.send({ body: '{"poison":true}' });
        const [message] = await receiveAtLeast(queue, 1, 5_000);
        await queue.deadLetter(message!, 'exhausted its retries');
        await sleep(queue.lockDurationInMs + 300);
        expect(await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 300 })).toEqual([]);
        const dlq = queue.deadLetterQueue();
        const [dead] = await receiveAtLeast(dlq, 1, 5_000);
        expect(dead?.body).toBe('{"poison":true,"dead_letter_reason":"exhausted its retries"}');
        await dlq.complete(dead!);
      },
      timeout,
    );

    it(
      'dead-letters with the reason: an envelope stays decodable, other bodies are wrapped, the reason is one line cut to fit',
      async () => {
        const queue = await fresh();
        const envelope = encodeEnvelope({
          id: 'wf/t/1',
          kwargs: { __workflow_id: 'wf', __workflow_task: 't', __attempt_no: 1, cmd: 'echo \uffff' },
          numRetries: 0,
        });
        const big = JSON.stringify({ output: 'x'.repeat(queue.maxMessageBytes - 200) });
        await queue.send([{ body: envelope }, { body: 'not json' }, { body: big }]);
        const received = await receiveAtLeast(queue, 3, 5_000);
        expect(received).toHaveLength(3);
        const long = `delivered 21 times\n(more than ${'N'.repeat(400)})`;
        for (const m of received) await queue.deadLetter(m, m.body === big ? long : 'delivered 21 times (more than 20)');
        const dlq = queue.deadLetterQueue();
        const peeked = await dlq.peek(32);
        expect(peeked).toHaveLength(3);
        const copies = peeked.map((m) => JSON.parse(m.body) as Record<string, unknown>);
        const ofEnvelope = peeked.find((m) => m.body.includes('wf/t/1'))!;
        expect(JSON.parse(ofEnvelope.body)).toMatchObject({ dead_letter_reason: 'delivered 21 times (more than 20)' });
        expect(decodeEnvelope(ofEnvelope.body)).toEqual(decodeEnvelope(envelope));
        expect(copies).toContainEqual({ dead_letter_reason: 'delivered 21 times (more than 20)', body: 'not json' });
        const ofBig = copies.find((c) => typeof c.output === 'string')!;
        expect(ofBig.output).toBe((JSON.parse(big) as { output: string }).output);
        expect(ofBig.dead_letter_reason).toMatch(/^delivered 21 times \(more than N+…$/);
        const all = await receiveAtLeast(dlq, 3, 5_000);
        for (const m of all) await dlq.complete(m);
      },
      timeout,
    );

    it(
      'refuses an oversized message before sending anything, with a typed error',
      async () => {
        const queue = await fresh();
        const big = 'x'.repeat(queue.maxMessageBytes + 1);
        await expectJobqError(queue.send([{ body: 'small' }, { body: big, messageId: 'too-big' }]), 'message-too-large');
        // The whole batch was refused: not even the small message went out.
        expect(await queue.receive({ maxMessages: 5, maxWaitTimeInMs: 300 })).toEqual([]);
        // Multi-byte characters count as UTF-8 bytes.
        const wide = '✓'.repeat(Math.floor(queue.maxMessageBytes / 3) + 1);
        await expectJobqError(queue.send({ body: wide }), 'message-too-large');
        // Characters XML forbids count as the six-byte escape a Storage Queue sends for each.
        const escaped = `"${'\uffff'.repeat(Math.floor(queue.maxMessageBytes / 4))}"`;
        expect(Buffer.byteLength(escaped, 'utf8')).toBeLessThanOrEqual(queue.maxMessageBytes);
        await expectJobqError(queue.send({ body: escaped }), 'message-too-large');
      },
      timeout,
    );

    it(
      'carries JSON bodies with characters XML forbids (U+FFFE, U+FFFF, controls, lone surrogates) and keeps the queue working',
      async () => {
        const queue = await fresh();
        const value = { text: 'a\uffffb\ufffe\u0000\u0001\u001f\ud800\udc00 😀', nested: JSON.stringify({ x: '\uffff' }) };
        // Written raw, as a producer that does not escape them would.
        const body = JSON.stringify(value).replace(/\\u(d[89a-f][0-9a-f]{2})/g, (_m, hex: string) =>
          String.fromCharCode(parseInt(hex, 16)),
        );
        expect(body).toContain('\uffff');
        await queue.send([{ body: '{"n":1}' }, { body }, { body: '{"n":2}' }]);
        const peeked = await queue.peek(32);
        expect(peeked.map((m) => JSON.parse(m.body) as unknown)).toEqual(expect.arrayContaining([{ n: 1 }, value, { n: 2 }]));
        const received = await receiveAtLeast(queue, 3, 5_000);
        expect(received.map((m) => JSON.parse(m.body) as unknown)).toEqual(expect.arrayContaining([{ n: 1 }, value, { n: 2 }]));
        expect(received).toHaveLength(3);
        for (const m of received) await queue.complete(m);
      },
      timeout,
    );

    it(
      'drops a message once its time to live has run out (1 s), and keeps one that never expires',
      async () => {
        const queue = await fresh();
        await queue.send([
          { body: 'short', timeToLiveInMs: 1_000 },
          { body: 'forever', timeToLiveInMs: Number.POSITIVE_INFINITY },
          { body: 'default' },
        ]);
        const bodies = async () => (await queue.peek(32)).map((m) => m.body).sort();
        expect(await bodies()).toEqual(['default', 'forever', 'short']);
        // A real wait, bounded: the 1 s time to live runs out within it.
        const deadline = Date.now() + 2_000;
        while ((await bodies()).includes('short') && Date.now() < deadline) await sleep(100);
        expect(await bodies()).toEqual(['default', 'forever']);
        const received = await receiveAtLeast(queue, 2, 5_000);
        expect(received.map((m) => m.body).sort()).toEqual(['default', 'forever']);
        for (const m of received) await queue.complete(m);
      },
      timeout,
    );

    it(
      'refuses a time to live that is not a positive number of ms or Infinity, before sending anything',
      async () => {
        const queue = await fresh();
        for (const timeToLiveInMs of [0, -1, Number.NaN, Number.NEGATIVE_INFINITY]) {
          await expectJobqError(queue.send([{ body: 'fine' }, { body: 'bad', timeToLiveInMs }]), 'invalid-argument');
        }
        expect(await queue.receive({ maxMessages: 5, maxWaitTimeInMs: 300 })).toEqual([]);
      },
      timeout,
    );

    it(
      'holds a delayed message back until its delay has passed, while messages sent with it (no delay, or 0) arrive at once',
      async () => {
        const queue = await fresh();
        const delayInMs = options.delayInMs ?? 2_000;
        const sentAt = Date.now();
        await queue.send([{ body: 'now-1' }, { body: 'later', delayInMs }, { body: 'now-2', delayInMs: 0 }]);
        const first = await receiveAtLeast(queue, 2, 5_000);
        // The checks made while the delay still runs (always, unless the machine stalled for the
        // whole delay): only the immediate messages arrive, and the delayed one is held back.
        if (Date.now() < sentAt + delayInMs) expect(first.map((m) => m.body).sort()).toEqual(['now-1', 'now-2']);
        for (const m of first) await queue.complete(m);
        if (Date.now() + 1_000 < sentAt + delayInMs) {
          // In the queue and counted, but neither peeked nor received yet.
          expect(await queue.approximateMessageCount()).toBe(1);
          expect(await queue.peek(32)).toEqual([]);
          expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 200 })).toEqual([]);
        }
        const later = first.filter((m) => m.body === 'later');
        if (later.length === 0) later.push(...(await receiveAtLeast(queue, 1, delayInMs + 5_000)));
        expect(later.map((m) => [m.body, m.deliveryCount])).toEqual([['later', 1]]);
        await queue.complete(later[0]!);
        expect(await queue.receive({ maxMessages: 32, maxWaitTimeInMs: 200 })).toEqual([]);
      },
      timeout,
    );

    it(
      'refuses a delay that is not a finite number of ms ≥ 0, or not smaller than the time to live, before sending anything',
      async () => {
        const queue = await fresh();
        const bad = [-1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '5' as unknown as number];
        for (const delayInMs of bad) {
          await expectJobqError(queue.send([{ body: 'fine' }, { body: 'bad', delayInMs }]), 'invalid-argument');
        }
        // The time to live counts from the send too: a message that would expire before it could be received.
        await expectJobqError(queue.send([{ body: 'fine' }, { body: 'bad', delayInMs: 2_000, timeToLiveInMs: 2_000 }]), 'invalid-argument');
        expect(await queue.receive({ maxMessages: 5, maxWaitTimeInMs: 300 })).toEqual([]);
        expect(await queue.approximateMessageCount()).toBe(0);
      },
      timeout,
    );

    it(
      'peeks without taking, and counts the messages',
      async () => {
        const queue = await fresh();
        await queue.send([{ body: 'p1' }, { body: 'p2' }, { body: 'p3' }]);
        const peeked = await queue.peek(2);
        expect(peeked).toHaveLength(2);
        expect(peeked.every((m) => ['p1', 'p2', 'p3'].includes(m.body))).toBe(true);
        expect(await queue.approximateMessageCount()).toBe(3);
        const received = await receiveAtLeast(queue, 3, 5_000);
        expect(received.map((m) => m.body).sort()).toEqual(['p1', 'p2', 'p3']);
        for (const m of received) await queue.complete(m);
      },
      timeout,
    );

    it(
      'stops at once when the abort signal has fired',
      async () => {
        const queue = await fresh();
        const controller = new AbortController();
        controller.abort();
        await expectJobqError(queue.receive({ maxMessages: 1, maxWaitTimeInMs: 10_000, abortSignal: controller.signal }), 'aborted');
        await expectJobqError(queue.send({ body: 'x' }, { abortSignal: controller.signal }), 'aborted');
      },
      timeout,
    );
  });
}
