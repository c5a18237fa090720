import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:net';
import type { Coordinator, CoordinatorHealth, ShardBalancer } from '@jobq/coordinator';
import type { Worker, WorkerHealth } from '@jobq/worker';
import { coordinatorHealth } from './commands/workflow/coordinator';
import { workerHealth } from './commands/worker';
import { UsageError } from './errors';
import { healthFlags, LIVENESS_STALE_AFTER_IN_MS, serveHealth, startHealth, type HealthSource } from './health';
import { parsePort } from './metrics';
import { balancerHealth, defaultMemberId } from './shard-coordinator';
import { runCli } from './test-helpers/cli';

// The health endpoints (docs/operations.md#health-endpoints): the server, and what the worker and
// the coordinator report. The processes themselves are exercised by deploy/test (the image's
// entrypoint tests).

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function worker(h: Partial<WorkerHealth>): Worker {
  const full: WorkerHealth = {
    stopping: false,
    lastTickAt: 0,
    lastReceiveAt: '2026-01-01T00:00:00.000Z',
    lastReceiveError: null,
    slots: 2,
    busy: 0,
    ...h,
  };
  return { health: () => full } as unknown as Worker;
}

function coordinator(h: Partial<CoordinatorHealth>): Coordinator {
  const full: CoordinatorHealth = { phase: 'running', holds: 'lease', lastTickAt: 0, ...h };
  return { health: () => full } as unknown as Coordinator;
}

describe('serveHealth', () => {
  let blocker: Server;
  let taken = 0;
  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen({ port: 0, host: '0.0.0.0', exclusive: true }, resolve));
    taken = (blocker.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

  it('answers /livez and /readyz in JSON, 200 or 503 as the source says, 404 elsewhere', async () => {
    const state = { ready: true };
    const source: HealthSource = {
      live: () => ({ ok: true, details: { role: 'test' } }),
      ready: () => ({ ok: state.ready, details: { role: 'test', holds: 'nothing' } }),
    };
    const endpoint = await serveHealth(0, source, '127.0.0.1');
    try {
      expect(await get(`${endpoint.url}/livez`)).toEqual({ status: 200, body: { status: 'ok', role: 'test' } });
      expect(await get(`${endpoint.url}/readyz`)).toEqual({ status: 200, body: { status: 'ok', role: 'test', holds: 'nothing' } });
      state.ready = false;
      expect(await get(`${endpoint.url}/readyz?verbose`)).toEqual({
        status: 503,
        body: { status: 'unavailable', role: 'test', holds: 'nothing' },
      });
      expect((await get(`${endpoint.url}/metrics`)).status).toBe(404);
    } finally {
      await endpoint.close();
    }
  });

  it('without --health-port nothing listens', async () => {
    const notes: string[] = [];
    const source: HealthSource = { live: () => ({ ok: true, details: {} }), ready: () => ({ ok: true, details: {} }) };
    expect(await startHealth({}, source, (line) => notes.push(line))).toBeNull();
    expect(notes).toEqual([]);
    const endpoint = await startHealth({ 'health-port': 0 }, source, (line) => notes.push(line));
    expect(endpoint).not.toBeNull();
    expect(notes).toEqual([`health: serving ${endpoint!.url}/livez and ${endpoint!.url}/readyz`]);
    await endpoint!.close();
  });

  it('a taken port is an error naming it and the flag', async () => {
    const source: HealthSource = { live: () => ({ ok: true, details: {} }), ready: () => ({ ok: true, details: {} }) };
    await expect(serveHealth(taken, source)).rejects.toThrow(`health endpoint 0.0.0.0:${taken} (--health-port): the port is in use`);
  });

  it('the CLI exits 1 with one line naming the taken port; a bad port is a usage error', async () => {
    const result = await runCli(['worker', '--queue', 'tasks', '--health-port', String(taken)], {
      env: { JOBQ_QUEUES: 'UseDevelopmentStorage=true' },
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.split('\n').filter((l) => l.startsWith('jobq:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`0.0.0.0:${taken} (--health-port): the port is in use`);
    expect(() => parsePort('70000', '--health-port')).toThrow(UsageError);
    expect(() => parsePort('x', '--health-port')).toThrow('--health-port expects a port from 0 to 65535, got "x"');
    expect(healthFlags['health-port'].env).toBe('JOBQ_HEALTH_PORT');
  });
});

describe('what the worker reports', () => {
  const now = () => 1_000_000;
  it('ready after a good receive and not stopping; 503 from the stop on; not ready before the first receive or after a failed one', () => {
    expect(workerHealth(worker({}), now).ready().ok).toBe(true);
    expect(workerHealth(worker({ stopping: true }), now).ready()).toMatchObject({ ok: false, details: { stopping: true } });
    expect(workerHealth(worker({ lastReceiveAt: null }), now).ready().ok).toBe(false);
    expect(workerHealth(worker({ lastReceiveError: 'unavailable: down' }), now).ready()).toMatchObject({
      ok: false,
      details: { last_receive_error: 'unavailable: down' },
    });
    expect(workerHealth(null, now).ready().ok).toBe(false);
  });

  it('live while its loop ticked within the limit, or while every slot is busy', () => {
    expect(workerHealth(worker({ lastTickAt: now() - LIVENESS_STALE_AFTER_IN_MS }), now).live().ok).toBe(true);
    expect(workerHealth(worker({ lastTickAt: now() - LIVENESS_STALE_AFTER_IN_MS - 1 }), now).live().ok).toBe(false);
    expect(workerHealth(worker({ lastTickAt: 0, busy: 2, slots: 2 }), now).live().ok).toBe(true);
    // Draining: still live (the kubelet must not kill a draining worker), no longer ready.
    expect(workerHealth(worker({ lastTickAt: now(), stopping: true }), now).live().ok).toBe(true);
  });
});

describe('what the coordinator reports', () => {
  const now = () => 1_000_000;
  it('ready while running or waiting as a standby (holding nothing, and saying so); 503 once stopping', () => {
    expect(coordinatorHealth(coordinator({}), now).ready()).toEqual({
      ok: true,
      details: { role: 'coordinator', phase: 'running', holds: 'lease' },
    });
    expect(coordinatorHealth(coordinator({ phase: 'waiting', holds: 'nothing' }), now).ready()).toEqual({
      ok: true,
      details: { role: 'coordinator', phase: 'waiting', holds: 'nothing' },
    });
    expect(coordinatorHealth(coordinator({ phase: 'stopping' }), now).ready().ok).toBe(false);
    expect(coordinatorHealth(coordinator({ phase: 'stopped', holds: 'nothing' }), now).ready().ok).toBe(false);
    expect(coordinatorHealth(null, now).ready().ok).toBe(false);
  });

  it('live while its loop (or lease poll) ticked within the limit', () => {
    expect(coordinatorHealth(coordinator({ lastTickAt: now() }), now).live().ok).toBe(true);
    expect(coordinatorHealth(coordinator({ lastTickAt: now() - LIVENESS_STALE_AFTER_IN_MS - 1 }), now).live().ok).toBe(false);
  });
});

describe('what a sharded coordinator reports', () => {
  const now = () => 1_000_000;
  const member = { id: 'coord-1', shardCount: 4 };
  const balancer = (h: Partial<ReturnType<ShardBalancer['health']>>): Pick<ShardBalancer, 'health'> => ({
    health: () => ({ phase: 'running', shards: [0, 3], lastTickAt: now(), ...h }),
  });
  it('ready while running or as a standby (holding nothing, and saying so); 503 while starting and once stopping', () => {
    expect(balancerHealth(balancer({}), member, now).ready()).toEqual({
      ok: true,
      details: {
        role: 'coordinator',
        member_id: 'coord-1',
        shard_count: 4,
        phase: 'running',
        holds: 'shards',
        shards: [0, 3],
        last_tick_ms_ago: 0,
      },
    });
    expect(balancerHealth(balancer({ phase: 'standby', shards: [] }), member, now).ready()).toMatchObject({
      ok: true,
      details: { phase: 'standby', holds: 'nothing', shards: [] },
    });
    expect(balancerHealth(balancer({ phase: 'stopping' }), member, now).ready().ok).toBe(false);
    expect(balancerHealth(balancer({ phase: 'starting', shards: [] }), member, now).ready().ok).toBe(false);
    expect(balancerHealth(null, member, now).ready().ok).toBe(false);
  });

  it('live while its balancing loop goes round', () => {
    expect(balancerHealth(balancer({ lastTickAt: now() - 5_000 }), member, now).live().ok).toBe(true);
    expect(balancerHealth(balancer({ lastTickAt: now() - LIVENESS_STALE_AFTER_IN_MS - 1 }), member, now).live().ok).toBe(false);
    expect(balancerHealth(balancer({ phase: 'stopping', lastTickAt: 0 }), member, now).live().ok).toBe(true);
  });

  it('takes the host name as the member id, made fit for one', () => {
    expect(defaultMemberId('coordinator-7f9c-abcde')).toBe('coordinator-7f9c-abcde');
    expect(defaultMemberId('my host@corp')).toBe('my-host-corp');
    expect(defaultMemberId('_-x')).toBe('x');
    expect(defaultMemberId('')).toBe('coordinator');
  });
});
