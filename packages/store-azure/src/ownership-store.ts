import type { ContainerClient, RequestPolicyFactory } from '@azure/storage-blob';
import {
  JobqError,
  MEMBER_LIVE_FOR_MS,
  SHARD_MANIFEST_BLOB,
  SHARD_MANIFEST_VERSION,
  SHARD_MEMBERS_FOLDER,
  checkShardCount,
  checkShardIndex,
  checkShardMemberId,
  isJobqError,
  parseShardManifest,
  shardLockBlob,
  shardMemberBlob,
  type CoordinatorLease,
  type ListOwnershipOptions,
  type OperationOptions,
  type OwnershipStore,
  type OwnershipView,
  type ShardClaim,
  type ShardCount,
  type ShardManifest,
  type ShardManifestRead,
  type ShardMember,
  type ShardOwnership,
} from '@jobq/ports';
import { accountClients, type StorageAccountConnection } from './clients';
import { storeCall } from './errors';
import { acquireCoordinatorLease, checkLeaseSettings, type LeaseSettings, type RenewedLease } from './lease';
import { storeNames } from './names';

/** Options of {@link openOwnershipStore}. */
export interface OpenOwnershipStoreOptions {
  connection: StorageAccountConnection;
  /** The deployment prefix (docs/design.md#names): its workflows container holds the shard blobs. */
  prefix: string;
  /** Limit of each storage call. Default 30 000. */
  operationTimeoutInMs?: number;
  /** Create the workflows container when missing. Default true; read-only tools pass false. */
  createIfMissing?: boolean;
  /** Shard lease duration: whole seconds, 15 000–60 000. Default 60 000 (docs/sharding.md). */
  leaseDurationInMs?: number;
  /** Time between renewals of a held shard lease, below the duration. Default 15 000. */
  renewIntervalInMs?: number;
  /**
   * How long a member counts as live after its last heartbeat, by the service's clock. Default
   * `MEMBER_LIVE_FOR_MS` (60 000); tests with short leases shorten it, so that a crashed member's
   * shards are shared out once their leases have run out. Keep it well above the balance interval.
   */
  memberLiveForInMs?: number;
  /** Extra blob pipeline policies (below the retry policy: every HTTP try is seen). */
  blobPolicies?: readonly RequestPolicyFactory[];
}

/** Metadata keys of a lock blob: who claimed the shard last, and how many claims it has seen. */
const OWNER_KEY = 'owner';
const EPOCH_KEY = 'epoch';

/** A grow takes every shard lease for this long (the shortest a blob lease can be), then releases them. */
const GROW_LEASE_SECONDS = 15;

function epochOf(metadata: Record<string, string> | undefined): number {
  const epoch = Number(metadata?.[EPOCH_KEY] ?? '0');
  return Number.isSafeInteger(epoch) && epoch >= 0 ? epoch : 0;
}

/**
 * {@link OwnershipStore} on Azure Blob Storage, in the prefix's workflows container
 * (docs/sharding.md): the manifest `_shards/manifest.json` (created If-None-Match, grown If-Match),
 * one lock blob per shard whose blob lease is the shard lease (`_coordinator.lock` for shard 0,
 * the coordinator lease of a deployment without shards; `_shards/{k}.lock` for k ≥ 1) and whose
 * metadata holds `owner` and `epoch`, written by a claim under its lease If-Match the ETag it read,
 * and one blob per member, `_shards/members/{id}.json`, whose Last-Modified is its last heartbeat.
 * Member ages are reckoned against the `Date` of the listing's response: only the service's clock
 * counts. Held leases renew themselves as the coordinator lease does (lease.ts), until released or
 * told to stop renewing (then `lost` fires once they can have run out).
 */
export class AzureOwnershipStore implements OwnershipStore {
  private readonly held = new Map<number, CoordinatorLease>();

  constructor(
    private readonly container: ContainerClient,
    private readonly settings: LeaseSettings,
    private readonly memberLiveForInMs: number = MEMBER_LIVE_FOR_MS,
  ) {
    checkLeaseSettings(settings);
    if (!Number.isFinite(memberLiveForInMs) || memberLiveForInMs < 1_000)
      throw new JobqError('invalid-config', `memberLiveForInMs must be at least 1 000, got ${memberLiveForInMs}`);
  }

  private get timeout(): number {
    return this.settings.operationTimeoutInMs;
  }

  /** Creates the workflows container when missing. */
  async ensureExists(options?: OperationOptions): Promise<void> {
    await storeCall({ operation: 'create the workflows container' }, this.timeout, options, (abortSignal) =>
      this.container.createIfNotExists({ abortSignal }),
    );
  }

  async readManifest(options?: OperationOptions): Promise<{ manifest: ShardManifest; etag: string } | null> {
    try {
      const { text, etag } = await storeCall({ operation: 'read the shard manifest' }, this.timeout, options, async (abortSignal) => {
        const response = await this.container.getBlockBlobClient(SHARD_MANIFEST_BLOB).download(0, undefined, { abortSignal });
        return { text: await streamText(response.readableStreamBody), etag: response.etag ?? '' };
      });
      return { manifest: parseShardManifest(text), etag };
    } catch (error) {
      if (isJobqError(error, 'not-found')) return null;
      throw error;
    }
  }

  /** A GET If-None-Match `etag` (a plain GET when `etag` is null): a 304, or a 404 with `etag` null, is `'unchanged'`. */
  async readManifestIfChanged(etag: string | null, options?: OperationOptions): Promise<ShardManifestRead | null | 'unchanged'> {
    let read: { text: string; etag: string } | 'unchanged';
    try {
      read = await storeCall({ operation: 'read the shard manifest' }, this.timeout, options, async (abortSignal) => {
        try {
          const response = await this.container
            .getBlockBlobClient(SHARD_MANIFEST_BLOB)
            .download(0, undefined, { abortSignal, ...(etag === null ? {} : { conditions: { ifNoneMatch: etag } }) });
          return { text: await streamText(response.readableStreamBody), etag: response.etag ?? '' };
        } catch (error) {
          if ((error as { statusCode?: unknown } | null)?.statusCode === 304) return 'unchanged' as const;
          throw error;
        }
      });
    } catch (error) {
      if (isJobqError(error, 'not-found')) return etag === null ? 'unchanged' : null;
      throw error;
    }
    return read === 'unchanged' ? read : { manifest: parseShardManifest(read.text), etag: read.etag };
  }

  /** Writes the manifest If-None-Match `*` (etag '') or If-Match `etag`; false when the condition failed. */
  private async writeManifest(shards: ShardCount, etag: string, options: OperationOptions | undefined): Promise<boolean> {
    const body = JSON.stringify({ version: SHARD_MANIFEST_VERSION, shards });
    try {
      await storeCall({ operation: 'write the shard manifest' }, this.timeout, options, (abortSignal) =>
        this.container.getBlockBlobClient(SHARD_MANIFEST_BLOB).upload(body, Buffer.byteLength(body), {
          blobHTTPHeaders: { blobContentType: 'application/json' },
          conditions: etag === '' ? { ifNoneMatch: '*' } : { ifMatch: etag },
          abortSignal,
        }),
      );
      return true;
    } catch (error) {
      if (isJobqError(error, 'conflict')) return false;
      throw error;
    }
  }

  async ensureManifest(shards: ShardCount, options?: OperationOptions): Promise<ShardManifest> {
    checkShardCount(shards);
    const existing = await this.readManifest(options);
    if (existing !== null) return existing.manifest;
    if (await this.writeManifest(shards, '', options)) return { version: SHARD_MANIFEST_VERSION, shards };
    // Another creator won: theirs is the manifest.
    const theirs = await this.readManifest(options);
    if (theirs === null)
      throw new JobqError('conflict', 'create the shard manifest failed: it was deleted while it was being created; try again');
    return theirs.manifest;
  }

  /**
   * Takes every current shard's lease (15 s, not renewed; `lease-held` if any is held), writes the
   * manifest on its ETag, then gives the leases back: no claim can come between the check and the write.
   */
  async growManifest(shards: ShardCount, etag: string, options?: OperationOptions): Promise<ShardManifest> {
    const existing = await this.readManifest(options);
    checkShardCount(shards);
    const from = existing?.manifest.shards ?? 1;
    if (shards <= from || shards % from !== 0) {
      throw new JobqError(
        'invalid-argument',
        `the shard count can only grow, by a multiple of ${from} (${shards} asked); to shrink, start a new prefix and drain this one`,
      );
    }
    if ((existing?.etag ?? '') !== etag)
      throw new JobqError('conflict', 'grow the shard manifest failed: it changed since it was read; read it again');
    const taken: Array<() => Promise<unknown>> = [];
    try {
      for (let k = 0; k < from; k++) taken.push(await this.holdBriefly(k, options));
      if (!(await this.writeManifest(shards, etag, options))) {
        throw new JobqError('conflict', 'grow the shard manifest failed: it changed since it was read; read it again');
      }
    } finally {
      await Promise.all(taken.map((release) => release().catch(() => undefined)));
    }
    return { version: SHARD_MANIFEST_VERSION, shards };
  }

  /** Takes shard `k`'s lease for {@link GROW_LEASE_SECONDS} without renewing it; returns its release. */
  private async holdBriefly(k: number, options: OperationOptions | undefined): Promise<() => Promise<unknown>> {
    const blob = this.container.getBlockBlobClient(shardLockBlob(k));
    await this.createLockBlob(k, options);
    const client = blob.getBlobLeaseClient();
    try {
      await storeCall({ operation: `take shard ${k}'s lease to grow the shard manifest` }, this.timeout, options, (abortSignal) =>
        client.acquireLease(GROW_LEASE_SECONDS, { abortSignal }),
      );
    } catch (error) {
      if (!isJobqError(error, 'lease-held')) throw error;
      throw new JobqError(
        'lease-held',
        `grow the shard manifest failed: shard ${k}'s lease is held; stop every coordinator of this prefix first`,
      );
    }
    return () =>
      storeCall({ operation: `give back shard ${k}'s lease after growing the shard manifest` }, this.timeout, undefined, (abortSignal) =>
        client.releaseLease({ abortSignal }),
      );
  }

  private async createLockBlob(k: number, options: OperationOptions | undefined): Promise<void> {
    try {
      await storeCall({ operation: `create shard ${k}'s lock blob` }, this.timeout, options, (abortSignal) =>
        this.container.getBlockBlobClient(shardLockBlob(k)).upload('', 0, { conditions: { ifNoneMatch: '*' }, abortSignal }),
      );
    } catch (error) {
      if (!isJobqError(error, 'conflict') && !isJobqError(error, 'lease-held')) throw error;
    }
  }

  /**
   * One shard's lease state and owner metadata; with `claimTimes`, its last claim's time: the lock
   * blob's Last-Modified, which only a claim's metadata write changes (taking, renewing and releasing
   * a lease do not), and only when a claim recorded an owner (a coordinator without shards takes
   * `_coordinator.lock` without writing one).
   */
  private async shardOwnership(index: number, options: ListOwnershipOptions | undefined): Promise<ShardOwnership> {
    const times = options?.claimTimes === true;
    try {
      const properties = await storeCall({ operation: `read shard ${index}'s lease` }, this.timeout, options, (abortSignal) =>
        this.container.getBlockBlobClient(shardLockBlob(index)).getProperties({ abortSignal }),
      );
      const leased = properties.leaseState === 'leased' || properties.leaseState === 'breaking';
      const metadataOwner = properties.metadata?.[OWNER_KEY];
      const owner = metadataOwner === undefined || metadataOwner === '' ? null : metadataOwner;
      const shard = { index, leased, owner, epoch: epochOf(properties.metadata) };
      return times ? { ...shard, claimedAt: owner === null ? null : (properties.lastModified ?? null) } : shard;
    } catch (error) {
      if (isJobqError(error, 'not-found')) return { index, leased: false, owner: null, epoch: 0, ...(times ? { claimedAt: null } : {}) };
      throw error;
    }
  }

  async list(options?: ListOwnershipOptions): Promise<OwnershipView> {
    const manifest = (await this.readManifest(options))?.manifest ?? { version: SHARD_MANIFEST_VERSION, shards: 1 };
    const shards = await Promise.all(Array.from({ length: manifest.shards }, (_, k) => this.shardOwnership(k, options)));
    const seen: ShardMember[] = [];
    let serverTime: Date | undefined;
    await storeCall({ operation: 'list shard members' }, this.timeout, options, async (abortSignal) => {
      for await (const page of this.container.listBlobsFlat({ prefix: SHARD_MEMBERS_FOLDER, abortSignal }).byPage({ maxPageSize: 1_000 })) {
        if (page.date !== undefined) serverTime = page.date;
        for (const blob of page.segment.blobItems) {
          const id = blob.name.slice(SHARD_MEMBERS_FOLDER.length, -'.json'.length);
          if (blob.name.endsWith('.json') && id !== '') seen.push({ id, lastSeen: blob.properties.lastModified });
        }
      }
    });
    if (serverTime === undefined)
      throw new JobqError('unavailable', 'list shard members failed: the answer had no Date header (the service time is needed)');
    const now = serverTime.getTime();
    const members = seen
      .filter((m) => now - m.lastSeen.getTime() < this.memberLiveForInMs)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { manifest, shards, members, serverTime };
  }

  async claim(shard: number, owner: string, options?: OperationOptions): Promise<ShardClaim | null> {
    checkShardIndex(shard);
    checkShardMemberId(owner);
    const name = shardLockBlob(shard);
    let lease: RenewedLease;
    try {
      lease = await acquireCoordinatorLease(this.container, name, this.settings, options);
    } catch (error) {
      if (isJobqError(error, 'lease-held')) return null;
      throw error;
    }
    const blob = this.container.getBlockBlobClient(name);
    let epoch: number;
    try {
      const properties = await storeCall({ operation: `read shard ${shard}'s owner` }, this.timeout, options, (abortSignal) =>
        blob.getProperties({ abortSignal }),
      );
      epoch = epochOf(properties.metadata) + 1;
      const metadata = { ...properties.metadata, [OWNER_KEY]: owner, [EPOCH_KEY]: String(epoch) };
      await storeCall({ operation: `record shard ${shard}'s owner` }, this.timeout, options, (abortSignal) =>
        blob.setMetadata(metadata, {
          conditions: { leaseId: lease.leaseId, ...(properties.etag ? { ifMatch: properties.etag } : {}) },
          abortSignal,
        }),
      );
    } catch (error) {
      await lease.release().catch(() => undefined);
      // The lease was broken and taken, or the owner changed under it: another member won.
      if (isJobqError(error, 'conflict') || isJobqError(error, 'lease-lost') || isJobqError(error, 'not-found')) return null;
      throw error;
    }
    this.held
      .get(shard)
      ?.release()
      .catch(() => undefined);
    this.held.set(shard, lease);
    return { shard, epoch, owner, lease, stopRenewing: () => lease.stopRenewing() };
  }

  async release(shard: number): Promise<void> {
    const lease = this.held.get(shard);
    this.held.delete(shard);
    await lease?.release();
  }

  async breakLease(shard: number, options?: OperationOptions): Promise<void> {
    checkShardIndex(shard);
    try {
      await storeCall({ operation: `break shard ${shard}'s lease` }, this.timeout, options, (abortSignal) =>
        this.container.getBlockBlobClient(shardLockBlob(shard)).getBlobLeaseClient().breakLease(0, { abortSignal }),
      );
    } catch (error) {
      // No lease to break (409 LeaseNotPresentWithLeaseOperation) or no lock blob: nothing to do.
      if (!isJobqError(error, 'conflict') && !isJobqError(error, 'not-found')) throw error;
    }
  }

  async heartbeat(memberId: string, options?: OperationOptions): Promise<void> {
    const name = shardMemberBlob(memberId);
    const body = JSON.stringify({ id: memberId });
    await storeCall({ operation: `record member "${memberId}"` }, this.timeout, options, (abortSignal) =>
      this.container
        .getBlockBlobClient(name)
        .upload(body, Buffer.byteLength(body), { blobHTTPHeaders: { blobContentType: 'application/json' }, abortSignal }),
    );
  }

  async leave(memberId: string, options?: OperationOptions): Promise<void> {
    const name = shardMemberBlob(memberId);
    await storeCall({ operation: `remove member "${memberId}"` }, this.timeout, options, (abortSignal) =>
      this.container.getBlockBlobClient(name).deleteIfExists({ abortSignal }),
    );
  }
}

async function streamText(stream: NodeJS.ReadableStream | undefined): Promise<string> {
  if (stream === undefined) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Opens the shard ownership store of a prefix (docs/sharding.md), creating its workflows container
 * unless `createIfMissing: false`. `invalid-config` for a bad prefix, connection or setting.
 */
export async function openOwnershipStore(options: OpenOwnershipStoreOptions): Promise<AzureOwnershipStore> {
  const names = storeNames(options.prefix);
  const operationTimeoutInMs = options.operationTimeoutInMs ?? 30_000;
  const clients = accountClients(options.connection, {
    operationTimeoutInMs,
    ...(options.blobPolicies ? { blobPolicies: options.blobPolicies } : {}),
  });
  const store = new AzureOwnershipStore(
    clients.container(names.workflowsContainer),
    {
      durationInMs: options.leaseDurationInMs ?? 60_000,
      renewIntervalInMs: options.renewIntervalInMs ?? 15_000,
      operationTimeoutInMs,
    },
    options.memberLiveForInMs ?? MEMBER_LIVE_FOR_MS,
  );
  if (options.createIfMissing ?? true) await store.ensureExists();
  return store;
}
