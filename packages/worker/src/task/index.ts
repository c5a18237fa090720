/**
 * `@jobq/worker/task`: deprecated, import `@jobq/task` instead. The task helpers moved to their own
 * package; this subpath re-exports it until the next minor version and needs `@jobq/task` installed
 * next to `@jobq/worker` (see the worker's README).
 * @deprecated Import `@jobq/task`.
 * @packageDocumentation
 */
export * from '@jobq/task';
