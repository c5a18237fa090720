import { type WorkflowRuntime } from '@jobq/dag-core';
import { decodeEnvelope, decodeWorkflowTask } from '@jobq/dag-core/wire';
import type {
  AcquireLeaseOptions,
  CoordinatorLease,
  OperationOptions,
  OutgoingMessage,
  PeekedMessage,
  ReceiveOptions,
  ReceivedMessage,
  SaveOptions,
  SaveResult,
  TaskRowsResult,
  TaskQueue,
  WorkflowStore,
} from '@jobq/ports';

// Seams for failure injection, shared by the Azurite harness (stack.ts) and the in-memory
// one (memory-stack.ts): every port handed to the coordinator and the worker can be wrapped.

/**
 * `target` with every method call reported to `onCall(method, args)` before it runs: for tests
 * that count or record what the coordinator asks of a port (a fault hook is {@link wrapStore}'s).
 */
export function observeCalls<T extends object>(target: T, onCall: (method: string, args: unknown[]) => void): T {
  return new Proxy(target, {
    get(inner, key, receiver) {
      const value: unknown = Reflect.get(inner, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        onCall(String(key), args);
        return (value as (...a: unknown[]) => unknown).apply(inner, args);
      };
    },
  });
}

/**
 * The seams both stacks (stack.ts on Azurite, memory-stack.ts in memory) offer for failure
 * injection: the ports the coordinator and the workers use, each wrapped on its way in. `S` is
 * the stack's own store type.
 */
export interface StackSeams<S extends WorkflowStore> {
  /** Wraps the store the coordinator writes through. */
  coordinatorStore?: (store: S) => WorkflowStore;
  /** Wraps the completion queue the coordinator receives from. */
  coordinatorCompletions?: (queue: TaskQueue) => TaskQueue;
  /** Wraps the task queue the coordinator pushes to. */
  coordinatorTasks?: (queue: TaskQueue) => TaskQueue;
  /** Wraps the completion queue the workers send to. */
  workerCompletions?: (queue: TaskQueue) => TaskQueue;
  /** Completion send attempts of the workers (default 5). */
  completionSendMaxAttempts?: number;
  /** Cancel-flag poll of the workers (default 200 ms). */
  workerCancelPollIntervalInMs?: number;
}

/** A {@link TaskQueue} that delegates every call; override the hooks to inject faults. */
export class WrappedQueue implements TaskQueue {
  constructor(
    readonly inner: TaskQueue,
    private readonly hooks: {
      send?: (messages: readonly OutgoingMessage[], send: () => Promise<void>) => Promise<void>;
      receive?: (options: ReceiveOptions, receive: () => Promise<ReceivedMessage[]>) => Promise<ReceivedMessage[]>;
      complete?: (message: ReceivedMessage, complete: () => Promise<void>) => Promise<void>;
    } = {},
  ) {}
  get name(): string {
    return this.inner.name;
  }
  get lockDurationInMs(): number {
    return this.inner.lockDurationInMs;
  }
  get maxMessageBytes(): number {
    return this.inner.maxMessageBytes;
  }
  send(messages: OutgoingMessage | readonly OutgoingMessage[], options?: OperationOptions): Promise<void> {
    const list: readonly OutgoingMessage[] = Array.isArray(messages)
      ? (messages as readonly OutgoingMessage[])
      : [messages as OutgoingMessage];
    const send = () => this.inner.send(messages, options);
    return this.hooks.send ? this.hooks.send(list, send) : send();
  }
  receive(options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const receive = () => this.inner.receive(options);
    return this.hooks.receive ? this.hooks.receive(options, receive) : receive();
  }
  renewLock(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return this.inner.renewLock(message, options);
  }
  complete(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    const complete = () => this.inner.complete(message, options);
    return this.hooks.complete ? this.hooks.complete(message, complete) : complete();
  }
  abandon(message: ReceivedMessage, options?: OperationOptions): Promise<void> {
    return this.inner.abandon(message, options);
  }
  deadLetter(message: ReceivedMessage, reason: string, options?: OperationOptions): Promise<void> {
    return this.inner.deadLetter(message, reason, options);
  }
  peek(maxMessages: number, options?: OperationOptions): Promise<PeekedMessage[]> {
    return this.inner.peek(maxMessages, options);
  }
  approximateMessageCount(options?: OperationOptions): Promise<number> {
    return this.inner.approximateMessageCount(options);
  }
  deadLetterQueue(): TaskQueue {
    return this.inner.deadLetterQueue();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** The hook of a {@link wrapStore}d `save`: call `save()` (or not) and return its result. */
export type SaveHook = (
  runtime: WorkflowRuntime,
  etag: string,
  save: () => Promise<SaveResult>,
  options?: SaveOptions,
) => Promise<SaveResult>;

/** The hook of a {@link wrapStore}d `acquireLease`: call `acquire()` (or not) and return a lease. */
export type LeaseHook = (options: AcquireLeaseOptions | undefined, acquire: () => Promise<CoordinatorLease>) => Promise<CoordinatorLease>;

/** The hook of a {@link wrapStore}d `writeTaskRows`: call `write()` (or not) and return its result. */
export type TaskRowsHook = (
  runtime: WorkflowRuntime,
  names: readonly string[],
  write: () => Promise<TaskRowsResult>,
) => Promise<TaskRowsResult>;

/** The hook of a {@link wrapStore}d `writeIndexRow`: call `write()` (or not). */
export type IndexRowHook = (runtime: WorkflowRuntime, write: () => Promise<void>) => Promise<void>;

/** The hook of a {@link wrapStore}d `clearRerun`: call `clear()` (or not) and return its result. */
export type ClearRerunHook = (workflowId: string, requestId: string, clear: () => Promise<boolean>) => Promise<boolean>;

/** The store with its `save` (and, optionally, `acquireLease`, `writeTaskRows`, `writeIndexRow` and `clearRerun`) going through a hook; every other call is the real store's. */
export function wrapStore(
  store: WorkflowStore,
  hook: SaveHook | null,
  hooks: { acquireLease?: LeaseHook; writeTaskRows?: TaskRowsHook; writeIndexRow?: IndexRowHook; clearRerun?: ClearRerunHook } = {},
): WorkflowStore {
  const leaseHook = hooks.acquireLease;
  return {
    create: (runtime, hash, options) => store.create(runtime, hash, options),
    load: (id, options) => store.load(id, options),
    save: (runtime, etag, options) =>
      hook ? hook(runtime, etag, () => store.save(runtime, etag, options), options) : store.save(runtime, etag, options),
    writeTaskRows: (runtime, names, options) =>
      hooks.writeTaskRows
        ? hooks.writeTaskRows(runtime, names, () => store.writeTaskRows(runtime, names, options))
        : store.writeTaskRows(runtime, names, options),
    writeIndexRow: (runtime, options) =>
      hooks.writeIndexRow
        ? hooks.writeIndexRow(runtime, () => store.writeIndexRow(runtime, options))
        : store.writeIndexRow(runtime, options),
    getWorkflow: (id, options) => store.getWorkflow(id, options),
    listWorkflows: (filter) => store.listWorkflows(filter),
    countWorkflows: (options) => store.countWorkflows(options),
    listTasks: (filter) => store.listTasks(filter),
    requestCancel: (id, at, options) => store.requestCancel(id, at, options),
    requestRetry: (id, at, options) => store.requestRetry(id, at, options),
    listRequests: (filter) => store.listRequests(filter),
    clearRequest: (id, etag, options) => store.clearRequest(id, etag, options),
    requestRerun: (request, options) => store.requestRerun(request, options),
    listReruns: (filter) => store.listReruns(filter),
    clearRerun: (id, requestId, etag, options) =>
      hooks.clearRerun
        ? hooks.clearRerun(id, requestId, () => store.clearRerun(id, requestId, etag, options))
        : store.clearRerun(id, requestId, etag, options),
    purge: (id, options) => store.purge(id, options),
    markCorrupt: (id, reason, at, options) => store.markCorrupt(id, reason, at, options),
    acquireLease: (options) => (leaseHook ? leaseHook(options, () => store.acquireLease(options)) : store.acquireLease(options)),
    writeCoordinatorStats: (stats, options) => store.writeCoordinatorStats(stats, options),
    leaseState: (options) => store.leaseState(options),
    readCoordinatorStats: (options) => store.readCoordinatorStats(options),
  };
}

/** The task name of a task message body (null when it is not one). */
export function taskNameOf(body: string): string | null {
  const envelope = decodeEnvelope(body);
  if (!envelope.ok) return null;
  const task = decodeWorkflowTask(envelope.value.kwargs);
  return task.ok && task.value !== null ? task.value.taskName : null;
}

/** Task name → [status, attemptNo]. */
export function outcome(runtime: WorkflowRuntime): Record<string, [string, number]> {
  return Object.fromEntries(Object.entries(runtime.tasks).map(([name, task]) => [name, [task.status, task.attemptNo]]));
}

/** A shell command that appends a line to `path` (to count runs), then succeeds. */
export const countRun = (path: string) => `echo run >> '${path}'`;
