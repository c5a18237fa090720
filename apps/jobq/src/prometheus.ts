import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BoundedLabel, errorMessage, METRICS, type Instruments, type MetricDefinition, type MetricName } from '@jobq/ports';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// The Prometheus side of the metrics (docs/metrics.md), loaded only when
// `--metrics-port` is given.

type PromMetric = Counter | Gauge | Histogram;

/**
 * {@link Instruments} over a prom-client registry: one metric per row of {@link METRICS}, `queue`
 * bounded to 100 values (then `other`), process metrics on. Never throws.
 */
export class PrometheusInstruments implements Instruments {
  readonly enabled = true;
  readonly registry = new Registry();
  private readonly metrics = new Map<string, PromMetric>();
  private readonly queues = new BoundedLabel();
  private warned = false;

  constructor(private readonly warn: (line: string) => void = () => undefined) {
    collectDefaultMetrics({ register: this.registry });
    for (const m of Object.values(METRICS) as MetricDefinition[]) {
      const common = { name: m.name, help: m.help, labelNames: [...m.labels], registers: [this.registry] };
      const metric =
        m.type === 'counter'
          ? new Counter(common)
          : m.type === 'gauge'
            ? new Gauge(common)
            : new Histogram({ ...common, buckets: [...(m.buckets ?? [])] });
      this.metrics.set(m.name, metric);
    }
  }

  inc(name: MetricName, labels: Readonly<Record<string, string>>, value = 1): void {
    this.safely(() => (this.metrics.get(name) as Counter).inc(this.labels(labels), value));
  }

  observe(name: MetricName, labels: Readonly<Record<string, string>>, value: number): void {
    this.safely(() => (this.metrics.get(name) as Histogram).observe(this.labels(labels), value));
  }

  set(name: MetricName, labels: Readonly<Record<string, string>>, value: number): void {
    this.safely(() => (this.metrics.get(name) as Gauge).set(this.labels(labels), value));
  }

  /** The exposition text of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  private labels(labels: Readonly<Record<string, string>>): Record<string, string> {
    return 'queue' in labels ? { ...labels, queue: this.queues.value(labels.queue) } : { ...labels };
  }

  private safely(record: () => void): void {
    try {
      record();
    } catch (error) {
      // A metric error never stops a process: reported once.
      if (!this.warned) this.warn(`metrics: recording failed (${errorMessage(error)}); later failures are not reported`);
      this.warned = true;
    }
  }
}

/** A started metrics endpoint. */
export interface MetricsEndpoint {
  instruments: PrometheusInstruments;
  /** `http://host:port/metrics`. */
  url: string;
  close(): Promise<void>;
}

/** Serves `GET /metrics` of new {@link PrometheusInstruments} on host:port. */
export async function serveMetrics(port: number, host: string, warn: (line: string) => void = () => undefined): Promise<MetricsEndpoint> {
  const instruments = new PrometheusInstruments(warn);
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    instruments.scrape().then(
      (text) => response.writeHead(200, { 'content-type': instruments.registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${errorMessage(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'the port is in use'
          : error.code === 'EADDRNOTAVAIL'
            ? 'the address is not on this machine'
            : error.message;
      // A failure of the command (exit 1), printed as one line.
      reject(new Error(`metrics endpoint ${host}:${port}: ${why}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  // Scrapes are short: the endpoint never keeps the process alive.
  server.unref();
  server.on('error', (error) => warn(`metrics endpoint: ${error.message}`));
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    instruments,
    url: `http://${shown}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
