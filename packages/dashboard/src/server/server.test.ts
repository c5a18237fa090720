import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryWorkflowStore } from '@jobq/memory';
import { isJobqError } from '@jobq/ports';
import { startDashboard, type Dashboard } from './server';
import { get, json } from './test-helpers/http';

describe('the dashboard server', () => {
  let dir: string;
  let dashboard: Dashboard;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'jobq-dash-'));
    const web = join(dir, 'web');
    mkdirSync(join(web, 'assets'), { recursive: true });
    writeFileSync(join(web, 'index.html'), '<!doctype html><title>jobq</title><script src="/assets/app-ABCDEF12.js"></script>');
    writeFileSync(join(web, 'assets', 'app-ABCDEF12.js'), 'console.log(1)');
    writeFileSync(join(dir, 'secret.txt'), 'outside');
    symlinkSync(join(dir, 'secret.txt'), join(web, 'link.txt'));
    dashboard = await startDashboard({ store: new MemoryWorkflowStore(), webRoot: web, port: 0 });
  });

  afterAll(async () => {
    await dashboard.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html on every page path, with CSP and nosniff', async () => {
    expect(dashboard.url).toBe(`http://127.0.0.1:${dashboard.port}/`);
    for (const path of ['/', '/workflows/wf-1', '/workflows/wf-1?task=a', '/workers']) {
      const answer = await get(`${dashboard.url}${path.slice(1)}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('<title>jobq</title>');
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.headers['content-security-policy']).toMatch(/^default-src 'self'/);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('serves hashed assets as immutable, and 404 for unknown files', async () => {
    const asset = await get(`${dashboard.url}assets/app-ABCDEF12.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(asset.headers['cache-control']).toContain('immutable');
    expect((await get(`${dashboard.url}assets/nope.js`)).status).toBe(404);
  });

  it('never serves a file outside the web root (.., encoded .., symlinks): 404', async () => {
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/%2e%2e/%2e%2e/secret.txt',
      '/link.txt',
      '/%00',
      '/..%5csecret.txt',
    ]) {
      const answer = await get(`http://127.0.0.1:${dashboard.port}${path}`);
      expect([path, answer.status]).toEqual([path, 404]);
      expect(answer.body).not.toContain('outside');
    }
  });

  it('answers 421 to a Host header that is not its own (DNS rebinding)', async () => {
    for (const host of ['evil.example', `evil.example:${dashboard.port}`, '127.0.0.1:1', 'localhost']) {
      const answer = await get(dashboard.url, { host });
      expect([host, answer.status]).toEqual([host, 421]);
      expect(json(answer).error.code).toBe('misdirected');
    }
    expect((await get(dashboard.url, { host: `localhost:${dashboard.port}` })).status).toBe(200);
  });

  it('answers 405 to anything but GET and HEAD', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const answer = await get(`${dashboard.url}api/workflows`, { method });
      expect([method, answer.status]).toEqual([method, 405]);
      expect(answer.headers.allow).toBe('GET, HEAD');
    }
    const head = await get(dashboard.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('refuses a host that is not loopback, and names a taken port', async () => {
    for (const host of ['0.0.0.0', '192.168.1.10', 'example.com', '::']) {
      const error = await startDashboard({ store: new MemoryWorkflowStore(), host }).catch((e: unknown) => e);
      expect(isJobqError(error, 'invalid-argument')).toBe(true);
      expect((error as Error).message).toContain('ssh -L');
    }
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const error = await startDashboard({ store: new MemoryWorkflowStore(), port }).catch((e: unknown) => e);
      expect(isJobqError(error, 'unavailable')).toBe(true);
      expect((error as Error).message).toContain(`port ${port}`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('says the UI is not built when the web root has no index.html', async () => {
    const bare = await startDashboard({ store: new MemoryWorkflowStore(), webRoot: join(dir, 'empty') });
    try {
      const answer = await get(bare.url);
      expect(answer.status).toBe(503);
      expect(answer.body).toContain('pnpm build');
    } finally {
      await bare.close();
    }
  });
});
