import { createConnection, createServer, type Server } from 'node:net';

/** The loopback address every local service binds to. */
export const LOOPBACK = '127.0.0.1';

/**
 * Picks `count` distinct free TCP ports on the loopback interface by binding servers to port 0 and
 * closing them again. Another process may take a port before the caller binds it (a small race the
 * caller has to tolerate, e.g. by retrying).
 */
export async function findFreePorts(count: number, host = LOOPBACK): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    // Hold all of them open at once so the ports are distinct.
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(await listenOnRandomPort(server, host));
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => closeNetServer(server)));
  }
}

function listenOnRandomPort(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error(`unexpected server address ${String(address)}`));
        return;
      }
      resolve(address.port);
    });
  });
}

function closeNetServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}

/**
 * Resolves `true` if a TCP connection to `host:port` is accepted within `timeoutMs`, `false` if it is
 * refused, reset or times out. The probe connection is closed right away.
 */
export function canConnect(port: number, host = LOOPBACK, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    const done = (ok: boolean): void => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
