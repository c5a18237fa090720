/**
 * `@jobq/coordinator`: the {@link Coordinator} loop and the {@link WorkflowClient} (submit, status, list, cancel, retry, re-run, explain).
 * Depends on `@jobq/ports` and `@jobq/dag-core` only; storage and queue adapters are handed in.
 * @packageDocumentation
 */
export {
  SUBMIT_ID_PATTERN,
  WorkflowClient,
  WorkflowValidationError,
  canonicalJson,
  definitionHash,
  formatIssue,
  runtimeView,
  type ExplainOptions,
  type ExplainReport,
  type ExplainedQueue,
  type ExplainedTask,
  type RequestResult,
  type RerunOptions,
  type RerunResult,
  type RuntimeView,
  type SubmitManyItem,
  type SubmitManyOptions,
  type SubmitManyResult,
  type SubmitOptions,
  type SubmitResult,
  type SubmitSource,
  type WorkflowClientOptions,
  type WorkflowStatusReport,
} from './workflow-client';
export {
  COORDINATOR_DEFAULTS,
  Coordinator,
  MAX_PIPELINE_DEPTH,
  type CoordinatorCounters,
  type CoordinatorHealth,
  type CoordinatorInit,
  type CoordinatorPhase,
  type CoordinatorOptions,
  type CoordinatorShard,
} from './coordinator';
export {
  SHARD_BALANCER_DEFAULTS,
  ShardBalancer,
  coordinatorRunners,
  type CoordinatorRunnersInit,
  type ShardBalancerInit,
  type ShardBalancerOptions,
  type ShardBalancerPhase,
  type ShardRunner,
  type ShardRunnerFactory,
} from './shard-balancer';
export { planShards, shardShares, type ShardPlan } from './shard-plan';
export { applyEvents, RuntimeCache, type ApplyContext, type ApplyCounters, type ApplyOutcome, type CachedRuntime, type QueueResolver } from './effects';
export { finishedWorkflows, purgeWorkflow, type PurgeWorkflowOptions, type WorkflowPurge } from './purge';
