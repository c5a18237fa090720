import type { WorkflowSummary } from '@jobq/ports';
import { CancelFlagCache, cancelCheckFromStore, isCancelRequested, jittered } from './cancel-flag';

describe('CancelFlagCache', () => {
  it('caches per workflow for the jittered TTL, then asks again', async () => {
    let now = 0;
    const calls: string[] = [];
    const flags = new Map<string, boolean>([
      ['a', false],
      ['b', true],
    ]);
    const cache = new CancelFlagCache(
      (id) => {
        calls.push(id);
        return Promise.resolve(flags.get(id) ?? false);
      },
      { ttlInMs: 1000, jitter: 0.25, random: () => 0, now: () => now },
    );
    expect(await cache.isCancelled('a')).toBe(false);
    expect(await cache.isCancelled('b')).toBe(true);
    flags.set('a', true);
    now = 740; // random 0 → TTL 750 ms
    expect(await cache.isCancelled('a')).toBe(false);
    now = 751;
    expect(await cache.isCancelled('a')).toBe(true);
    expect(calls).toEqual(['a', 'b', 'a']);
  });

  it('never serves "cancelled" from the cache, so a retry lifts it at once', async () => {
    let cancelled = true;
    let calls = 0;
    const cache = new CancelFlagCache(
      () => {
        calls++;
        return Promise.resolve(cancelled);
      },
      { ttlInMs: 60_000, now: () => 0 },
    );
    expect(await cache.isCancelled('w')).toBe(true);
    expect(await cache.isCancelled('w')).toBe(true);
    expect(calls).toBe(2);
    cancelled = false; // a retry newer than the cancel
    expect(await cache.isCancelled('w')).toBe(false);
    expect(await cache.isCancelled('w')).toBe(false);
    expect(calls).toBe(3);
  });

  it('shares one look-up between concurrent callers', async () => {
    let calls = 0;
    const cache = new CancelFlagCache(async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return true;
    });
    expect(await Promise.all([cache.isCancelled('w'), cache.isCancelled('w'), cache.isCancelled('w')])).toEqual([true, true, true]);
    expect(calls).toBe(1);
  });

  it('counts a failed look-up as not cancelled, logs it and does not cache it', async () => {
    const lines: string[] = [];
    let fail = true;
    const cache = new CancelFlagCache(() => (fail ? Promise.reject(new Error('table down')) : Promise.resolve(true)), {
      log: (l) => lines.push(l),
    });
    expect(await cache.isCancelled('w')).toBe(false);
    expect(lines.join('\n')).toMatch(/cancel flag of workflow "w".*table down/);
    fail = false;
    expect(await cache.isCancelled('w')).toBe(true);
  });

  it('jitters within ±jitter', () => {
    expect(jittered(1000, 0.25, () => 0)).toBe(750);
    expect(jittered(1000, 0.25, () => 0.5)).toBe(1000);
    expect(jittered(1000, 0.25, () => 0.999999)).toBe(1250);
  });
});

describe('cancelCheckFromStore', () => {
  const summary = (cancelRequestedAt: string | null, retryRequestedAt: string | null) =>
    ({ workflowId: 'w', cancelRequestedAt, retryRequestedAt }) as unknown as WorkflowSummary;

  it('is cancelled when the cancel request is newer than the retry request or there is no retry', async () => {
    const rows = new Map<string, WorkflowSummary | null>([
      ['none', summary(null, null)],
      ['cancel', summary('2026-01-01T00:00:01.000Z', null)],
      ['retried', summary('2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z')],
      ['recancel', summary('2026-01-01T00:00:03.000Z', '2026-01-01T00:00:02.000Z')],
      ['retry-only', summary(null, '2026-01-01T00:00:02.000Z')],
    ]);
    const check = cancelCheckFromStore({ getWorkflow: (id) => Promise.resolve(rows.get(id) ?? null) });
    expect(await check('none')).toBe(false);
    expect(await check('cancel')).toBe(true);
    expect(await check('retried')).toBe(false);
    expect(await check('recancel')).toBe(true);
    expect(await check('retry-only')).toBe(false);
    expect(await check('unknown')).toBe(false);
  });

  it('compares timestamps as instants', () => {
    expect(isCancelRequested('2026-01-01T00:00:02Z', '2026-01-01T00:00:01.999Z')).toBe(true);
    expect(isCancelRequested('2026-01-01T00:00:01Z', '2026-01-01T00:00:01.000Z')).toBe(false);
  });
});
