/**
 * Tracing on vs off per task (docs/observability.md#tracing): the in-memory stores and queues, a
 * coordinator and a 4-slot worker whose tasks run no process (the workflow processor with a no-op
 * command), running workflows of `TASKS` no-op tasks (root → leaves → sink), in three modes:
 *   - `off`: no OpenTelemetry SDK registered (the API's no-op tracer: what every untraced run pays);
 *   - `sdk, not sampled`: an SDK registered whose sampler records nothing;
 *   - `sdk, sampled`: every span recorded and handed to a batch processor whose exporter drops
 *     them (the cost of making spans and carrying the context, not of sending them).
 * Per mode: CPU µs per task (process user + system time over the tasks run) and tasks/s, the
 * median of `--rounds` rounds, the modes interleaved. On a loaded machine those move by more than
 * tracing costs, so a second table times the tracing work of one task alone, in a tight loop (the
 * fastest of 5 passes): the three spans a task makes (send, process, completion handling), the
 * context put on two envelopes and read back from them, as the coordinator and the worker do it.
 * Plain text on stdout, progress on stderr.
 *
 * Usage: node dist/tracing.js [--rounds=5] [--tasks=500]
 */
import { loadavg } from 'node:os';
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { Coordinator, WorkflowClient } from '@jobq/coordinator';
import { decodeEnvelope, encodeTaskMessage, withEnvelopeTrace } from '@jobq/dag-core/wire';
import { formatTraceparent, parseTraceparent } from '@jobq/ports';
import { MemoryOutputStore, MemoryTaskQueue, MemoryWorkflowStore } from '@jobq/memory';
import { Worker, WorkflowProcessor, cancelCheckFromStore, type ShellResult } from '@jobq/worker';
import { failureText, median, table } from './report';

let rounds = 5;
let tasks = 500;
for (const arg of process.argv.slice(2)) {
  const [key, value] = arg.split('=');
  if (key === '--rounds' && value && Number(value) >= 1) rounds = Math.floor(Number(value));
  else if (key === '--tasks' && value && Number(value) >= 3) tasks = Math.floor(Number(value));
  else {
    process.stderr.write(`tracing bench: unknown argument "${arg}" (known: --rounds=N, --tasks=N)\n`);
    process.exit(2);
  }
}

const progress = (message: string) => process.stderr.write(`[tracing bench] ${message}\n`);

/** Takes every span and drops it. */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

type Mode = 'off' | 'sdk, not sampled' | 'sdk, sampled';
const MODES: Mode[] = ['off', 'sdk, not sampled', 'sdk, sampled'];

const noOp = (): Promise<ShellResult> =>
  Promise.resolve({ exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null });

/** One workflow of `tasks` no-op tasks run to the end in `mode`: CPU µs per task, tasks/s and spans exported. */
async function runOnce(mode: Mode, round: number): Promise<{ cpuUsPerTask: number; tasksPerSecond: number; spans: number }> {
  trace.disable();
  const exporter = new DroppingExporter();
  let provider: BasicTracerProvider | null = null;
  if (mode !== 'off') {
    provider = new BasicTracerProvider({
      ...(mode === 'sdk, not sampled' ? { sampler: new AlwaysOffSampler() } : {}),
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    trace.setGlobalTracerProvider(provider);
  }
  const outputs = new MemoryOutputStore({ outputsContainer: 'bench-outputs', workflowsContainer: 'bench-workflows' });
  const store = new MemoryWorkflowStore({ stateBlobs: outputs });
  const completions = new MemoryTaskQueue({ name: 'bench-workflow-completions', lockDurationInMs: 60_000 });
  const queue = new MemoryTaskQueue({ name: 'bench-default', lockDurationInMs: 60_000 });
  const worker = new Worker({
    queue,
    numWorkers: 4,
    gracePeriodInMs: 0,
    receiveWaitInMs: 20,
    maxIdleBackoffInMs: 20,
    log: () => undefined,
    processors: [
      new WorkflowProcessor({
        outputs,
        completions,
        isCancelled: cancelCheckFromStore(store),
        env: { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/bench' },
        killTimeoutInMs: 2_000,
        runCommand: noOp,
      }),
    ],
  });
  const coordinator = new Coordinator({
    store,
    completions,
    outputs,
    queues: () => queue,
    options: { receiveWaitInMs: 20, idleSleepInMs: 5, log: () => undefined },
  });
  const client = new WorkflowClient({ store, completions, outputsContainer: outputs.outputsContainer });
  const running = worker.run();
  await coordinator.start();
  const leaves = tasks - 2;
  const source = {
    name: 'traced',
    tasks: [
      { name: 'root', kwargs: { cmd: ':' } },
      ...Array.from({ length: leaves }, (_, i) => ({ name: `leaf-${i}`, depends_on: ['root'], kwargs: { cmd: ':' } })),
      { name: 'sink', depends_on: Array.from({ length: leaves }, (_, i) => `leaf-${i}`), kwargs: { cmd: ':' } },
    ],
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { workflowId } = await client.submit(
    { text: JSON.stringify(source), filename: 'traced.json' },
    { id: `wf-${round}-${mode.replace(/\W+/g, '-')}` },
  );
  for (;;) {
    const loaded = await store.load(workflowId);
    if (loaded?.runtime.status === 'completed') break;
    if (loaded?.runtime.status === 'failed') throw new Error('the workflow failed');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await coordinator.stop();
  await worker.stop({ gracePeriodInMs: 0 });
  await running;
  await provider?.forceFlush();
  await provider?.shutdown();
  trace.disable();
  return { cpuUsPerTask: (used.user + used.system) / tasks, tasksPerSecond: tasks / seconds, spans: exporter.spans };
}

/** The tracing work of one task, as the engine does it (see packages/coordinator/src/tracing.ts and packages/worker/src/tracing.ts). */
function tracingWorkOfOneTask(message: string, workflowTraceparent: string): number {
  const tracer = trace.getTracer('jobq', 'bench');
  const remote = (text: string | undefined) => {
    const parts = parseTraceparent(text);
    return parts === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { ...parts, isRemote: true });
  };
  const carried = (span: ReturnType<typeof tracer.startSpan>) => {
    if (!span.isRecording()) return undefined;
    const sc = span.spanContext();
    return (sc.traceFlags & TraceFlags.SAMPLED) === 0 ? undefined : { traceparent: formatTraceparent(sc) };
  };
  const attributes = { 'messaging.system': 'azure_storage_queue', 'messaging.destination.name': 'bench-default', 'jobq.task': 'leaf' };
  // Coordinator: the send span under the workflow's context, its context on the task message.
  const send = tracer.startSpan('send bench-default', { kind: SpanKind.PRODUCER, attributes }, remote(workflowTraceparent));
  const sendTrace = carried(send);
  const body = sendTrace === undefined ? message : withEnvelopeTrace(message, sendTrace);
  send.end();
  // Worker: the process span from the message's context, its context on the completion.
  const envelope = decodeEnvelope(body);
  const received = envelope.ok ? envelope.value.traceparent : undefined;
  const sc = parseTraceparent(received);
  const process_ = tracer.startSpan(
    'process bench-default',
    { kind: SpanKind.CONSUMER, attributes, links: sc === null ? [] : [{ context: { ...sc, isRemote: true } }] },
    remote(received),
  );
  const processTrace = carried(process_);
  process_.end();
  // Coordinator: the completion's handling.
  const handled = tracer.startSpan(
    'process bench-workflow-completions',
    { kind: SpanKind.CONSUMER, attributes },
    remote(processTrace?.traceparent),
  );
  handled.end();
  return body.length;
}

/** µs of CPU per task of {@link tracingWorkOfOneTask} in `mode`: the fastest of 5 passes of `n` tasks. */
async function isolatedCost(mode: Mode, n: number): Promise<number> {
  trace.disable();
  const exporter = new DroppingExporter();
  const provider =
    mode === 'off'
      ? null
      : new BasicTracerProvider({
          ...(mode === 'sdk, not sampled' ? { sampler: new AlwaysOffSampler() } : {}),
          spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 100_000 })],
        });
  if (provider) trace.setGlobalTracerProvider(provider);
  const message = encodeTaskMessage({ workflowId: 'wf', taskName: 'leaf', attemptNo: 1, kwargs: { cmd: ':' }, upstream: { n: ['root'] } });
  const workflow = provider
    ? formatTraceparent({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: mode === 'sdk, sampled' ? 1 : 0,
      })
    : '';
  let best = Number.POSITIVE_INFINITY;
  let sink = 0;
  for (let pass = 0; pass < 5; pass++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) sink += tracingWorkOfOneTask(message, workflow);
    const used = process.cpuUsage(cpu);
    best = Math.min(best, (used.user + used.system) / n);
    await provider?.forceFlush();
  }
  await provider?.shutdown();
  trace.disable();
  if (sink === 0) throw new Error('unreachable');
  return best;
}

async function main(): Promise<void> {
  progress(
    `${MODES.length} modes × ${rounds} rounds of a ${tasks}-task workflow (root → ${tasks - 2} leaves → sink), memory stack, 4 slots`,
  );
  await runOnce('off', -1); // warm-up
  const results = new Map<Mode, Array<Awaited<ReturnType<typeof runOnce>>>>(MODES.map((m) => [m, []]));
  for (let round = 0; round < rounds; round++) {
    for (const mode of MODES) {
      const r = await runOnce(mode, round);
      results.get(mode)!.push(r);
      progress(
        `round ${round + 1} ${mode}: ${r.cpuUsPerTask.toFixed(0)} µs CPU/task, ${r.tasksPerSecond.toFixed(0)} tasks/s, ${r.spans} spans`,
      );
    }
  }
  const off = median(results.get('off')!.map((r) => r.cpuUsPerTask));
  const rows = MODES.map((mode) => {
    const rs = results.get(mode)!;
    const cpu = median(rs.map((r) => r.cpuUsPerTask));
    return [
      mode,
      cpu.toFixed(0),
      `${cpu - off >= 0 ? '+' : ''}${(cpu - off).toFixed(0)}`,
      median(rs.map((r) => r.tasksPerSecond)).toFixed(0),
      (median(rs.map((r) => r.spans)) / tasks).toFixed(1),
    ];
  });
  process.stdout.write(
    `\nTracing on vs off per task (${tasks}-task workflow, memory stack, median of ${rounds}; load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')})\n`,
  );
  process.stdout.write(`${table(['mode', 'CPU µs/task', 'vs off', 'tasks/s', 'spans/task'], rows)}\n`);
  for (const row of rows) process.stdout.write(`tracing ${row[0]}: ${row[1]} µs CPU per task (${row[2]} vs off), ${row[3]} tasks/s\n`);

  const isolated: Array<[Mode, number]> = [];
  for (const mode of MODES) isolated.push([mode, await isolatedCost(mode, 20_000)]);
  const base = isolated[0]![1];
  process.stdout.write(`\nThe tracing work of one task alone (3 spans, 2 envelopes; fastest of 5 passes of 20 000)\n`);
  process.stdout.write(
    `${table(
      ['mode', 'CPU µs/task', 'vs off'],
      isolated.map(([mode, us]) => [mode, us.toFixed(2), `+${(us - base).toFixed(2)}`]),
    )}\n`,
  );
  for (const [mode, us] of isolated) process.stdout.write(`tracing work alone, ${mode}: ${us.toFixed(2)} µs CPU per task\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`tracing bench failed: ${failureText(error)}\n`);
  process.exit(1);
});
