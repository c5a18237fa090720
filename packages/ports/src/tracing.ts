import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  createTraceState,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { EnvelopeTrace } from '@jobq/dag-core/wire';
import { cleanTracestate, formatTraceparent, messagingSystemOf, parseTraceparent } from './trace-context';

/*
 * jobq's spans (docs/observability.md#tracing), shared by the coordinator, its client and the
 * worker, through the OpenTelemetry API only: without a registered SDK every span is a no-op and
 * nothing is added to any message, runtime or task environment.
 */

let version: string | undefined | null = null;

function packageVersion(): string | undefined {
  if (version === null) {
    try {
      version = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string }).version;
    } catch {
      version = undefined;
    }
  }
  return version;
}

/** The `jobq` tracer of the registered provider (a no-op one while none is). */
export function jobqTracer(): Tracer {
  return trace.getTracer('jobq', packageVersion());
}

/** The remote span context a `traceparent` (and `tracestate`) names; undefined when malformed or absent. */
export function remoteSpanContext(traceparent: string | null | undefined, tracestate?: string): SpanContext | undefined {
  const parts = parseTraceparent(traceparent);
  if (parts === null) return undefined;
  const state = cleanTracestate(tracestate);
  let traceState;
  if (state !== undefined) {
    try {
      traceState = createTraceState(state);
    } catch {
      traceState = undefined;
    }
  }
  return {
    traceId: parts.traceId,
    spanId: parts.spanId,
    traceFlags: parts.traceFlags,
    isRemote: true,
    ...(traceState ? { traceState } : {}),
  };
}

/** A context whose parent is `spanContext` (the root context without one). */
export function traceContextOf(spanContext: SpanContext | undefined): Context {
  return spanContext === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, spanContext);
}

/**
 * What a message sent inside `span` carries: its context, only when the span is recorded and
 * sampled, so every other message stays byte for byte as it was.
 */
export function envelopeTraceOf(span: Span): EnvelopeTrace | undefined {
  if (!span.isRecording()) return undefined;
  const sc = span.spanContext();
  if ((sc.traceFlags & TraceFlags.SAMPLED) === 0 || !isSpanContextValid(sc)) return undefined;
  const traceparent = formatTraceparent(sc);
  const tracestate = sc.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** The messaging attributes of a queue: `messaging.system` by its spec, `messaging.destination.name` its name. */
export function messagingAttributes(queueSpec: string, queueName: string, operation: 'send' | 'process'): Attributes {
  return {
    'messaging.system': messagingSystemOf(queueSpec),
    'messaging.destination.name': queueName,
    'messaging.operation.type': operation,
  };
}

/** Starts a CONSUMER `process {queue}` span: a child of the message's context, linked to it. */
export function startProcessSpan(message: SpanContext | undefined, queueSpec: string, queueName: string, attributes: Attributes): Span {
  const links: Link[] = message === undefined ? [] : [{ context: message }];
  return jobqTracer().startSpan(
    `process ${queueName}`,
    { kind: SpanKind.CONSUMER, links, attributes: { ...messagingAttributes(queueSpec, queueName, 'process'), ...attributes } },
    traceContextOf(message),
  );
}

/** Ends a span, as an error with `error` (one line) when given. */
export function endSpan(span: Span, error?: string | null): void {
  if (error !== undefined && error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}

/** The `traceparent` of a span to store (the workflow's trace), or null when it has no valid context (no SDK). */
export function storedTraceparentOf(span: Span): string | null {
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? formatTraceparent(sc) : null;
}

/** Starts a PRODUCER `send {queue}` span under `parent`. */
export function startSendSpan(parent: Context, queueSpec: string, queueName: string, attributes: Attributes): Span {
  return jobqTracer().startSpan(
    `send ${queueName}`,
    { kind: SpanKind.PRODUCER, attributes: { ...messagingAttributes(queueSpec, queueName, 'send'), ...attributes } },
    parent,
  );
}

/**
 * Starts the span of a submit, `submit {name}`: a child of the caller's active span, if any. Its
 * context, stored in the runtime, makes the workflow one trace.
 */
export function startSubmitSpan(workflowId: string, name: string, tasks: number): Span {
  return jobqTracer().startSpan(`submit ${name}`, {
    kind: SpanKind.PRODUCER,
    attributes: { 'jobq.workflow.id': workflowId, 'jobq.workflow.name': name, 'jobq.workflow.tasks': tasks },
  });
}
