/**
 * The admin endpoint: an HTTP server on 127.0.0.1 speaking the ATOM/XML management dialect that
 * `ServiceBusAdministrationClient` uses, for queues only, on top of a {@link QueueRegistry}.
 * Clients reach it through {@link adminPolicy} (see README.md, "Admin endpoint").
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  AtomError,
  decodeQueueDescription,
  encodeError,
  encodeNamespaceEntry,
  encodeQueueEntry,
  encodeQueueFeed,
  type AtomContext,
} from './atom';
import { verifySasToken } from './sas';
import { QueueRegistryError, type QueueInfo, type QueueRegistry } from './types';

export interface AdminServerOptions {
  /** Port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  sasKeyName: string;
  sasKey: string;
  /** Clock for token expiry and feed timestamps (default `Date.now`). */
  now?: () => number;
  /** Host shown in entry ids and links and as the namespace name (default `127.0.0.1:<port>`). */
  hostLabel?: string;
}

export interface AdminServer {
  port: number;
  /** `http://127.0.0.1:<port>`, what {@link adminPolicy} takes. */
  endpoint: string;
  /** Closes the server and every connection; idempotent. */
  stop(): Promise<void>;
}

/** Page size of queue listings when the client gives no `$top` (as the service). */
const DEFAULT_PAGE = 100;
const MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_API_VERSION = '2021-05';
const ONLY_QUEUES = 'this emulator serves queues only (topics, subscriptions and rules are not supported)';

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const REGISTRY_STATUS: Record<QueueRegistryError['code'], number> = {
  'bad-request': 400,
  'not-found': 404,
  conflict: 409,
  limit: 403,
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so that the answer still reaches the client.
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) reject(new HttpError(413, `the request body (${size} bytes) is larger than ${MAX_BODY_BYTES} bytes`));
      else resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/** The namespace name of a host: its first DNS label (`jobq` of `jobq.servicebus.windows.net`), or the IP address. */
function namespaceName(host: string): string {
  const bare = host.replace(/:\d+$/, '');
  return /^[\d.]+$/.test(bare) || bare.startsWith('[') ? bare : bare.split('.')[0]!;
}

function parseCount(value: string | null, name: string, min: number): number | undefined {
  if (value === null || value === '') return undefined;
  if (!/^\d{1,9}$/.test(value) || Number(value) < min)
    throw new HttpError(400, `${name} "${value.slice(0, 32)}" is not an integer ≥ ${min}`);
  return Number(value);
}

/**
 * Starts the admin endpoint. Every request needs an `Authorization` SAS token signed with the
 * namespace key (401 otherwise); registry refusals map to 400/404/409/403 with the service's error
 * document.
 */
export async function startAdminServer(registry: QueueRegistry, options: AdminServerOptions): Promise<AdminServer> {
  const now = options.now ?? Date.now;
  const key = { keyName: options.sasKeyName, key: options.sasKey };
  const startedAt = new Date(now());
  /** UserMetadata is the admin side's own: kept per queue incarnation (name + creation time). */
  const userMetadata = new Map<string, { createdAt: number; value: string }>();
  const sockets = new Set<Socket>();
  let port = 0;

  const metadataOf = (info: QueueInfo): string | undefined => {
    const entry = userMetadata.get(info.name.toLowerCase());
    return entry && entry.createdAt === info.createdAt.getTime() ? entry.value : undefined;
  };
  const setMetadata = (info: QueueInfo, value: string | undefined): void => {
    if (value === undefined) return;
    userMetadata.set(info.name.toLowerCase(), { createdAt: info.createdAt.getTime(), value });
  };

  const send = (res: ServerResponse, status: number, body: string, contentType = 'application/atom+xml;type=entry;charset=utf-8'): void => {
    const bytes = Buffer.from(body, 'utf8');
    res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': bytes.length });
    res.end(bytes);
  };
  const sendError = (res: ServerResponse, status: number, detail: string): void => {
    send(res, status, encodeError(status, detail), 'application/xml;charset=utf-8');
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');

    const auth = req.headers.authorization;
    if (auth === undefined)
      throw new HttpError(401, 'MissingToken: the request has no Authorization header with a SharedAccessSignature token');
    const verdict = verifySasToken(auth, key, now());
    if (!verdict.ok) throw new HttpError(401, `Unauthorized: ${verdict.reason}`);

    let segments: string[];
    try {
      segments = url.pathname
        .split('/')
        .filter((s) => s !== '')
        .map((s) => decodeURIComponent(s));
    } catch {
      throw new HttpError(400, 'the request path is not URL-encoded');
    }
    const path = segments.join('/');
    const lower = segments.map((s) => s.toLowerCase());
    const ctx: AtomContext = {
      host: options.hostLabel ?? `127.0.0.1:${port}`,
      apiVersion: url.searchParams.get('api-version') ?? DEFAULT_API_VERSION,
      now: new Date(now()),
    };

    if (segments.length === 0) throw new HttpError(404, 'no entity named in the request path');
    if (lower[0] === '$resources') {
      if (segments.length === 2 && lower[1] === 'queues') {
        if (method !== 'GET') throw new HttpError(405, `${method} is not allowed on $Resources/Queues`);
        const skip = parseCount(url.searchParams.get('$skip'), '$skip', 0) ?? 0;
        const top = parseCount(url.searchParams.get('$top'), '$top', 1) ?? DEFAULT_PAGE;
        const all = registry
          .list()
          .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : 0));
        const page = all.slice(skip, skip + top);
        const next = skip + page.length < all.length ? { skip: skip + page.length, top } : undefined;
        send(
          res,
          200,
          encodeQueueFeed(
            ctx,
            page.map((info) => ({ info, userMetadata: metadataOf(info) })),
            next,
          ),
          'application/atom+xml;type=feed;charset=utf-8',
        );
        return;
      }
      if (segments.length === 2 && ['topics', 'subscriptions', 'rules', 'eventhubs', 'relays', 'notificationhubs'].includes(lower[1]!)) {
        throw new HttpError(400, `listing ${segments[1]!}: ${ONLY_QUEUES}`);
      }
      throw new HttpError(404, `no such resource collection "${path.slice(0, 128)}"`);
    }
    if (segments.length === 1 && lower[0] === '$namespaceinfo') {
      if (method !== 'GET') throw new HttpError(405, `${method} is not allowed on $namespaceinfo`);
      send(res, 200, encodeNamespaceEntry(ctx, { name: namespaceName(ctx.host), createdAt: startedAt }));
      return;
    }
    if (lower.slice(1).includes('subscriptions')) {
      throw new HttpError(400, `"${path.slice(0, 128)}" names a subscription or rule: ${ONLY_QUEUES}`);
    }
    if (segments[0]!.startsWith('$')) throw new HttpError(404, `no such resource "${path.slice(0, 128)}"`);

    switch (method) {
      case 'GET': {
        const info = registry.get(path);
        if (!info) throw new HttpError(404, `The messaging entity '${path.slice(0, 260)}' could not be found; ${ONLY_QUEUES}.`);
        send(res, 200, encodeQueueEntry(ctx, info, metadataOf(info)));
        return;
      }
      case 'PUT': {
        const request = decodeQueueDescription(await readBody(req));
        const isUpdate = req.headers['if-match'] !== undefined;
        if (isUpdate) {
          const info = registry.update(path, request.properties);
          setMetadata(info, request.userMetadata ?? '');
          send(res, 200, encodeQueueEntry(ctx, info, metadataOf(info)));
        } else {
          const info = registry.create(path, request.properties);
          setMetadata(info, request.userMetadata);
          send(res, 201, encodeQueueEntry(ctx, info, metadataOf(info)));
        }
        return;
      }
      case 'DELETE': {
        if (!registry.delete(path)) throw new HttpError(404, `The messaging entity '${path.slice(0, 260)}' could not be found.`);
        userMetadata.delete(path.toLowerCase());
        res.writeHead(200, { 'Content-Length': 0 });
        res.end();
        return;
      }
      default:
        throw new HttpError(405, `${method} is not supported on "${path.slice(0, 128)}" (GET, PUT and DELETE are)`);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      let status = 500;
      let detail = 'internal error in the admin endpoint';
      if (err instanceof HttpError) {
        status = err.status;
        detail = err.message;
      } else if (err instanceof AtomError) {
        status = 400;
        detail = err.message;
      } else if (err instanceof QueueRegistryError) {
        status = REGISTRY_STATUS[err.code] ?? 500;
        detail = err.message;
      } else if (err instanceof Error) {
        detail = `internal error in the admin endpoint: ${err.message}`;
      }
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // Drain what the client still sends so that the connection can carry the next request.
      req.resume();
      sendError(res, status, detail);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`the admin endpoint cannot listen on 127.0.0.1:${options.port ?? 0}: the port is taken`)
          : new Error(`the admin endpoint cannot listen on 127.0.0.1:${options.port ?? 0}: ${err.message}`),
      );
    };
    server.once('error', onError);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;

  let stopping: Promise<void> | undefined;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return stopping;
    },
  };
}
