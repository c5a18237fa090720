import { Flags } from '@oclif/core';
import { noopInstruments, type Instruments } from '@jobq/ports';
import type { OpenStorageQueueOptions } from '@jobq/queue-storage';
import type { OpenWorkflowStoreOptions, TablePipelinePolicy } from '@jobq/store-azure';
import { closeWhenDone } from './closing';
import { UsageError } from './errors';

// The Prometheus endpoint of the long-running commands (docs/metrics.md). The worker
// and the coordinator record through `Instruments`; only ./prometheus knows prom-client.

/** `--metrics-port` and `--metrics-host`, on `worker`, `workflow coordinator`, `dev` and `workflow run`. */
export const metricsFlags = {
  'metrics-port': Flags.custom<number>({
    description:
      'Serve Prometheus metrics on GET /metrics at this port (0: a free port; the address is printed on stderr) [env: JOBQ_METRICS_PORT]',
    env: 'JOBQ_METRICS_PORT',
    helpGroup: 'METRICS',
    parse: (input) => Promise.resolve(parseMetricsPort(input)),
  })(),
  'metrics-host': Flags.string({
    description: 'Address the metrics endpoint listens on (0.0.0.0 in a container) [env: JOBQ_METRICS_HOST]',
    env: 'JOBQ_METRICS_HOST',
    default: '127.0.0.1',
    helpGroup: 'METRICS',
  }),
};

/** A port from 0 to 65535, else a usage error naming `flag`. */
export function parsePort(text: string, flag: string): number {
  const trimmed = text.trim();
  if (!/^\d{1,5}$/.test(trimmed) || Number(trimmed) > 65_535) throw new UsageError(`${flag} expects a port from 0 to 65535, got "${text}"`);
  return Number(trimmed);
}

/** A port from 0 to 65535, else a usage error. */
export function parseMetricsPort(text: string): number {
  return parsePort(text, '--metrics-port');
}

/** The class of an HTTP status (`2xx` …), or `error` when no response came. */
function statusClass(status: number | undefined): string {
  return status === undefined || status < 100 || status > 599 ? 'error' : `${Math.floor(status / 100)}xx`;
}

type BlobPolicy = NonNullable<OpenWorkflowStoreOptions['blobPolicies']>[number];
type QueuePolicy = NonNullable<OpenStorageQueueOptions['policies']>[number];

/** Pipeline policies that count storage requests in `jobq_storage_requests_total` (as the benchmark counts transactions). */
export function storageRequestPolicies(instruments: Instruments): {
  blob: BlobPolicy[];
  table: TablePipelinePolicy[];
  queue: QueuePolicy[];
} {
  if (!instruments.enabled) return { blob: [], table: [], queue: [] };
  const count = (service: string, method: string, status: number | undefined) =>
    instruments.inc('jobq_storage_requests_total', { service, method: method.toUpperCase(), status_class: statusClass(status) });
  const legacy = (service: string): BlobPolicy => ({
    create: (next) => ({
      sendRequest: async (request) => {
        try {
          const response = await next.sendRequest(request);
          count(service, request.method, response.status);
          return response;
        } catch (error) {
          count(service, request.method, (error as { statusCode?: number }).statusCode);
          throw error;
        }
      },
    }),
  });
  const table: TablePipelinePolicy = {
    name: 'jobq-storage-request-metrics',
    sendRequest: async (request, next) => {
      try {
        const response = await next(request);
        count('table', request.method, response.status);
        return response;
      } catch (error) {
        count('table', request.method, (error as { statusCode?: number }).statusCode);
        throw error;
      }
    },
  };
  return { blob: [legacy('blob')], table: [table], queue: [legacy('queue')] };
}

/** The parsed metrics flags. */
export interface MetricsFlagValues {
  'metrics-port'?: number | undefined;
  'metrics-host'?: string | undefined;
}

/**
 * Starts the endpoint when `--metrics-port` is given and prints its address on stderr; returns the
 * instruments to record through ({@link noopInstruments} without the flag). A port in use (or any
 * listen error) is a failure with one line (exit 1). prom-client is loaded only then.
 */
export async function startMetrics(flags: MetricsFlagValues, note: (line: string) => void): Promise<Instruments> {
  if (flags['metrics-port'] === undefined) return noopInstruments;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS require keeps the load lazy (an import() would load it as ECMAScript)
  const { serveMetrics } = require('./prometheus') as typeof import('./prometheus');
  const endpoint = await serveMetrics(flags['metrics-port'], flags['metrics-host'] ?? '127.0.0.1', note);
  closeWhenDone(() => endpoint.close());
  note(`metrics: serving ${endpoint.url}`);
  return endpoint.instruments;
}
