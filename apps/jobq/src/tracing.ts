import { errorMessage } from '@jobq/ports';
/**
 * Optional tracing (docs/observability.md#tracing): when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the
 * commands that run work (`worker`, `workflow coordinator`, `workflow run`, `workflow submit`,
 * `dev`) register an OpenTelemetry SDK that exports spans over OTLP/HTTP. The SDK packages are
 * optional dependencies, loaded only then: every other run loads none of them.
 */

/** The optional packages, in the order {@link startTracing} loads them. */
export const TRACING_PACKAGES = [
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
] as const;

/** The variable that turns tracing on. */
export const TRACING_ENDPOINT_VARIABLE = 'OTEL_EXPORTER_OTLP_ENDPOINT';

/** The `service.name` of a command's spans (unless `OTEL_SERVICE_NAME` says otherwise). */
export function serviceNameFor(commandId: string | undefined): string {
  if (commandId === 'worker') return 'jobq-worker';
  if (commandId === 'workflow:coordinator') return 'jobq-coordinator';
  return 'jobq';
}

/** Whether the environment asks for tracing: `OTEL_EXPORTER_OTLP_ENDPOINT` set and the SDK not disabled (`OTEL_SDK_DISABLED=true`). */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env[TRACING_ENDPOINT_VARIABLE] ?? '').trim() !== '' && (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() !== 'true';
}

/** A registered SDK: `shutdown` exports what is left and stops it. */
export interface TracingHandle {
  shutdown(): Promise<void>;
}

export interface StartTracingOptions {
  serviceName: string;
  /** `service.version` of the spans. */
  version?: string;
  env?: NodeJS.ProcessEnv;
  /** Where the one warning line goes when tracing cannot start (default stderr). */
  warn?: (line: string) => void;
  /** Loads a package (tests replace it). */
  load?: (name: string) => Promise<unknown>;
}

/* The parts of the SDK packages used here (they are optional: their types may be absent). */
interface SdkTraceNode {
  NodeTracerProvider: new (config: { resource: unknown; spanProcessors: unknown[] }) => { register(): void; shutdown(): Promise<void> };
  BatchSpanProcessor: new (exporter: unknown) => unknown;
}
interface ExporterOtlpHttp {
  OTLPTraceExporter: new () => unknown;
}
interface Resource {
  merge(other: Resource): Resource;
}
interface Resources {
  defaultResource(): Resource;
  resourceFromAttributes(attributes: Record<string, string>): Resource;
  detectResources(config: { detectors: unknown[] }): Resource;
  envDetector: unknown;
}

function isMissingModule(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND';
}

/**
 * Registers the OpenTelemetry SDK when {@link tracingWanted}: a `NodeTracerProvider` whose spans go
 * through a batch processor to the OTLP/HTTP exporter, both configured by the standard `OTEL_*`
 * variables (endpoint, headers, sampler, batch sizes…); `service.name` is `serviceName` unless
 * `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) sets it. Null when tracing is not wanted, or
 * cannot start (a package missing…): then one warning line, and the command runs untraced.
 */
export async function startTracing(options: StartTracingOptions): Promise<TracingHandle | null> {
  const env = options.env ?? process.env;
  if (!tracingWanted(env)) return null;
  const warn = options.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
  // A CommonJS require, lazily: an import() would load the ECMAScript builds of the SDK, beside the
  // CommonJS @opentelemetry/api the rest of the process uses.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const load = options.load ?? ((name: string) => Promise.resolve().then(() => require(name) as unknown));
  try {
    const [node, otlp, resources] = (await Promise.all(TRACING_PACKAGES.map((name) => load(name)))) as [
      SdkTraceNode,
      ExporterOtlpHttp,
      Resources,
    ];
    const attributes: Record<string, string> = { 'service.name': options.serviceName };
    if (options.version !== undefined) attributes['service.version'] = options.version;
    const resource = resources
      .defaultResource()
      .merge(resources.resourceFromAttributes(attributes))
      .merge(resources.detectResources({ detectors: [resources.envDetector] }));
    const provider = new node.NodeTracerProvider({ resource, spanProcessors: [new node.BatchSpanProcessor(new otlp.OTLPTraceExporter())] });
    provider.register();
    return {
      shutdown: async () => {
        try {
          await provider.shutdown();
        } catch (error) {
          warn(`jobq: exporting the last spans failed: ${errorMessage(error)}`);
        }
      },
    };
  } catch (error) {
    const why = isMissingModule(error)
      ? `the optional packages ${TRACING_PACKAGES.join(', ')} are not installed`
      : `the OpenTelemetry SDK did not start (${errorMessage(error).split('\n')[0]})`;
    warn(`jobq: warning: ${TRACING_ENDPOINT_VARIABLE} is set but ${why}; running without tracing`);
    return null;
  }
}
