import { compileCondition, type CompiledCondition } from '../../../condition';
import { isMergeNode } from '../../../definition/semantics';
import type { TaskDefinition, WorkflowDefinition } from '../../../definition/types';
import { realUpstreamTasks } from '../../../transform/fan-in';

/**
 * Facts derived from a definition that the reducer needs on every call: who depends on whom,
 * which tasks are merge nodes or sinks, compiled conditions. Computed once per definition object
 * and remembered (a definition is never mutated), so a reduce call costs what the event touches,
 * not the size of the workflow.
 */
export interface GraphIndex {
  readonly tasks: readonly TaskDefinition[];
  readonly position: ReadonlyMap<string, number>;
  /** Tasks that list this one in `dependsOn` or `gates`. */
  readonly dependents: ReadonlyMap<string, readonly string[]>;
  readonly merge: ReadonlySet<string>;
  readonly sinks: readonly string[];
  condition(task: TaskDefinition): { ok: true; value: CompiledCondition } | { ok: false; error: string };
  realParents(taskName: string): readonly string[];
}

const cache = new WeakMap<WorkflowDefinition, GraphIndex>();

/** The index of a definition, built on first use. */
export function graphIndex(definition: WorkflowDefinition): GraphIndex {
  let index = cache.get(definition);
  if (!index) {
    index = buildIndex(definition);
    cache.set(definition, index);
  }
  return index;
}

function buildIndex(definition: WorkflowDefinition): GraphIndex {
  const position = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  const merge = new Set<string>();
  definition.tasks.forEach((task, i) => {
    position.set(task.name, i);
    if (isMergeNode(task.name, task.kwargs)) merge.add(task.name);
  });
  for (const task of definition.tasks) {
    for (const parent of [...task.dependsOn, ...(task.gates ?? [])]) {
      const list = dependents.get(parent);
      if (list) list.push(task.name);
      else dependents.set(parent, [task.name]);
    }
  }
  const sinks = definition.tasks.filter((t) => !dependents.has(t.name)).map((t) => t.name);
  const conditions = new Map<string, ReturnType<GraphIndex['condition']>>();
  const realParents = new Map<string, readonly string[]>();
  return {
    tasks: definition.tasks,
    position,
    dependents,
    merge,
    sinks,
    condition(task) {
      let compiled = conditions.get(task.name);
      if (!compiled) {
        const result = compileCondition(task.condition ?? '', task.dependsOn);
        compiled = result.ok
          ? { ok: true, value: result.value }
          : { ok: false, error: `condition does not compile: ${result.issues.map((i) => i.message).join('; ')}` };
        conditions.set(task.name, compiled);
      }
      return compiled;
    },
    realParents(taskName) {
      let parents = realParents.get(taskName);
      if (!parents) {
        const task = definition.tasks[position.get(taskName) ?? -1];
        // Only tasks below merge nodes need the walk; the others' parents are their dependencies.
        parents = task && task.dependsOn.some((d) => merge.has(d)) ? realUpstreamTasks(definition, taskName) : (task?.dependsOn ?? []);
        realParents.set(taskName, parents);
      }
      return parents;
    },
  };
}
