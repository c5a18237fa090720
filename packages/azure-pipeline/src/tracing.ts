import { tracingPolicyName, type Pipeline, type PipelinePolicy } from '@azure/core-rest-pipeline';
import { JobqError } from '@jobq/ports';

/** The environment variable that chooses whether the Azure SDK's per-request tracing runs. */
export const AZURE_SDK_TRACING_VARIABLE = 'JOBQ_AZURE_SDK_TRACING';

/**
 * When the Azure SDK's per-request tracing policy runs:
 * - `auto` (default): on each request, only while an OpenTelemetry tracer provider is registered
 *   (`trace.setGlobalTracerProvider`, which an OpenTelemetry SDK's `register()`/`start()` does);
 * - `on`: always, as the SDK does by itself (e.g. for an instrumenter that is not OpenTelemetry's);
 * - `off`: never (the policy is taken out of the pipeline).
 */
export type AzureSdkTracing = 'auto' | 'on' | 'off';

const MODES: Record<string, AzureSdkTracing> = { auto: 'auto', on: 'on', true: 'on', '1': 'on', off: 'off', false: 'off', '0': 'off' };

/** The mode set by `JOBQ_AZURE_SDK_TRACING` in `env` (`auto` when unset or empty). */
export function azureSdkTracing(env: NodeJS.ProcessEnv = process.env): AzureSdkTracing {
  const raw = (env[AZURE_SDK_TRACING_VARIABLE] ?? '').trim();
  if (raw === '') return 'auto';
  const mode = MODES[raw.toLowerCase()];
  if (mode === undefined) throw new JobqError('invalid-config', `${AZURE_SDK_TRACING_VARIABLE}="${raw}" is not one of auto, on, off`);
  return mode;
}

/** Where `@opentelemetry/api` 1.x keeps its globals; shared by every copy of the API in a process. */
const OPENTELEMETRY_GLOBALS = Symbol.for('opentelemetry.js.api.1');

/**
 * True while an OpenTelemetry tracer provider is registered in this process. Without one the
 * OpenTelemetry API hands out non-recording spans only, so the SDK's per-request spans could not
 * be recorded by anyone. Read from the API's global registry (no dependency on the API itself);
 * about 10 ns, cheap enough for every request.
 */
export function tracerProviderRegistered(): boolean {
  const api = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OPENTELEMETRY_GLOBALS];
  return api?.trace != null;
}

const GATED = Symbol('jobq.gatedTracingPolicy');

/**
 * Applies `mode` to the SDK's tracing policy in `pipeline` (a core-rest-pipeline pipeline, e.g.
 * `TableClient.pipeline` or {@link storageCorePipeline}'s): `auto` gates it so that it is skipped
 * while no tracer provider is registered, `off` removes it, `on` leaves it. True when the pipeline
 * has the policy. Calling it again on the same pipeline changes nothing more.
 *
 * Skipped, the policy costs nothing; run with the SDK's default (no-op) instrumenter it parses the
 * request URL, builds a tracing context and a span that records nothing, on every try of every
 * request. The SDK's operation spans (one per client call) are not in the pipeline and stay as
 * they are: without a registered instrumenter they are no-ops.
 */
export function gateSdkTracing(pipeline: Pipeline, mode: AzureSdkTracing = azureSdkTracing()): boolean {
  const policy: (PipelinePolicy & { [GATED]?: true }) | undefined = pipeline.getOrderedPolicies().find((p) => p.name === tracingPolicyName);
  if (policy === undefined) return false;
  if (mode === 'on' || policy[GATED]) return true;
  if (mode === 'off') {
    pipeline.removePolicy({ name: tracingPolicyName });
    return true;
  }
  // The gate goes into the SDK's own policy object (made for this pipeline alone), so the policy
  // keeps its place: after the retries (once per try), before the redirects.
  const traced = policy.sendRequest.bind(policy);
  policy.sendRequest = (request, next) => (tracerProviderRegistered() ? traced(request, next) : next(request));
  policy[GATED] = true;
  return true;
}
