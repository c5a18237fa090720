import { createServer, type Server } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { startAzuriteProcess } from './index';
import { allRefused, portsOf, storageRoundTrip } from './test-helpers/round-trip';
import { findFreePorts, LOOPBACK } from './net';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('startAzuriteProcess (child process)', () => {
  it('serves the real SDKs, and stop() kills the child and frees the ports', async () => {
    const storage = await startAzuriteProcess();
    const ports = portsOf(storage);
    try {
      expect(new Set(ports).size).toBe(3);
      expect(storage.pid).not.toBe(process.pid);
      expect(isAlive(storage.pid)).toBe(true);
      await storageRoundTrip(storage);
    } finally {
      await Promise.all([storage.stop(), storage.stop()]);
    }
    await storage.stop();
    expect(isAlive(storage.pid)).toBe(false);
    expect(await allRefused(ports)).toBe(true);
  }, 30_000);

  it('fails with the child output when a given port is taken', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, LOOPBACK, resolve));
    const address = blocker.address();
    const taken = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const [queuePort, tablePort] = await findFreePorts(2);
      await expect(startAzuriteProcess({ blobPort: taken, queuePort: queuePort!, tablePort: tablePort! })).rejects.toThrow(
        /exited before listening[\s\S]*EADDRINUSE/,
      );
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  }, 30_000);
});
