/**
 * `@jobq/azure-pipeline/testing`: an Azure SDK instrumenter that records the spans started and the
 * smallest OpenTelemetry tracer provider, for tests of the tracing gate.
 */
import type { Instrumenter, TracingContext, TracingSpan } from '@azure/core-tracing';
import { trace, type TracerProvider } from '@opentelemetry/api';

/** A tracing context of the kind the SDK passes around (immutable key/value map). */
class Context implements TracingContext {
  constructor(private readonly values = new Map<symbol, unknown>()) {}
  getValue(key: symbol): unknown {
    return this.values.get(key);
  }
  setValue(key: symbol, value: unknown): TracingContext {
    return new Context(new Map(this.values).set(key, value));
  }
  deleteValue(key: symbol): TracingContext {
    const values = new Map(this.values);
    values.delete(key);
    return new Context(values);
  }
}

/** An Azure SDK instrumenter whose spans record: it keeps the name of every span started. */
export function recordingInstrumenter(started: string[]): Instrumenter {
  const span: TracingSpan = { setStatus() {}, setAttribute() {}, end() {}, recordException() {}, isRecording: () => true, addEvent() {} };
  return {
    startSpan(name, options) {
      started.push(name);
      return { span, tracingContext: options?.tracingContext ?? new Context() };
    },
    withContext: (_context, callback, ...args) => callback(...args),
    parseTraceparentHeader: () => undefined,
    createRequestHeaders: () => ({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
  };
}

/** The smallest tracer provider the OpenTelemetry API accepts; the SDK's spans go to the instrumenter above. */
export const testTracerProvider: TracerProvider = { getTracer: () => trace.getTracerProvider().getTracer('none') };
