export * from './types';
export { createRuntime, emptyCounts, type CreateRuntimeInit } from './create';
export { foldEvents, reduce, type FoldResult } from './reduce';
export { policyVerdict } from './settle';
export { workflowStatus } from './status';
export { RUNTIME_FORMAT_VERSION, RuntimeDecodeError, decodeRuntime, encodeRuntime } from './codec';
