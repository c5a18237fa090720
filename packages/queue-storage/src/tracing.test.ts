import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { useInstrumenter, type Instrumenter, type TracingContext, type TracingSpan } from '@azure/core-tracing';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { trace, type TracerProvider } from '@opentelemetry/api';
import { openStorageQueue } from './open';

/** An Azure SDK instrumenter whose spans record: it keeps the names of the spans started. */
function recordingInstrumenter(started: string[]): Instrumenter {
  const span: TracingSpan = { setStatus() {}, setAttribute() {}, end() {}, recordException() {}, isRecording: () => true, addEvent() {} };
  const context: TracingContext = { getValue: () => undefined, setValue: () => context, deleteValue: () => context };
  return {
    startSpan(name) {
      started.push(name);
      return { span, tracingContext: context };
    },
    withContext: (_context, callback, ...args) => callback(...args),
    parseTraceparentHeader: () => undefined,
    createRequestHeaders: () => ({}),
  };
}

const provider: TracerProvider = { getTracer: () => trace.getTracerProvider().getTracer('none') };

describe('openStorageQueue: the SDK request spans', () => {
  let storage: LocalStorage;
  const started: string[] = [];

  beforeAll(async () => {
    storage = await startAzurite();
    useInstrumenter(recordingInstrumenter(started));
  });
  afterAll(async () => {
    trace.disable();
    await storage?.stop();
  });
  beforeEach(() => trace.disable());

  it('run only while an OpenTelemetry tracer provider is registered', async () => {
    const queue = await openStorageQueue({ connection: { connectionString: storage.connectionString }, queueName: 'tracegate' });
    const send = async (): Promise<string[]> => {
      started.length = 0;
      await queue.send({ body: '{}' });
      return started.filter((n) => n.startsWith('HTTP '));
    };
    expect(await send()).toEqual([]);
    trace.setGlobalTracerProvider(provider);
    expect(await send()).toEqual(['HTTP POST']);
  });
});
