import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { SpanKind, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { decodeCoordinatorMessage, encodeCompletion, encodeEnvelope, type Completion } from '@jobq/dag-core/wire';
import { MemoryTaskQueue } from '@jobq/memory';
import { formatTraceparent, messageByteLength, VirtualClock } from '@jobq/ports';
import { publishCompletion } from './completion-publisher';
import { ShellProcessor } from './shell-processor';
import { lines, runOnClock, tempDir } from './test-helpers/worker-helpers';
import { Worker } from './worker';

// The worker's side of tracing (docs/observability.md#tracing): the `process {queue}` span, the
// task's TRACEPARENT, and completions that carry the context only while they fit.

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const SENDER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

beforeEach(() => {
  trace.disable();
  exporter.reset();
});
afterAll(() => trace.disable());

/** Runs the messages `bodies` through a worker with the shell processor; the task writes $TRACEPARENT (or "none") to a file per id. */
async function runTasks(
  bodies: Array<{ id: string; traceparent?: unknown }>,
  env: NodeJS.ProcessEnv = {},
): Promise<Record<string, string[]>> {
  const { dir, cleanup } = tempDir();
  try {
    const clock = new VirtualClock();
    const queue = new MemoryTaskQueue({ name: 'cpu', clock });
    for (const { id, traceparent } of bodies) {
      const body = encodeEnvelope({ id, kwargs: { cmd: `echo "\${TRACEPARENT:-none}" > ${join(dir, id)}` }, numRetries: 0 });
      await queue.send({ body: traceparent === undefined ? body : `${body.slice(0, -1)},"traceparent":${JSON.stringify(traceparent)}}` });
    }
    const worker = new Worker({
      queue,
      queueLabel: 'sb://ns/cpu',
      processors: [new ShellProcessor({ killTimeoutInMs: 2_000, baseEnv: { PATH: process.env.PATH, ...env } })],
      idleTimeoutInMs: 400,
      receiveWaitInMs: 50,
      maxIdleBackoffInMs: 100,
      log: () => undefined,
      clock,
    });
    const summary = await runOnClock(clock, worker);
    expect(summary.succeeded).toBe(bodies.length);
    return Object.fromEntries(bodies.map(({ id }) => [id, lines(join(dir, id))]));
  } finally {
    cleanup();
  }
}

describe('the worker traced', () => {
  it('runs each delivery in a CONSUMER span, child of the message context and linked to it; the task sees TRACEPARENT', async () => {
    trace.setGlobalTracerProvider(provider);
    const seen = await runTasks([{ id: 't1', traceparent: SENDER }]);
    const [span, ...others] = exporter.getFinishedSpans();
    expect(others).toEqual([]);
    expect(span!.name).toBe('process cpu');
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(span!.links.map((l) => l.context.spanId)).toEqual(['b7ad6b7169203331']);
    expect(span!.attributes).toMatchObject({
      'messaging.system': 'servicebus',
      'messaging.destination.name': 'cpu',
      'messaging.message.id': 't1',
    });
    expect(seen.t1).toEqual([formatTraceparent(span!.spanContext())]);
  });

  it('ignores a malformed traceparent: the delivery runs in a new trace, without a link', async () => {
    trace.setGlobalTracerProvider(provider);
    const seen = await runTasks([
      { id: 'bad1', traceparent: 'not-a-traceparent' },
      { id: 'bad2', traceparent: 42 },
      { id: 'bad3', traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` },
    ]);
    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(3);
    for (const span of spans) {
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.links).toEqual([]);
      expect(seen[span.attributes['messaging.message.id'] as string]).toEqual([formatTraceparent(span.spanContext())]);
    }
  });

  it('without an SDK leaves the task environment as it is', async () => {
    const seen = await runTasks([{ id: 'plain', traceparent: SENDER }, { id: 'inherited' }], { TRACEPARENT: 'from-the-worker' });
    expect(seen).toEqual({ plain: ['from-the-worker'], inherited: ['from-the-worker'] });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe('publishCompletion with a trace context', () => {
  const completion: Completion = { workflowId: 'wf', taskName: 't', success: true, attemptNo: 1, outputRef: '{"x":1}', error: null };
  const trace = { traceparent: SENDER };

  it('sends it as the top-level key; the size check counts the key, and a completion that fits only without it goes without it', async () => {
    const traced = encodeCompletion(completion, trace);
    const plain = encodeCompletion(completion);
    for (const [limit, expected] of [
      [messageByteLength(traced), traced],
      [messageByteLength(traced) - 1, plain],
    ] as const) {
      const queue = new MemoryTaskQueue({ name: 'done', maxMessageBytes: limit });
      expect(await publishCompletion(queue, completion, { trace })).toMatchObject({ sent: true });
      const [message] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 0 });
      expect(message!.body).toBe(expected);
      expect(decodeCoordinatorMessage(message!.body).kind).toBe('completion');
    }
  });
});
