import type { RequestPolicy, RequestPolicyFactory, WebResource } from '@azure/storage-queue';

/** Storage transactions seen by a {@link countingPolicy}, by HTTP method. */
export interface TransactionCounter {
  total: number;
  byMethod: Record<string, number>;
  reset(): void;
}

/**
 * A pipeline policy that counts the requests the SDK makes, one per call (the SDK places custom
 * policies before its retry policy, so a retried call counts once; without faults that equals the
 * billed storage transactions). Used by the benchmark to report transactions per message.
 */
export function countingPolicy(): { policy: RequestPolicyFactory; counter: TransactionCounter } {
  const counter: TransactionCounter = {
    total: 0,
    byMethod: {},
    reset() {
      this.total = 0;
      this.byMethod = {};
    },
  };
  const policy: RequestPolicyFactory = {
    create(nextPolicy: RequestPolicy): RequestPolicy {
      return {
        sendRequest(request: WebResource) {
          counter.total++;
          counter.byMethod[request.method] = (counter.byMethod[request.method] ?? 0) + 1;
          return nextPolicy.sendRequest(request);
        },
      };
    },
  };
  return { policy, counter };
}
