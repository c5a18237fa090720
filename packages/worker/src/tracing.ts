import type { EnvelopeTrace } from '@jobq/dag-core/wire';

/**
 * Gives a task the trace context of its attempt: `TRACEPARENT` (and `TRACESTATE`, removed when
 * there is none) when `trace` is given; `env` is left as it is otherwise.
 */
export function setTraceEnvironment(env: NodeJS.ProcessEnv, trace: EnvelopeTrace | undefined): void {
  if (trace === undefined) return;
  env.TRACEPARENT = trace.traceparent;
  if (trace.tracestate !== undefined && trace.tracestate !== '') env.TRACESTATE = trace.tracestate;
  else delete env.TRACESTATE;
}
