/**
 * The reference model of the reducer: the implementation as it stood before the incremental
 * representation (runtime/ at f148958: reduce, draft, dispatch, settle, status, step, graph-index,
 * create, assemble), with its imports pointed at the shared pure modules. Plain objects: `tasks` is
 * an ordinary record, copied on the first change of each call, every parent re-read by `settle`,
 * every task walked by the dispatch round, the sweep, cancel and retry. Slow and obviously right.
 *
 * The property tests in `../../equivalence.test.ts` hold the live reducer to it. Do not optimise
 * it; change it only together with the live reducer, when the semantics change on purpose.
 */
export { foldEvents as referenceFold, reduce as referenceReduce, type FoldResult as ReferenceFoldResult } from './reduce';
export { createRuntime as referenceCreate } from './create';
export { assembleRuntime as referenceAssemble } from './assemble';
export { workflowStatus as referenceWorkflowStatus } from './status';
export type { ReduceResult as ReferenceReduceResult, WorkflowRuntime as ReferenceRuntime } from './types';
