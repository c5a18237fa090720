/**
 * `@jobq/dag-core`: the pure core of jobq. Definitions, validation and JSON Schema; the condition
 * language; DAG transforms; the reducer that moves a workflow forward; wire codecs. No Node
 * modules, no Azure, no clock, no randomness: time and ids arrive as arguments.
 * @packageDocumentation
 */

export type { Issue, Result } from './result';

export type { DepPolicy, ResultPolicy, TaskDefinition, WorkflowDefinition } from './definition/types';
export { taskQueue, taskTimeoutS } from './definition/types';
export { parseWorkflow, MAX_YAML_ALIAS_EXPANSION, type ParseWorkflowOptions } from './definition/parse';
export { validateWorkflow } from './definition/validate';
export { workflowJsonSchema } from './definition/schema';
export { toRawDefinition } from './definition/convert';
export { DEFINITION_ISSUE_CODES, DEFINITION_WARNING_CODES, type DefinitionIssueCode } from './definition/issue-codes';
export {
  INTERNAL_TASK_NAME_PATTERN,
  MAX_TASK_NAME_LENGTH,
  QUEUE_SPEC_PATTERN,
  TASK_NAME_PATTERN,
  parseQueueSpec,
  taskNameProblem,
  type QueueSpec,
} from './definition/names';
export { MERGE_PREFIX, isMergeNode } from './definition/semantics';

export { compileCondition, evaluateCondition, fnmatch, type CompiledCondition, type ConditionEvaluation } from './condition';

export { mergeNodeName, realUpstreamTasks, sequentializeFanIn } from './transform/fan-in';

export * from './wire';

export * from './runtime';
