import { randomUUID } from 'node:crypto';
import type { BlobLeaseClient, ContainerClient } from '@azure/storage-blob';
import {
  JobqError,
  isJobqError,
  sleep,
  type AcquireLeaseOptions,
  type CoordinatorLease,
  type CoordinatorLeaseState,
  type OperationOptions,
} from '@jobq/ports';
import { storeCall, translateStoreError, type CallOptions } from './errors';

/**
 * The coordinator lease (docs/design.md#the-coordinator): a blob lease on `_coordinator.lock` in the workflows container,
 * renewed in the background. It is advisory: runtime blobs are not leased (their writes are
 * guarded by ETags), the lease only keeps two coordinators from working the same prefix.
 */

/** Lease timing. Blob leases last 15–60 s (whole seconds). */
export interface LeaseSettings {
  /** 15 000–60 000 ms, whole seconds. Default 60 s (docs/design.md#the-coordinator). */
  durationInMs: number;
  /** Time between renewals; below the duration. Default 15 s (docs/design.md#the-coordinator). */
  renewIntervalInMs: number;
  /** Limit of each lease call. */
  operationTimeoutInMs: number;
}

/** Checks lease settings; `invalid-config` when Azure could not honour them. */
export function checkLeaseSettings(settings: LeaseSettings): void {
  const { durationInMs, renewIntervalInMs } = settings;
  if (!Number.isInteger(durationInMs) || durationInMs < 15_000 || durationInMs > 60_000 || durationInMs % 1_000 !== 0) {
    throw new JobqError(
      'invalid-config',
      `leaseDurationInMs must be whole seconds from 15 000 to 60 000 (a blob lease's range), got ${durationInMs}`,
    );
  }
  if (!Number.isFinite(renewIntervalInMs) || renewIntervalInMs < 100 || renewIntervalInMs >= durationInMs) {
    throw new JobqError(
      'invalid-config',
      `renewIntervalInMs must be at least 100 and below the lease duration (${durationInMs}), got ${renewIntervalInMs}`,
    );
  }
}

/**
 * Waits `ms` on an unref'd global `setTimeout` (a lease alone does not keep the process alive), or
 * until `signal` fires. Not `sleep` from `node:timers/promises`: the lease's run-out wait is tested
 * on jest's fake timers, which control the global timers only.
 */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A held lease that renews itself until released, lost, or told to stop renewing. */
export interface RenewedLease extends CoordinatorLease {
  /**
   * Stops the renewals without giving the lease up: `lost` fires `durationInMs` after the last
   * successful renewal (when the lease can have run out), unless it is released or lost first.
   */
  stopRenewing(): void;
}

/** A held coordinator lease that renews itself until released or lost. */
class BlobCoordinatorLease implements RenewedLease {
  readonly leaseId: string;
  private readonly lostController = new AbortController();
  /** Aborted by {@link release}: ends the renewals and the wait for the expiry. */
  private readonly stopController = new AbortController();
  /** Aborted by {@link stopRenewing} (and {@link release}): no renewal starts after it. */
  private readonly renewController = new AbortController();
  /** The renewal loop; it never rejects, and {@link release} waits for it. */
  private readonly renewing: Promise<void>;
  private releasing: Promise<void> | undefined;

  constructor(
    private readonly client: BlobLeaseClient,
    private readonly settings: LeaseSettings,
    acquiredAt: number,
  ) {
    this.leaseId = client.leaseId;
    this.renewing = this.renewLoop(acquiredAt);
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  release(): Promise<void> {
    this.releasing ??= this.stopAndRelease();
    return this.releasing;
  }

  stopRenewing(): void {
    this.renewController.abort();
  }

  private async stopAndRelease(): Promise<void> {
    this.renewController.abort();
    this.stopController.abort();
    await this.renewing;
    if (this.lost.aborted) return;
    try {
      await storeCall(
        { operation: 'release the coordinator lease', conflict: 'lease-lost', notFound: 'lease-lost' },
        this.settings.operationTimeoutInMs,
        undefined,
        (abortSignal) => this.client.releaseLease({ abortSignal }),
      );
    } catch (error) {
      // Not ours any more (broken, expired and taken, blob gone): nothing to give up.
      if (!isJobqError(error, 'lease-lost')) throw error;
    }
  }

  /**
   * Renews every `renewIntervalInMs`. The service saying the lease is not ours (broken, taken,
   * blob gone) loses it at once; a transient failure is tried again at the next tick, unless that
   * tick would come too late to save the lease. After {@link stopRenewing} (a renewal under way
   * finishes), it waits until the lease can have run out, then fires `lost`.
   */
  private async renewLoop(acquiredAt: number): Promise<void> {
    const stop = this.stopController.signal;
    const renew = this.renewController.signal;
    const { durationInMs, renewIntervalInMs, operationTimeoutInMs } = this.settings;
    let renewedAt = acquiredAt;
    while (!renew.aborted) {
      // An unref'd timer: a lease alone does not keep the process alive.
      await sleep(renewIntervalInMs, renew, { unref: true });
      if (renew.aborted) break;
      // A renewal that answers after the lease ran out is worthless: bound the call by what is left.
      const left = renewedAt + durationInMs - Date.now();
      try {
        await storeCall(
          { operation: 'renew the coordinator lease', conflict: 'lease-lost', notFound: 'lease-lost' },
          Math.max(1_000, Math.min(operationTimeoutInMs, left - 500)),
          { abortSignal: stop },
          (abortSignal) => this.client.renewLease({ abortSignal }),
        );
        renewedAt = Date.now();
      } catch (error) {
        if (stop.aborted) return;
        const e = translateStoreError(error, { operation: 'renew the coordinator lease' });
        if (!e.retryable || Date.now() + renewIntervalInMs >= renewedAt + durationInMs) {
          this.lostController.abort(
            new JobqError('lease-lost', `the coordinator lease was lost (${e.message}); stop writing`, { details: { cause: e.code } }),
          );
          return;
        }
      }
    }
    if (stop.aborted) return;
    // Renewals stopped, the lease kept: the service lets it run out within `durationInMs` of the last renewal.
    await pause(renewedAt + durationInMs - Date.now(), stop);
    if (stop.aborted) return;
    this.lostController.abort(new JobqError('lease-lost', 'the coordinator lease ran out: it was no longer renewed; stop writing'));
  }
}

/**
 * Takes the lease on `blobName` (creating the empty lock blob when missing) and starts renewing
 * it. `lease-held` while another holder has it; `breakExisting` breaks that lease first (break
 * period 0), after which the old holder's renewals fail and its `lost` signal fires.
 */
export async function acquireCoordinatorLease(
  container: ContainerClient,
  blobName: string,
  settings: LeaseSettings,
  options: AcquireLeaseOptions = {},
): Promise<RenewedLease> {
  const blob = container.getBlockBlobClient(blobName);
  const client = blob.getBlobLeaseClient(randomUUID());
  const call: CallOptions = options.abortSignal ? { abortSignal: options.abortSignal } : {};
  const timeout = settings.operationTimeoutInMs;
  if (options.breakExisting) {
    try {
      await storeCall({ operation: 'break the coordinator lease' }, timeout, call, (abortSignal) => client.breakLease(0, { abortSignal }));
    } catch (error) {
      // No lease to break (409 LeaseNotPresentWithLeaseOperation) or no lock blob yet: go on.
      if (!isJobqError(error, 'conflict') && !isJobqError(error, 'not-found')) throw error;
    }
  }
  /** Acquires and returns when the request left: the lease runs from no earlier than that. */
  const acquire = async (): Promise<number> => {
    const sentAt = Date.now();
    try {
      await storeCall({ operation: 'acquire the coordinator lease' }, timeout, call, (abortSignal) =>
        client.acquireLease(settings.durationInMs / 1_000, { abortSignal }),
      );
    } catch (error) {
      if (!isJobqError(error, 'lease-held')) throw error;
      throw new JobqError(
        'lease-held',
        'the coordinator lease of this prefix is held by another coordinator: stop it, or break the lease (--break-lease)',
        {
          details: error.details,
        },
      );
    }
    return sentAt;
  };
  let acquiredAt: number;
  try {
    acquiredAt = await acquire();
  } catch (error) {
    if (!isJobqError(error, 'not-found')) throw error;
    try {
      await storeCall({ operation: 'create the coordinator lock blob' }, timeout, call, (abortSignal) =>
        blob.upload('', 0, { conditions: { ifNoneMatch: '*' }, abortSignal }),
      );
    } catch (createError) {
      // Someone else created it meanwhile.
      if (!isJobqError(createError, 'conflict')) throw createError;
    }
    acquiredAt = await acquire();
  }
  return new BlobCoordinatorLease(client, settings, acquiredAt);
}

/** The state of the lease on `blobName`, read from the blob's properties; null when there is no lock blob. */
export async function readCoordinatorLeaseState(
  container: ContainerClient,
  blobName: string,
  timeoutInMs: number,
  options?: OperationOptions,
): Promise<CoordinatorLeaseState | null> {
  try {
    const properties = await storeCall({ operation: 'read the coordinator lease' }, timeoutInMs, options, (abortSignal) =>
      container.getBlobClient(blobName).getProperties({ abortSignal }),
    );
    const state = properties.leaseState ?? 'available';
    return { held: state === 'leased', state };
  } catch (error) {
    if (isJobqError(error, 'not-found')) return null;
    throw error;
  }
}
