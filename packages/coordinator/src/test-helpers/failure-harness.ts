import { openStack, type Harness, type Stack, type StackOptions } from './stack';

export {
  openTestQueue,
  useHarness,
  waitUntil,
  type CoordinatorPorts,
  type Harness,
  type QueueBackend,
  type Stack,
  type StackOptions,
  type TestQueue,
  type WorkerHandle,
  type WorkerProcess,
} from './stack';
export { countRun, outcome, taskNameOf, wrapStore, WrappedQueue, type LeaseHook, type SaveHook } from './wrappers';

// The coordinator's failure tests: the stack of ./stack (Azurite, real queues, real workers, every
// port wrappable through ./wrappers for failure injection) with locks of 2 s on both queues, so a
// message whose holder stopped comes back soon.

/** {@link openStack} with 2 s locks on the completion and task queues unless `options` set them. */
export function failureStack(h: Harness, options: StackOptions = {}): Promise<Stack> {
  return openStack(h, { ...options, completionLockInMs: options.completionLockInMs ?? 2_000, taskLockInMs: options.taskLockInMs ?? 2_000 });
}
