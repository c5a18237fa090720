/**
 * Storage request policies for the benches: a delay on every request, as the network between a
 * process and a real storage account adds (`JOBQ_BENCH_LATENCY_MS`), and a tap that counts the
 * requests a coordinator makes and how many of them it waited for one after another. Both plug into
 * the policy options the clients already take (`blobPolicies`/`tablePolicies` of `@jobq/store-azure`,
 * `policies` of `@jobq/queue-storage`), so production clients are unchanged. See bench/README.md.
 */
import { realClock, type Clock } from '@jobq/ports';
import type { OpenStorageQueueOptions } from '@jobq/queue-storage';
import type { OpenWorkflowStoreOptions, TablePipelinePolicy } from '@jobq/store-azure';

/** A blob pipeline policy factory as `@jobq/store-azure` takes it (`blobPolicies`). */
export type BlobPolicyFactory = NonNullable<OpenWorkflowStoreOptions['blobPolicies']>[number];
/** A queue pipeline policy factory as `@jobq/queue-storage` takes it (`policies`). */
export type QueuePolicyFactory = NonNullable<OpenStorageQueueOptions['policies']>[number];

/** Wraps the sending of one request: calls `send` once and returns (or throws) what it does. */
export type RequestWrapper = <T>(send: () => Promise<T>) => Promise<T>;

/** One request wrapper as a policy for each kind of client: blob, queue and table. */
export class StoragePolicies {
  constructor(
    readonly name: string,
    private readonly wrap: RequestWrapper,
  ) {}

  /** For `blobPolicies` (the storage SDK runs it once per call, before its retries). */
  blob(): BlobPolicyFactory {
    return { create: (next) => ({ sendRequest: (request) => this.wrap(() => next.sendRequest(request)) }) };
  }

  /** For `policies` of a Storage Queue (once per call, before the SDK's retries). */
  queue(): QueuePolicyFactory {
    return { create: (next) => ({ sendRequest: (request) => this.wrap(() => next.sendRequest(request)) }) };
  }

  /** For `tablePolicies` (added after the table retry policy: once per try). */
  table(): TablePipelinePolicy {
    return { name: this.name, sendRequest: (request, next) => this.wrap(() => next(request)) };
  }
}

/** The environment variable that sets the storage latency of the seed bench's latency runs. */
export const LATENCY_VARIABLE = 'JOBQ_BENCH_LATENCY_MS';
/** The storage latency of the latency runs when `JOBQ_BENCH_LATENCY_MS` is unset: real Azure's upper range. */
export const DEFAULT_LATENCY_MS = 20;

/** The latency set by `JOBQ_BENCH_LATENCY_MS` (default 20 ms); a bad value fails in one line. */
export function benchLatencyMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = (env[LATENCY_VARIABLE] ?? '').trim();
  if (raw === '') return DEFAULT_LATENCY_MS;
  const ms = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(ms) || ms > 60_000) {
    throw new Error(`${LATENCY_VARIABLE}="${raw}" is not a number of milliseconds between 0 and 60000`);
  }
  return ms;
}

/**
 * Delays every request by `latencyInMs` in all: half before it is sent (the way to the server),
 * half after its response came (the way back), each an async timer of `clock`, so the event loop
 * goes on meanwhile and concurrent requests overlap as they do on a network. The response (or the
 * error) is handed on unchanged.
 */
export function delayPolicies(latencyInMs: number, clock: Clock = realClock): StoragePolicies {
  const out = latencyInMs / 2;
  const back = latencyInMs - out;
  const wrap: RequestWrapper = async (send) => {
    if (out > 0) await clock.sleep(out);
    let response;
    try {
      response = await send();
    } catch (error) {
      if (back > 0) await clock.sleep(back);
      throw error;
    }
    if (back > 0) await clock.sleep(back);
    return response;
  };
  return new StoragePolicies('bench-storage-latency', wrap);
}

/**
 * Counts the storage requests that go through its policies — put them on the clients of one
 * component only, e.g. the coordinator's own store and queue clients — and its round trips: the
 * times a request starts while none of these is in flight, i.e. the waits made one after another.
 * Requests sent together (the deletes of a batch) are one round trip. (It tells components apart
 * by their clients, not by async context: an AsyncLocalStorage would put a promise hook on every
 * promise of the process, a cost the engine would carry and the ceiling would not.)
 */
export class RequestTap {
  private inFlight = 0;
  requests = 0;
  roundTrips = 0;

  readonly policies = new StoragePolicies('bench-request-tap', async (send) => {
    this.requests++;
    if (this.inFlight++ === 0) this.roundTrips++;
    try {
      return await send();
    } finally {
      this.inFlight--;
    }
  });

  reset(): void {
    this.requests = this.roundTrips = 0;
  }
}
