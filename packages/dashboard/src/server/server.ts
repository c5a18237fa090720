import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { JobqError, realClock, type Clock, type OutputStore, type TaskQueue, type WorkerRegistry, type WorkflowStore } from '@jobq/ports';
import type { WorkflowClient } from '@jobq/coordinator';
import { Api } from './api';
import { HttpError, sendBytes, sendError, sendText } from './http-util';
import { defaultWebRoot, readStatic } from './static-files';

/** What {@link startDashboard} is handed: the deployment's ports, and where to listen. */
export interface DashboardOptions {
  /** Runtimes, index rows (the list) and task rows. */
  store: WorkflowStore;
  /** Outputs and task logs; without it the output and log panels hide. */
  outputs?: OutputStore | null;
  /** Worker heartbeats; without it the workers page and the on-worker split hide. */
  workers?: WorkerRegistry | null;
  /** The queue of a queue spec (opened on demand), for the explain reasons that peek queues. */
  queues?: ((queueSpec: string) => TaskQueue | Promise<TaskQueue> | undefined) | null;
  /** For `explain` reasons; without it the drawer shows none. */
  client?: WorkflowClient | null;
  /** A loopback name or address (default 127.0.0.1); any other is refused. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** How often a watched runtime is read (default 2 000 ms), once for all the clients watching it. */
  pollIntervalMs?: number;
  /** How long a page of the workflow list is kept for every client (default 10 000 ms). */
  listCacheMs?: number;
  /** The built web UI (default: the package's `dist/web`). */
  webRoot?: string;
  /** Default: the real clock. Tests hand in a VirtualClock. */
  clock?: Clock;
}

/** A running dashboard. */
export interface Dashboard {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  host: string;
  port: number;
  /** Open event streams, and workflows being polled for them. */
  stats(): { streams: number; polled: number };
  /** Ends every event stream, stops polling and closes the server. */
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** True for a name or address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (LOOPBACK_NAMES.has(bare.toLowerCase())) return true;
  if (isIP(bare) === 4) return bare.split('.')[0] === '127';
  return false;
}

/** The paths the web UI routes itself (they all get `index.html`). */
function isPagePath(path: string): boolean {
  return path === '/' || path === '/workers' || /^\/workflows\/[^/]+\/?$/.test(path);
}

/**
 * Starts the read-only dashboard (packages/dashboard/README.md): the JSON API under `/api/`, the
 * event stream, and the web UI's files. Rejects with `invalid-argument` for a host that is not
 * loopback and `unavailable` when the port is taken.
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) {
    throw new JobqError(
      'invalid-argument',
      `dashboard host "${host}" is not a loopback address: the dashboard listens on this machine only (reach it from elsewhere with ssh -L or a port-forward)`,
    );
  }
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new JobqError('invalid-argument', `dashboard port ${port} is not a port number (0–65535)`);
  const webRoot = options.webRoot ?? defaultWebRoot();
  const clock = options.clock ?? realClock;
  let allowedHosts = new Set<string>();
  const api = new Api({ ...options, clock });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const hostHeader = (req.headers.host ?? '').toLowerCase();
    if (!allowedHosts.has(hostHeader)) {
      sendError(res, req, 421, 'misdirected', `Host "${hostHeader.slice(0, 100)}" is not this dashboard's (use the URL it printed)`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(
        res,
        req,
        405,
        'method-not-allowed',
        `${req.method ?? '?'} is not allowed: the dashboard is read-only (GET and HEAD only)`,
        { Allow: 'GET, HEAD' },
      );
      return;
    }
    let url: URL;
    let path: string;
    try {
      url = new URL(req.url ?? '/', 'http://dashboard.invalid');
      path = decodeURIComponent(url.pathname);
    } catch {
      sendError(res, req, 400, 'bad-request', 'the request path is not a valid URL');
      return;
    }
    if (path === '/api' || path.startsWith('/api/')) {
      await api.handle(req, res, path, url.searchParams);
      return;
    }
    if (isPagePath(path)) {
      const index = await readStatic(webRoot, '/index.html');
      if (!index) {
        sendText(res, req, 503, 'the dashboard web UI is not built (run pnpm build)');
        return;
      }
      sendBytes(res, req, 200, index.body, { 'Content-Type': index.contentType, 'Cache-Control': 'no-cache' });
      return;
    }
    const file = await readStatic(webRoot, path);
    if (!file || path === '/index.html') {
      sendText(res, req, 404, `not found: ${path.slice(0, 200)}`);
      return;
    }
    sendBytes(res, req, 200, file.body, {
      'Content-Type': file.contentType,
      'Cache-Control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof HttpError) sendError(res, req, error.status, error.code, error.message);
      else sendError(res, req, 500, 'internal', 'the dashboard failed to answer this request');
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolvePromise, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      if (error.code === 'EADDRINUSE')
        reject(new JobqError('unavailable', `port ${port} on ${host} is taken: pick another with --port (0 picks a free one)`));
      else if (error.code === 'EACCES')
        reject(new JobqError('auth', `may not listen on port ${port} on ${host} (ports below 1024 need privileges)`));
      else reject(new JobqError('unavailable', `cannot listen on ${host}:${port}: ${error.code ?? error.message}`));
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolvePromise();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });

  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  allowedHosts = new Set([`${urlHost.toLowerCase()}:${boundPort}`, `localhost:${boundPort}`]);
  const url = `http://${urlHost}:${boundPort}/`;
  let closed: Promise<void> | null = null;
  return {
    url,
    host,
    port: boundPort,
    stats: () => api.stats(),
    close(): Promise<void> {
      closed ??= (async () => {
        api.close();
        await new Promise<void>((resolvePromise) => {
          server.close(() => resolvePromise());
          server.closeAllConnections();
        });
      })();
      return closed;
    },
  };
}
