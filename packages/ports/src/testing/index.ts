/**
 * `@jobq/ports/testing`: the contract suites every adapter must pass (the in-memory adapters of
 * `@jobq/memory` pass them too). Import from jest tests only.
 * @packageDocumentation
 */
export { describeTaskQueueContract, type TaskQueueContractOptions, type TaskQueueFixture } from './queue-suite';
export * from './store-suite';
export * from './output-suite';
export * from './worker-registry-suite';
export * from './ownership-suite';
export * from './store-shard-suite';
