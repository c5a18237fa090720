import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { SpanKind, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { withTaskStates } from '@jobq/dag-core';
import { decodeCoordinatorMessage, decodeEnvelope, withEnvelopeTrace } from '@jobq/dag-core/wire';
import { formatTraceparent, messageByteLength, type OutgoingMessage, type TaskQueue } from '@jobq/ports';
import { useMemoryStacks } from './test-helpers/memory-stack';
import { WrappedQueue } from './test-helpers/wrappers';

// Tracing over a diamond on the memory stack (docs/observability.md#tracing): one trace per
// workflow, `send`/`process` spans with their links, and messages that differ from the untraced
// ones only by the top-level `traceparent` key.

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const stacks = useMemoryStacks();

const DIAMOND = {
  name: 'diamond',
  tasks: [
    { name: 'a', kwargs: { cmd: 'out {"rows":3}' } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'out 1' } },
    { name: 'c', depends_on: ['a'], kwargs: { cmd: 'out 2' } },
    { name: 'd', depends_on: ['b', 'c'], kwargs: { cmd: 'true' } },
  ],
};

/** A reader with the rules of the Python peer: json.loads, then only the keys it knows. */
function pythonRead(text: string): { version: unknown; reply_requested: unknown; kwargs: unknown; num_retries: unknown; id: unknown } {
  const body = JSON.parse(text) as Record<string, unknown>;
  if (typeof body.kwargs !== 'string') throw new Error('kwargs is not a string');
  return {
    version: body.version,
    reply_requested: body.reply_requested ?? false,
    kwargs: JSON.parse(body.kwargs),
    num_retries: body.num_retries,
    id: body.id,
  };
}

/** Runs the diamond with id `wf-traced`; returns the task messages and completions sent, by message id. */
async function runDiamond(): Promise<{ tasks: Map<string, string>; completions: Map<string, string>; traceparent: string | null }> {
  const tasks = new Map<string, string>();
  const completions = new Map<string, string>();
  const record = (into: Map<string, string>) => (queue: TaskQueue) =>
    new WrappedQueue(queue, {
      send: async (messages: readonly OutgoingMessage[], send: () => Promise<void>) => {
        for (const m of messages) into.set(m.messageId ?? '?', m.body);
        await send();
      },
    });
  const s = await stacks.open({ coordinatorTasks: record(tasks), workerCompletions: record(completions) });
  const runtime = await s.run(DIAMOND, { id: 'wf-traced' });
  expect(runtime.status).toBe('completed');
  return { tasks, completions, traceparent: runtime.traceparent };
}

function byName(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

beforeEach(() => {
  trace.disable();
  exporter.reset();
});
afterAll(() => trace.disable());

describe('tracing on the memory stack', () => {
  it('without an SDK: no span, no traceparent in the runtime or any message', async () => {
    const { tasks, completions, traceparent } = await runDiamond();
    expect(traceparent).toBeNull();
    for (const body of [...tasks.values(), ...completions.values()]) expect(body).not.toContain('traceparent');
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('one trace per workflow: submit → send → process → completion handling, with links, and messages that differ only by the key', async () => {
    const untraced = await runDiamond();
    trace.setGlobalTracerProvider(provider);
    const traced = await runDiamond();
    const spans = exporter.getFinishedSpans();

    // The submit span is the root; its context is stored in the runtime.
    const [submit, ...otherSubmits] = byName(spans, 'submit diamond');
    expect(otherSubmits).toEqual([]);
    expect(submit!.kind).toBe(SpanKind.PRODUCER);
    expect(parentOf(submit!)).toBeUndefined();
    expect(traced.traceparent).toBe(formatTraceparent(submit!.spanContext()));
    const traceId = submit!.spanContext().traceId;
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));

    // One `send` PRODUCER span per dispatch, children of the submit span.
    const sends = byName(spans, 'send mem-default');
    expect(sends.map((s) => s.attributes['jobq.task']).sort()).toEqual(['a', 'b', 'c', 'd']);
    for (const send of sends) {
      expect(send.kind).toBe(SpanKind.PRODUCER);
      expect(parentOf(send)).toBe(submit!.spanContext().spanId);
      expect(send.attributes).toMatchObject({
        'messaging.system': 'azure_storage_queue',
        'messaging.destination.name': 'mem-default',
        'jobq.workflow.id': 'wf-traced',
        'jobq.attempt': 1,
      });
    }

    // One `process` CONSUMER span per delivery: child of its `send`, linked to it.
    const processes = byName(spans, 'process mem-default');
    expect(processes).toHaveLength(4);
    for (const p of processes) {
      const send = sends.find((s) => s.attributes['jobq.task'] === p.attributes['jobq.task'])!;
      expect(p.kind).toBe(SpanKind.CONSUMER);
      expect(parentOf(p)).toBe(send.spanContext().spanId);
      expect(p.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
      expect(p.attributes).toMatchObject({ 'messaging.system': 'azure_storage_queue', 'messaging.destination.name': 'mem-default' });
    }

    // The coordinator's handling of each completion: child of the worker's span, linked to it.
    const handled = byName(spans, 'process mem-workflow-completions');
    expect(handled).toHaveLength(4);
    for (const h of handled) {
      const p = processes.find((s) => s.attributes['jobq.task'] === h.attributes['jobq.task'])!;
      expect(h.kind).toBe(SpanKind.CONSUMER);
      expect(parentOf(h)).toBe(p.spanContext().spanId);
      expect(h.links.map((l) => l.context.spanId)).toEqual([p.spanContext().spanId]);
    }

    // Task messages: the untraced bytes plus `traceparent` = their send span's context.
    expect([...traced.tasks.keys()].sort()).toEqual([...untraced.tasks.keys()].sort());
    for (const [id, body] of traced.tasks) {
      const send = sends.find((s) => s.attributes['messaging.message.id'] === id)!;
      const traceparent = formatTraceparent(send.spanContext());
      expect(body).toBe(withEnvelopeTrace(untraced.tasks.get(id)!, { traceparent }));
      const ours = decodeEnvelope(body);
      const plain = decodeEnvelope(untraced.tasks.get(id)!);
      expect(ours.ok && plain.ok && ours.value).toEqual(plain.ok && { ...plain.value, traceparent });
      expect(pythonRead(body)).toEqual(pythonRead(untraced.tasks.get(id)!));
    }
    // Completions: the same, with the worker's span context; still completions, never poison.
    expect([...traced.completions.keys()].sort()).toEqual([...untraced.completions.keys()].sort());
    for (const [id, body] of traced.completions) {
      const decoded = decodeCoordinatorMessage(body);
      expect(decoded.kind).toBe('completion');
      const p = processes.find((s) => decoded.kind === 'completion' && s.attributes['jobq.task'] === decoded.completion.taskName)!;
      expect(body).toBe(withEnvelopeTrace(untraced.completions.get(id)!, { traceparent: formatTraceparent(p.spanContext()) }));
      expect(pythonRead(body)).toEqual(pythonRead(untraced.completions.get(id)!));
    }
  });

  it('a workflow not sampled at submit adds no key anywhere', async () => {
    const { AlwaysOffSampler } = await import('@opentelemetry/sdk-trace-base');
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ sampler: new AlwaysOffSampler(), spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const { tasks, completions, traceparent } = await runDiamond();
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    for (const body of [...tasks.values(), ...completions.values()]) expect(body).not.toContain('traceparent');
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('ignores a malformed traceparent in the runtime and in completions: nothing is poison, the spans start new traces', async () => {
    const garbage = (queue: TaskQueue) =>
      new WrappedQueue(queue, {
        send: (messages: readonly OutgoingMessage[]) =>
          queue.send(messages.map((m) => ({ ...m, body: withEnvelopeTrace(m.body, { traceparent: 'zz-not-one' }) }))),
      });
    const s = await stacks.open({ start: false, workerCompletions: garbage });
    const id = await s.submit(DIAMOND, { id: 'wf-malformed' });
    const loaded = (await s.store.load(id))!;
    await s.store.save(withTaskStates(loaded.runtime, [], { traceparent: '00-nothex-0-01' }), loaded.etag);
    trace.setGlobalTracerProvider(provider);
    await s.coordinator.start();
    const runtime = await s.waitFor(id, (r) => r.status === 'completed');
    expect(runtime.traceparent).toBe('00-nothex-0-01');
    expect(s.coordinator.stats()).toMatchObject({ poison: 0, completionsApplied: 4 });
    const spans = exporter.getFinishedSpans();
    for (const span of [...byName(spans, 'send mem-default'), ...byName(spans, 'process mem-workflow-completions')]) {
      expect(parentOf(span)).toBeUndefined();
      expect(span.links).toEqual([]);
    }
    expect(byName(spans, 'send mem-default')).toHaveLength(4);
    expect(byName(spans, 'process mem-workflow-completions')).toHaveLength(4);
  });

  it('counts the key in the size check: a task message that fits only without it is sent without it', async () => {
    const untraced = await runDiamond();
    const plainA = untraced.tasks.get('wf-traced/a/1')!;
    const tracedSize = messageByteLength(withEnvelopeTrace(plainA, { traceparent: `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01` }));
    trace.setGlobalTracerProvider(provider);
    for (const limit of [tracedSize, tracedSize - 1]) {
      const tasks = new Map<string, string>();
      const s = await stacks.open({
        coordinatorTasks: (queue) =>
          new (class extends WrappedQueue {
            override get maxMessageBytes(): number {
              return limit;
            }
          })(queue, {
            send: async (messages: readonly OutgoingMessage[], send: () => Promise<void>) => (
              messages.forEach((m) => tasks.set(m.messageId ?? '?', m.body)),
              send()
            ),
          }),
      });
      expect((await s.run(DIAMOND, { id: 'wf-traced' })).status).toBe('completed');
      const sentA = tasks.get('wf-traced/a/1')!;
      expect(messageByteLength(sentA)).toBeLessThanOrEqual(limit);
      if (limit === tracedSize) expect(sentA).toContain('"traceparent"');
      else expect(sentA).toBe(plainA);
      // The others moved their upstream refs to a blob; none is over the limit because of the key.
      for (const body of tasks.values()) if (messageByteLength(body) > limit) expect(body).not.toContain('traceparent');
    }
  });
});
