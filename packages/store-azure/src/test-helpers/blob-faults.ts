// Blob-request faults for failure-injection tests, placed below the SDK's retry policy (every try
// passes through them), as a network or a crashing process would produce them. The factory's class
// name matters: storage-blob places custom policies above its retry policy unless their factory is
// called `InjectorPolicyFactory`.
import { RestError, type RequestPolicy, type RequestPolicyFactory, type WebResource } from '@azure/storage-blob';

/** What a request of the runtime store is, by its URL, method and headers. */
export type BlobRequestKind =
  'head-put' | 'snapshot-put' | 'definition-put' | 'log-create' | 'log-append' | 'read' | 'delete' | 'list' | 'other';

export function kindOf(request: WebResource): BlobRequestKind {
  const url = new URL(request.url);
  const path = decodeURIComponent(url.pathname);
  const comp = url.searchParams.get('comp');
  if (request.method === 'GET' || request.method === 'HEAD') return comp === 'list' ? 'list' : 'read';
  if (request.method === 'DELETE') return 'delete';
  if (request.method !== 'PUT') return 'other';
  if (comp === 'appendblock') return 'log-append';
  if (request.headers.get('x-ms-blob-type') === 'AppendBlob') return 'log-create';
  if (path.includes('/state/') && path.endsWith('.snapshot.json')) return 'snapshot-put';
  if (path.includes('/definitions/')) return 'definition-put';
  if (path.endsWith('.json')) return 'head-put';
  return 'other';
}

export interface BlobFaults {
  policy: RequestPolicyFactory;
  /** After the next request `matches` succeeds, every request fails as if the process were gone. */
  crashAfter(matches: (request: WebResource) => boolean): void;
  /** The next request that `matches` reaches the service, but its answer is lost (the SDK retries it). */
  loseAnswer(matches: (request: WebResource) => boolean): void;
  /** Before the next request that `matches` is sent, runs `action` (e.g. another process's save). */
  before(matches: (request: WebResource) => boolean, action: () => Promise<unknown>): void;
  /** True once a crash happened. */
  readonly crashed: boolean;
  /** Requests seen, by kind (every try). */
  readonly seen: BlobRequestKind[];
}

type Rule = (request: WebResource) => boolean;

class InjectorPolicyFactory implements RequestPolicyFactory {
  crashRule: Rule | null = null;
  loseRule: Rule | null = null;
  beforeRule: { matches: Rule; action: () => Promise<unknown> } | null = null;
  crashed = false;
  readonly seen: BlobRequestKind[] = [];

  create(next: RequestPolicy): RequestPolicy {
    return {
      sendRequest: async (request: WebResource) => {
        this.seen.push(kindOf(request));
        if (this.crashed) throw new RestError('injected fault: the process is gone (connect ECONNREFUSED)', { code: 'ECONNREFUSED' });
        if (this.beforeRule !== null && this.beforeRule.matches(request)) {
          const { action } = this.beforeRule;
          this.beforeRule = null;
          await action();
        }
        const response = await next.sendRequest(request);
        if (this.crashRule !== null && response.status < 300 && this.crashRule(request)) {
          this.crashRule = null;
          this.crashed = true;
        }
        if (this.loseRule !== null && this.loseRule(request)) {
          this.loseRule = null;
          throw new RestError('injected fault: read ECONNRESET', { code: 'ECONNRESET' });
        }
        return response;
      },
    };
  }
}

/** A fault injector for one store's blob client. */
export function blobFaults(): BlobFaults {
  const policy = new InjectorPolicyFactory();
  return {
    policy,
    crashAfter: (matches) => {
      policy.crashRule = matches;
    },
    loseAnswer: (matches) => {
      policy.loseRule = matches;
    },
    before: (matches, action) => {
      policy.beforeRule = { matches, action };
    },
    get crashed() {
      return policy.crashed;
    },
    seen: policy.seen,
  };
}
