import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { cleanEnv, runCli } from './test-helpers/cli';
import { serviceNameFor, startTracing, TRACING_PACKAGES, tracingWanted } from './tracing';

const DIAMOND = join(__dirname, '..', '..', '..', 'examples', 'diamond.yaml');
const RECORD_LOADS = join(__dirname, 'test-helpers', 'record-otel-loads.cjs');

describe('startTracing', () => {
  it('is wanted only with OTEL_EXPORTER_OTLP_ENDPOINT set and the SDK not disabled', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });

  it('names the service by the command', () => {
    expect(serviceNameFor('worker')).toBe('jobq-worker');
    expect(serviceNameFor('workflow:coordinator')).toBe('jobq-coordinator');
    expect(serviceNameFor('workflow:run')).toBe('jobq');
  });

  it('loads nothing without the endpoint', async () => {
    const loaded: string[] = [];
    expect(await startTracing({ serviceName: 'jobq', env: {}, load: (name) => Promise.resolve(loaded.push(name)) })).toBeNull();
    expect(loaded).toEqual([]);
  });

  it('with a package missing: one warning line, and the command runs untraced', async () => {
    const warnings: string[] = [];
    const missing = (name: string): Promise<unknown> =>
      name === TRACING_PACKAGES[1]
        ? Promise.reject(Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' }))
        : Promise.resolve({});
    const handle = await startTracing({
      serviceName: 'jobq',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' },
      warn: (l) => warnings.push(l),
      load: missing,
    });
    expect(handle).toBeNull();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^jobq: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but the optional packages .* are not installed; running without tracing$/,
    );
  });
});

/** A tiny OTLP/HTTP sink: records each request's path and JSON body. */
function startSink(): Promise<{ server: Server; url: string; requests: Array<{ path: string; body: string }> }> {
  const requests: Array<{ path: string; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests })),
  );
}

interface OtlpSpan {
  name: string;
  kind: number;
}

/** The service names and span names of OTLP/JSON export requests. */
function exported(bodies: readonly string[]): { services: Set<string>; spans: OtlpSpan[] } {
  const services = new Set<string>();
  const spans: OtlpSpan[] = [];
  for (const body of bodies) {
    const doc = JSON.parse(body) as {
      resourceSpans: Array<{
        resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
        scopeSpans: Array<{ spans: OtlpSpan[] }>;
      }>;
    };
    for (const rs of doc.resourceSpans) {
      const name = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
      if (name !== undefined) services.add(name);
      for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
  }
  return { services, spans };
}

describe('jobq workflow run traced (a local OTLP sink)', () => {
  let sink: Awaited<ReturnType<typeof startSink>>;
  beforeAll(async () => {
    sink = await startSink();
  });
  afterAll(() => new Promise<void>((resolve) => sink.server.close(() => resolve())));

  it('posts the spans of the diamond to /v1/traces when OTEL_EXPORTER_OTLP_ENDPOINT is set; loads no SDK package without it', async () => {
    const traced = await runCli(['workflow', 'run', DIAMOND, '--json'], {
      env: cleanEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, NODE_OPTIONS: `--require ${RECORD_LOADS}` }),
    });
    expect(traced.code).toBe(0);
    expect(traced.stderr).toContain('otel-load: @opentelemetry/sdk-trace-node');
    expect(sink.requests.length).toBeGreaterThan(0);
    expect(new Set(sink.requests.map((r) => r.path))).toEqual(new Set(['/v1/traces']));
    const { services, spans } = exported(sink.requests.map((r) => r.body));
    expect([...services]).toEqual(['jobq']);
    const names = spans.map((s) => s.name);
    expect(names.filter((n) => n === 'submit diamond')).toHaveLength(1);
    expect(names.filter((n) => n.startsWith('send '))).toHaveLength(4);
    expect(names.filter((n) => n.startsWith('process ') && !n.includes('completions'))).toHaveLength(4);
    expect(names.filter((n) => n.startsWith('process ') && n.includes('completions'))).toHaveLength(4);

    sink.requests.length = 0;
    const untraced = await runCli(['workflow', 'run', DIAMOND, '--json'], { env: cleanEnv({ NODE_OPTIONS: `--require ${RECORD_LOADS}` }) });
    expect(untraced.code).toBe(0);
    expect(untraced.stderr).not.toContain('otel-load:');
    expect(sink.requests).toEqual([]);
  });
});
