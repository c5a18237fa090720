import { describe, expect, it } from '@jest/globals';
import type { ApiDeltaEvent } from '../api-types';
import { LiveFeed, POLL_INTERVAL_MS, type EventSourceLike, type LiveDeps, type LiveMode } from './live';

/** A scripted event source and a timer list advanced by hand. */
class FakeSource implements EventSourceLike {
  closed = false;
  private readonly listeners = new Map<string, Array<(e: Event) => void>>();
  addEventListener(type: string, listener: (e: Event) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  close(): void {
    this.closed = true;
  }
  emit(type: string, data?: unknown): void {
    this.emitRaw(type, data === undefined ? undefined : JSON.stringify(data));
  }
  emitRaw(type: string, data: string | undefined): void {
    const event = (data === undefined ? { type } : { type, data }) as unknown as Event;
    for (const l of this.listeners.get(type) ?? []) l(event);
  }
}

function harness() {
  const sources: FakeSource[] = [];
  const timers: Array<{ fn: () => void; ms: number; cleared: boolean }> = [];
  const deps: LiveDeps = {
    open: () => {
      const s = new FakeSource();
      sources.push(s);
      return s;
    },
    setInterval: (fn, ms) => {
      const t = { fn, ms, cleared: false };
      timers.push(t);
      return t;
    },
    clearInterval: (t) => {
      (t as { cleared: boolean }).cleared = true;
    },
  };
  const modes: LiveMode[] = [];
  const events: Array<{ event: ApiDeltaEvent; snapshot: boolean }> = [];
  const streamErrors: string[] = [];
  let polls = 0;
  const feed = new LiveFeed(
    '/api/events?workflow=w',
    {
      onEvent: (event, snapshot) => events.push({ event, snapshot }),
      onStreamError: (e) => streamErrors.push(e.message),
      onMode: (m) => modes.push(m),
      poll: () => polls++,
    },
    deps,
  );
  return { feed, sources, timers, modes, events, streamErrors, polls: () => polls };
}

const delta = (token: string): ApiDeltaEvent => ({
  workflow_id: 'w',
  token,
  status: 'running',
  counts: { pending: 0, ready: 0, running: 1, completed: 0, failed: 0, upstream_failed: 0, skipped: 0, cancelled: 0 },
  rate_per_s: null,
  eta_ms: null,
  tasks: [{ name: 'a', status: 'running', attempt_no: 1, on_worker: true, error: null }],
  groups: [],
});

describe('LiveFeed', () => {
  it('hands on snapshots and deltas, and the server error events apart from connection errors', () => {
    const h = harness();
    const s = h.sources[0]!;
    s.emit('open');
    s.emit('snapshot', delta('t1'));
    s.emit('delta', delta('t2'));
    s.emit('error', { message: 'storage: 503 from the blob service', retry_in_ms: 4000 });
    expect(h.events.map((e) => [e.event.token, e.snapshot])).toEqual([
      ['t1', true],
      ['t2', false],
    ]);
    expect(h.streamErrors).toEqual(['storage: 503 from the blob service']);
    expect(h.modes).toEqual(['live']);
  });

  it('polls every 5 s after two failed reconnects, and only then', () => {
    const h = harness();
    const s = h.sources[0]!;
    s.emit('open');
    s.emit('error'); // the drop
    s.emit('error'); // reconnect 1 failed
    expect(h.timers).toHaveLength(0);
    s.emit('open'); // a reconnect that worked resets the count
    s.emit('error');
    s.emit('error');
    expect(h.modes).toEqual(['live', 'reconnecting', 'live', 'reconnecting']);
    s.emit('error'); // reconnect 2 failed
    expect(h.modes.at(-1)).toBe('polling');
    expect(s.closed).toBe(true);
    expect(h.timers).toEqual([expect.objectContaining({ ms: POLL_INTERVAL_MS })]);
    h.timers[0]!.fn();
    h.timers[0]!.fn();
    expect(h.polls()).toBe(2);
    h.feed.close();
    expect(h.timers[0]!.cleared).toBe(true);
    expect(h.modes.at(-1)).toBe('closed');
  });

  it('ignores events whose data is not JSON', () => {
    const h = harness();
    const s = h.sources[0]!;
    s.emitRaw('delta', '{oops');
    s.emitRaw('snapshot', 'null');
    expect(h.events).toEqual([]);
  });
});
