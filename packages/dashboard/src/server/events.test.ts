import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { ApiDeltaEvent } from '../api-types';
import { startDashboard, type Dashboard } from './server';
import { Fixture } from './test-helpers/fixture';
import { SseClient, get, until } from './test-helpers/http';

function fan(n: number): string {
  const lines = ['name: fan', 'tasks:', '  - name: root', "    kwargs: { cmd: 'true' }"];
  const leaves = Array.from({ length: n }, (_, i) => `leaf-${String(i).padStart(3, '0')}`);
  for (const leaf of leaves) lines.push(`  - name: ${leaf}`, '    depends_on: [root]', "    kwargs: { cmd: 'true' }");
  lines.push('  - name: end', `    depends_on: [${leaves.join(', ')}]`, "    kwargs: { cmd: 'true' }");
  return lines.join('\n');
}

describe('live updates (server-sent events)', () => {
  let f: Fixture;
  let dashboard: Dashboard;
  const clients: SseClient[] = [];
  const open = async (query: string, headers: Record<string, string> = {}): Promise<SseClient> => {
    const client = new SseClient(`${dashboard.url}api/events?${query}`, headers);
    clients.push(client);
    await client.opened;
    return client;
  };
  /** Runtime reads: full loads and reads of what changed since a token. */
  const loads = (): number => (f.counting.calls.load ?? 0) + (f.counting.calls.loadIfChanged ?? 0);

  beforeEach(async () => {
    f = new Fixture();
    dashboard = await startDashboard({
      store: f.store,
      outputs: f.outputs,
      workers: f.workers,
      clock: f.clock,
      webRoot: __dirname,
      pollIntervalMs: 2_000,
    });
    await f.submit('fan', fan(300));
    await f.apply('fan', { type: 'activate' });
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await dashboard.close();
  });

  it('sends a snapshot, then only the tasks and group counts that changed', async () => {
    const stream = await open('workflow=fan');
    expect(stream.status).toBe(200);
    const snapshot = await stream.waitFor(1);
    expect(snapshot.event).toBe('snapshot');
    const first = snapshot.data as ApiDeltaEvent;
    expect(first.tasks.map((t) => [t.name, t.status])).toEqual([['root', 'running']]);
    expect(first.groups).toEqual([{ id: '#0', counts: expect.objectContaining({ pending: 300 }), on_worker: 0 }]);
    expect(snapshot.id).toBe(first.token);

    await f.finish('fan', 'root', {});
    await f.clock.advance(2_000);
    const delta = await stream.waitFor(2);
    expect(delta.event).toBe('delta');
    const second = delta.data as ApiDeltaEvent;
    expect(second.tasks).toHaveLength(301);
    expect(second.tasks[0]).toEqual({ name: 'root', status: 'completed', attempt_no: 1, on_worker: null, error: null });
    expect(second.groups).toEqual([{ id: '#0', counts: expect.objectContaining({ pending: 0, running: 300 }), on_worker: 0 }]);
    expect(second.counts.completed).toBe(1);
    expect(delta.id).not.toBe(snapshot.id);

    await f.finish('fan', 'leaf-007', { error: 'exit code 3' });
    await f.clock.advance(2_000);
    const third = (await stream.waitFor(3)).data as ApiDeltaEvent;
    expect(third.tasks).toEqual([
      { name: 'leaf-007', status: 'failed', attempt_no: 1, on_worker: null, error: 'exit code 3' },
      { name: 'end', status: 'upstream_failed', attempt_no: 0, on_worker: null, error: 'upstream failed: "leaf-007"' },
    ]);
    expect(third.groups[0]!.counts).toMatchObject({ running: 299, failed: 1 });
  });

  it('reads the runtime once per interval however many clients watch, and not at all with none', async () => {
    const streams = await Promise.all([open('workflow=fan'), open('workflow=fan'), open('workflow=fan&level=tasks')]);
    await Promise.all(streams.map((s) => s.waitFor(1)));
    await until(() => dashboard.stats().streams === 3);
    expect(dashboard.stats().polled).toBe(1);
    const base = loads();
    const fullLoads = f.counting.calls.load ?? 0;
    for (let i = 1; i <= 5; i++) {
      await f.clock.advance(2_000);
      expect(loads()).toBe(base + i);
    }
    // Nothing changed: each poll asked what changed since the token, and read no runtime.
    expect(f.counting.calls.load ?? 0).toBe(fullLoads);
    await f.finish('fan', 'root', {});
    await f.clock.advance(2_000);
    await Promise.all(streams.map((s) => s.waitFor(2)));
    expect(loads()).toBe(base + 6);
    // A page's routes reuse the read of this interval.
    await get(`${dashboard.url}api/workflows/fan/graph`);
    await get(`${dashboard.url}api/workflows/fan`);
    expect(loads()).toBe(base + 6);

    for (const s of streams) s.close();
    await until(() => dashboard.stats().streams === 0);
    expect(dashboard.stats().polled).toBe(0);
    const after = loads();
    await f.clock.advance(60_000);
    expect(loads()).toBe(after);
  });

  it('a read a route makes between polls reaches the streams too', async () => {
    await get(`${dashboard.url}api/workflows/fan`); // read at t0
    await f.clock.advance(1_500);
    const stream = await open('workflow=fan'); // uses that read; polls at t0 + 3.5 s
    await stream.waitFor(1);
    await until(() => dashboard.stats().streams === 1);
    await f.finish('fan', 'root', {});
    await f.clock.advance(1_000);
    const base = loads();
    await get(`${dashboard.url}api/workflows/fan/graph`); // t0 + 2.5 s: the read is too old, a new one
    expect(loads()).toBe(base + 1);
    const delta = (await stream.waitFor(2)).data as ApiDeltaEvent;
    expect(delta.tasks[0]).toMatchObject({ name: 'root', status: 'completed' });
    await f.clock.advance(1_000); // the poll at t0 + 3.5 s finds nothing new: no event
    await f.finish('fan', 'leaf-002', {});
    await f.clock.advance(2_000);
    expect(((await stream.waitFor(3)).data as ApiDeltaEvent).tasks.map((t) => t.name)).toEqual(['leaf-002']);
    expect(stream.events).toHaveLength(3);
  });

  it('tells when a running task moves from its queue onto a worker (heartbeats), the runtime unchanged', async () => {
    const stream = await open('workflow=fan');
    expect(((await stream.waitFor(1)).data as ApiDeltaEvent).tasks).toEqual([
      { name: 'root', status: 'running', attempt_no: 1, on_worker: false, error: null },
    ]);
    await f.workers.beat({
      workerId: 'h-1-a',
      host: 'h',
      pid: 1,
      version: '0',
      intervalInMs: 30_000,
      stopping: false,
      startedAt: '2026-01-01T00:00:00.000Z',
      queues: [],
      running: [{ id: 'fan/root/1', since: '2026-01-01T00:00:00.000Z' }],
      runningMore: 0,
    });
    await f.clock.advance(8_000); // heartbeats are read every 10 s: nothing yet
    expect(stream.events).toHaveLength(1);
    await f.clock.advance(2_000);
    expect(((await stream.waitFor(2)).data as ApiDeltaEvent).tasks).toEqual([
      { name: 'root', status: 'running', attempt_no: 1, on_worker: true, error: null },
    ]);
  });

  it('answers a reconnect at the current token with an empty delta instead of a snapshot', async () => {
    const first = await open('workflow=fan');
    const snapshot = await first.waitFor(1);
    const again = await open('workflow=fan', { 'Last-Event-ID': snapshot.id! });
    const resumed = await again.waitFor(1);
    expect(resumed.event).toBe('delta');
    expect((resumed.data as ApiDeltaEvent).tasks).toEqual([]);
  });

  it('reports a storage error on the stream and backs off', async () => {
    const stream = await open('workflow=fan');
    await stream.waitFor(1);
    await until(() => dashboard.stats().streams === 1);
    f.counting.fail.next = new Error('socket hang up');
    await f.clock.advance(2_000);
    const error = await stream.waitFor(2);
    expect(error.event).toBe('error');
    expect(error.data).toEqual({ message: 'read the runtime of workflow "fan": the storage request failed', retry_in_ms: 4_000 });
    f.counting.fail.next = null;
    const base = loads();
    await f.clock.advance(2_000);
    expect(loads()).toBe(base);
    await f.clock.advance(2_000);
    expect(loads()).toBe(base + 1);
  });

  it('404 for an unknown workflow, 400 for a bad level', async () => {
    expect((await get(`${dashboard.url}api/events?workflow=nope`)).status).toBe(404);
    expect((await get(`${dashboard.url}api/events?workflow=fan&level=x`)).status).toBe(400);
  });
});
