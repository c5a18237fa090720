import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Flags } from '@oclif/core';
import { errorMessage } from '@jobq/ports';
import { closeWhenDone } from './closing';
import { parsePort } from './metrics';

// The health endpoints of `worker` and `workflow coordinator` (docs/operations.md#health-endpoints):
// GET /livez and GET /readyz, JSON, served only when `--health-port` is given.

/** `--health-port`, on `worker` and `workflow coordinator`. */
export const healthFlags = {
  'health-port': Flags.custom<number>({
    description:
      'Serve GET /livez and GET /readyz (JSON; /readyz is 503 from the first SIGTERM) on this port of every interface (0: a free port; the address is printed on stderr) [env: JOBQ_HEALTH_PORT]',
    env: 'JOBQ_HEALTH_PORT',
    helpGroup: 'HEALTH',
    parse: (input) => Promise.resolve(parsePort(input, '--health-port')),
  })(),
};

/** One probe's answer: `ok` → 200, else 503; `details` go into the JSON body. */
export interface ProbeAnswer {
  ok: boolean;
  details: Readonly<Record<string, unknown>>;
}

/** What the endpoints ask at each request. */
export interface HealthSource {
  /** Liveness: the process's loop ticked recently. */
  live(): ProbeAnswer;
  /** Readiness: it can take work and is not stopping. */
  ready(): ProbeAnswer;
}

/** A started health endpoint. */
export interface HealthEndpoint {
  /** `http://host:port`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** How long a loop may go without a tick before /livez says so (docs/operations.md#health-endpoints). */
export const LIVENESS_STALE_AFTER_IN_MS = 300_000;

/**
 * Serves `GET /livez` and `GET /readyz` of `source` on host:port: 200 with `{"status":"ok",…}` or
 * 503 with `{"status":"unavailable",…}`; anything else is a 404. A port in use is a failure naming
 * it (exit 1). The endpoint never keeps the process alive.
 */
export async function serveHealth(
  port: number,
  source: HealthSource,
  host = '0.0.0.0',
  warn: (line: string) => void = () => undefined,
): Promise<HealthEndpoint> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    const probe = path === '/livez' ? () => source.live() : path === '/readyz' ? () => source.ready() : null;
    if (request.method !== 'GET' || probe === null) {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end(`${JSON.stringify({ error: 'not found: GET /livez or GET /readyz' })}\n`);
      return;
    }
    let answer: ProbeAnswer;
    try {
      answer = probe();
    } catch (error) {
      answer = { ok: false, details: { error: errorMessage(error) } };
    }
    response
      .writeHead(answer.ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
      .end(`${JSON.stringify({ status: answer.ok ? 'ok' : 'unavailable', ...answer.details })}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'the port is in use'
          : error.code === 'EADDRNOTAVAIL'
            ? 'the address is not on this machine'
            : error.message;
      reject(new Error(`health endpoint ${host}:${port} (--health-port): ${why}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.unref();
  server.on('error', (error) => warn(`health endpoint: ${error.message}`));
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Starts the endpoints when `--health-port` is given (printing the address on stderr); nothing listens otherwise. */
export async function startHealth(
  flags: { 'health-port'?: number | undefined },
  source: HealthSource,
  note: (line: string) => void,
): Promise<HealthEndpoint | null> {
  if (flags['health-port'] === undefined) return null;
  const endpoint = await serveHealth(flags['health-port'], source, '0.0.0.0', note);
  closeWhenDone(() => endpoint.close());
  note(`health: serving ${endpoint.url}/livez and ${endpoint.url}/readyz`);
  return endpoint;
}
