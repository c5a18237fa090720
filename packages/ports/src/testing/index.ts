/**
 * `@jobq/ports/testing`: the contract suites every adapter must pass, and in-memory adapters for
 * fast unit tests of services (which pass the same suites). Import from jest tests only.
 * @packageDocumentation
 */
export { describeTaskQueueContract, type TaskQueueContractOptions, type TaskQueueFixture } from './queue-suite';
export { InMemoryTaskQueue, type InMemoryTaskQueueOptions } from './in-memory-queue';
export * from './store-suite';
export * from './output-suite';
