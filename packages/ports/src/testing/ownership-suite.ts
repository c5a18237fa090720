import { afterEach, describe, expect, it } from './jest-globals';
import { isJobqError } from '../errors';
import { MEMBER_LIVE_FOR_MS, type OwnershipStore, type ShardClaim } from '../ownership';

/** A fresh deployment for one test (its own prefix), and how to reach it. */
export interface OwnershipStoreFixture {
  /** A store of the deployment, as one coordinator process has it. */
  store: OwnershipStore;
  /** Another store of the same deployment: another coordinator process. */
  another(): Promise<OwnershipStore>;
  /** Writes the manifest blob's text as is, behind the stores' backs (a manifest of a newer version). */
  writeManifestText(text: string): Promise<void>;
  /**
   * Moves the store's clock forward. Optional: with it the suite checks that members stop being
   * live, and leases run out, by the store's time.
   */
  advance?: (ms: number) => Promise<void>;
  /**
   * Makes `store`'s process die: it renews nothing any more, so its leases run out after
   * `leaseDurationInMs` of store time. Optional (with {@link advance}); without it lease expiry is
   * not checked here (on Azure, a 15 s lease is too slow for the suite: its adapter's own tests
   * break the lease instead).
   */
  crash?: (store: OwnershipStore) => void;
  /** The lease duration of the stores (with {@link crash}). */
  leaseDurationInMs?: number;
  dispose(): Promise<void>;
}

/** Options of {@link describeOwnershipStoreContract}. */
export interface OwnershipStoreContractOptions {
  /** Per-test timeout. Default 30 s. */
  timeoutInMs?: number;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : `not a JobqError: ${String(error)}`;
  }
  return undefined;
}

/** Waits (up to `withinMs` of real time, polling) for `signal` to fire: a broken lease is noticed at its holder's next renewal. */
async function firedWithin(signal: AbortSignal, withinMs: number): Promise<boolean> {
  const until = Date.now() + withinMs;
  while (!signal.aborted && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 25));
  return signal.aborted;
}

/** The contract of {@link OwnershipStore} (docs/sharding.md), as jest tests. */
export function describeOwnershipStoreContract(
  label: string,
  open: () => Promise<OwnershipStoreFixture>,
  options: OwnershipStoreContractOptions = {},
): void {
  describe(`OwnershipStore contract: ${label}`, () => {
    let fixture: OwnershipStoreFixture | undefined;
    const claims: ShardClaim[] = [];
    const fresh = async (): Promise<OwnershipStoreFixture> => {
      fixture = await open();
      return fixture;
    };
    afterEach(async () => {
      for (const claim of claims.splice(0)) await claim.lease.release();
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 30_000;
    const held = (claim: ShardClaim | null): ShardClaim | null => {
      if (claim) claims.push(claim);
      return claim;
    };

    it(
      'reads a deployment without a manifest as one free shard',
      async () => {
        const { store } = await fresh();
        expect(await store.readManifest()).toBeNull();
        const view = await store.list();
        expect(view.manifest).toEqual({ version: 1, shards: 1 });
        expect(view.shards).toEqual([{ index: 0, leased: false, owner: null, epoch: 0 }]);
        expect(view.members).toEqual([]);
        expect(view.serverTime).toBeInstanceOf(Date);
        expect(Number.isFinite(view.serverTime.getTime())).toBe(true);
      },
      timeout,
    );

    it(
      'creates the manifest once: of two racing creators one wins, and both see its manifest',
      async () => {
        const f = await fresh();
        const other = await f.another();
        const [a, b] = await Promise.all([f.store.ensureManifest(4), other.ensureManifest(8)]);
        expect(a).toEqual(b);
        expect([4, 8]).toContain(a.shards);
        expect(a.version).toBe(1);
        const read = await other.readManifest();
        expect(read?.manifest).toEqual(a);
        expect(typeof read?.etag).toBe('string');
        // Later creators get the one there, whatever count they ask for.
        expect(await f.store.ensureManifest(16)).toEqual(a);
        const view = await f.store.list();
        expect(view.manifest).toEqual(a);
        expect(view.shards.map((s) => s.index)).toEqual(Array.from({ length: a.shards }, (_, i) => i));
        expect(await codeOf(f.store.ensureManifest(3 as never))).toBe('invalid-argument');
      },
      timeout,
    );

    it(
      'grows the manifest by a multiple, only from the ETag read and only while no shard lease is held',
      async () => {
        const f = await fresh();
        const { store } = f;
        // No manifest: '' stands for "none yet".
        expect(await store.growManifest(2, '')).toEqual({ version: 1, shards: 2 });
        expect(await codeOf(store.growManifest(4, ''))).toBe('conflict');
        const first = await store.readManifest();
        expect(first?.manifest.shards).toBe(2);
        expect(await codeOf(store.growManifest(2, first!.etag))).toBe('invalid-argument');
        expect(await codeOf(store.growManifest(1, first!.etag))).toBe('invalid-argument');
        expect(await codeOf(store.growManifest(6 as never, first!.etag))).toBe('invalid-argument');
        const claim = held(await (await f.another()).claim(1, 'holder'));
        expect(claim).not.toBeNull();
        expect(await codeOf(store.growManifest(8, first!.etag))).toBe('lease-held');
        expect((await store.readManifest())?.manifest.shards).toBe(2);
        await claim!.lease.release();
        expect(await store.growManifest(8, first!.etag)).toEqual({ version: 1, shards: 8 });
        expect(await codeOf(store.growManifest(16, first!.etag))).toBe('conflict');
        const view = await store.list();
        expect(view.manifest.shards).toBe(8);
        // Shard 1 keeps its history; the new shards start unclaimed.
        expect(view.shards[1]).toEqual({ index: 1, leased: false, owner: 'holder', epoch: 1 });
        expect(view.shards[7]).toEqual({ index: 7, leased: false, owner: null, epoch: 0 });
      },
      timeout,
    );

    it(
      'reads the manifest conditionally: unchanged while it is at the ETag given (or still absent), else the new one',
      async () => {
        const f = await fresh();
        const { store } = f;
        expect(await store.readManifestIfChanged(null)).toBe('unchanged');
        await (await f.another()).ensureManifest(2);
        const first = await store.readManifestIfChanged(null);
        expect(first).toEqual({ manifest: { version: 1, shards: 2 }, etag: expect.any(String) });
        const { etag } = first as { etag: string };
        expect(etag).toBe((await store.readManifest())?.etag);
        expect(await store.readManifestIfChanged(etag)).toBe('unchanged');
        await store.growManifest(8, etag);
        const grown = await store.readManifestIfChanged(etag);
        expect(grown).toEqual({ manifest: { version: 1, shards: 8 }, etag: expect.any(String) });
        expect((grown as { etag: string }).etag).not.toBe(etag);
        expect(await store.readManifestIfChanged((grown as { etag: string }).etag)).toBe('unchanged');
        await f.writeManifestText(JSON.stringify({ version: 2, shards: 4 }));
        expect(await codeOf(store.readManifestIfChanged((grown as { etag: string }).etag))).toBe('unsupported');
      },
      timeout,
    );

    it(
      'refuses a manifest of an unknown version as unsupported, everywhere it is read',
      async () => {
        const f = await fresh();
        await f.writeManifestText(JSON.stringify({ version: 2, shards: 4, more: true }));
        for (const call of [f.store.readManifest(), f.store.list(), f.store.ensureManifest(4), f.store.growManifest(8, '*')]) {
          expect(await codeOf(call)).toBe('unsupported');
        }
      },
      timeout,
    );

    it(
      'claims a shard: leased, owned, epoch one higher; a second claimer gets null; a release frees it and a reclaim counts on',
      async () => {
        const f = await fresh();
        const a = f.store;
        const b = await f.another();
        await a.ensureManifest(4);
        const claim = held(await a.claim(3, 'member-a'));
        expect(claim).toMatchObject({ shard: 3, epoch: 1, owner: 'member-a' });
        expect(claim!.lease.lost.aborted).toBe(false);
        expect((await b.list()).shards[3]).toEqual({ index: 3, leased: true, owner: 'member-a', epoch: 1 });
        expect(await b.claim(3, 'member-b')).toBeNull();
        expect(await a.claim(3, 'member-a')).toBeNull();
        expect((await b.list()).shards[3]).toEqual({ index: 3, leased: true, owner: 'member-a', epoch: 1 });
        await a.release(3);
        await a.release(3);
        await a.release(2);
        expect(claim!.lease.lost.aborted).toBe(false);
        expect((await b.list()).shards[3]).toEqual({ index: 3, leased: false, owner: 'member-a', epoch: 1 });
        const again = held(await b.claim(3, 'member-b'));
        expect(again).toMatchObject({ shard: 3, epoch: 2, owner: 'member-b' });
        expect((await a.list()).shards).toEqual([
          { index: 0, leased: false, owner: null, epoch: 0 },
          { index: 1, leased: false, owner: null, epoch: 0 },
          { index: 2, leased: false, owner: null, epoch: 0 },
          { index: 3, leased: true, owner: 'member-b', epoch: 2 },
        ]);
        expect(await codeOf(a.claim(16, 'member-a'))).toBe('invalid-argument');
        expect(await codeOf(a.claim(0, 'no/slash'))).toBe('invalid-argument');
      },
      timeout,
    );

    it(
      'lets exactly one of two racing claimers have a shard',
      async () => {
        const f = await fresh();
        const b = await f.another();
        const results = await Promise.all([f.store.claim(0, 'member-a'), b.claim(0, 'member-b')]);
        results.forEach(held);
        const winners = results.filter((c): c is ShardClaim => c !== null);
        expect(winners).toHaveLength(1);
        expect(winners[0]!.epoch).toBe(1);
        expect((await f.store.list()).shards[0]).toEqual({ index: 0, leased: true, owner: winners[0]!.owner, epoch: 1 });
      },
      timeout,
    );

    it(
      'breaks a lease: its holder loses it and another member claims it with the next epoch',
      async () => {
        const f = await fresh();
        const b = await f.another();
        await f.store.ensureManifest(2);
        const claim = held(await f.store.claim(1, 'member-a'));
        expect(claim).not.toBeNull();
        await b.breakLease(1);
        await b.breakLease(0); // no lease there: harmless
        expect((await b.list()).shards[1]).toMatchObject({ leased: false, owner: 'member-a', epoch: 1 });
        const taken = held(await b.claim(1, 'member-b'));
        expect(taken).toMatchObject({ shard: 1, epoch: 2, owner: 'member-b' });
        // The old holder notices at its next renewal.
        expect(await firedWithin(claim!.lease.lost, 10_000)).toBe(true);
        expect(isJobqError(claim!.lease.lost.reason, 'lease-lost')).toBe(true);
        expect(taken!.lease.lost.aborted).toBe(false);
        await f.store.release(1); // its lease is gone: harmless, and the new holder keeps it
        expect((await b.list()).shards[1]).toEqual({ index: 1, leased: true, owner: 'member-b', epoch: 2 });
      },
      timeout,
    );

    it(
      "lets a crashed holder's lease run out after the lease duration, by the store's clock",
      async () => {
        const f = await fresh();
        if (f.advance === undefined || f.crash === undefined || f.leaseDurationInMs === undefined) return; // see OwnershipStoreFixture.crash
        const b = await f.another();
        const claim = held(await f.store.claim(0, 'member-a'));
        expect(claim).not.toBeNull();
        f.crash(f.store);
        await f.advance(f.leaseDurationInMs - 1_000);
        expect((await b.list()).shards[0]).toEqual({ index: 0, leased: true, owner: 'member-a', epoch: 1 });
        expect(await b.claim(0, 'member-b')).toBeNull();
        await f.advance(1_000);
        expect((await b.list()).shards[0]).toEqual({ index: 0, leased: false, owner: 'member-a', epoch: 1 });
        expect(held(await b.claim(0, 'member-b'))).toMatchObject({ epoch: 2, owner: 'member-b' });
      },
      timeout,
    );

    it(
      'lets a claim that stopped renewing run out after the lease duration, and tells its holder then (lost fires unread)',
      async () => {
        const f = await fresh();
        if (f.advance === undefined || f.leaseDurationInMs === undefined) return; // on Azure: its adapter's own tests
        const b = await f.another();
        const claim = held(await f.store.claim(0, 'member-a'));
        expect(claim).not.toBeNull();
        claim!.stopRenewing();
        claim!.stopRenewing(); // twice: harmless
        await f.advance(f.leaseDurationInMs - 1_000);
        expect(claim!.lease.lost.aborted).toBe(false);
        expect(await b.claim(0, 'member-b')).toBeNull();
        await f.advance(1_000);
        // Nobody read shard 0 since: the expiry alone fires it.
        expect(claim!.lease.lost.aborted).toBe(true);
        expect(isJobqError(claim!.lease.lost.reason, 'lease-lost')).toBe(true);
        expect((await b.list()).shards[0]).toEqual({ index: 0, leased: false, owner: 'member-a', epoch: 1 });
        expect(held(await b.claim(0, 'member-b'))).toMatchObject({ epoch: 2, owner: 'member-b' });
        await f.store.release(0); // its lease is gone: harmless, and the new holder keeps it
        expect((await b.list()).shards[0]).toEqual({ index: 0, leased: true, owner: 'member-b', epoch: 2 });
      },
      timeout,
    );

    it(
      'releases a claim that stopped renewing at once when it is released, and never fires its lost then',
      async () => {
        const f = await fresh();
        const b = await f.another();
        await f.store.ensureManifest(2);
        const claim = held(await f.store.claim(1, 'member-a'));
        expect(claim).not.toBeNull();
        claim!.stopRenewing();
        await f.store.release(1);
        expect((await b.list()).shards[1]).toMatchObject({ leased: false, owner: 'member-a', epoch: 1 });
        if (f.advance !== undefined && f.leaseDurationInMs !== undefined) await f.advance(f.leaseDurationInMs * 2);
        expect(claim!.lease.lost.aborted).toBe(false);
      },
      timeout,
    );

    it(
      "keeps a healthy holder's lease however long it holds it",
      async () => {
        const f = await fresh();
        if (f.advance === undefined || f.leaseDurationInMs === undefined) return;
        const claim = held(await f.store.claim(0, 'member-a'));
        await f.advance(f.leaseDurationInMs * 3);
        expect((await (await f.another()).list()).shards[0]).toEqual({ index: 0, leased: true, owner: 'member-a', epoch: 1 });
        expect(claim!.lease.lost.aborted).toBe(false);
      },
      timeout,
    );

    it(
      "lists members that heartbeated, by the store's time, until they leave",
      async () => {
        const f = await fresh();
        const b = await f.another();
        const before = (await f.store.list()).serverTime.getTime();
        await f.store.heartbeat('member-a');
        await b.heartbeat('member-b');
        await b.heartbeat('member-b');
        const view = await f.store.list();
        expect(view.members.map((m) => m.id)).toEqual(['member-a', 'member-b']);
        for (const member of view.members) {
          expect(member.lastSeen).toBeInstanceOf(Date);
          // Both times are the store's (whole seconds on Azure).
          expect(member.lastSeen.getTime()).toBeGreaterThanOrEqual(before - 1_000);
          expect(member.lastSeen.getTime()).toBeLessThanOrEqual(view.serverTime.getTime() + 1_000);
        }
        await b.leave('member-b');
        await b.leave('member-b');
        await b.leave('never-here');
        expect((await f.store.list()).members.map((m) => m.id)).toEqual(['member-a']);
        expect(await codeOf(f.store.heartbeat('a/b'))).toBe('invalid-argument');
        expect(await codeOf(f.store.heartbeat(''))).toBe('invalid-argument');
        if (f.advance === undefined) return;
        await f.advance(MEMBER_LIVE_FOR_MS - 1_000);
        await b.heartbeat('member-b');
        const later = await f.store.list();
        expect(later.serverTime.getTime() - view.serverTime.getTime()).toBe(MEMBER_LIVE_FOR_MS - 1_000);
        expect(later.members.map((m) => m.id)).toEqual(['member-a', 'member-b']);
        await f.advance(1_000);
        const after = await f.store.list();
        expect(after.members).toEqual([{ id: 'member-b', lastSeen: later.members[1]!.lastSeen }]);
      },
      timeout,
    );
  });
}
