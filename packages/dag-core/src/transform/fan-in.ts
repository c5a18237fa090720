import { toRawDefinition } from '../definition/convert';
import { MERGE_PREFIX, isMergeNode } from '../definition/semantics';
import type { TaskDefinition, WorkflowDefinition } from '../definition/types';
import { validateWith } from '../definition/validate';
import type { Issue, Result } from '../result';

/** Name of the merge node that closes batch `batch` of `target`'s dependencies. */
export function mergeNodeName(target: string, batch: number): string {
  return `${MERGE_PREFIX}${target}_${batch}`;
}

/**
 * Splits every dependency list longer than `maxFanIn` into batches of `maxFanIn` joined by a chain
 * of merge nodes (docs/workflow-language.md#wide-fan-ins): batch i's merge node depends on the batch and on the previous merge
 * node; each task of batch i > 0 waits for the previous merge node as a gate; the target depends
 * on the last merge node only. Batches therefore run one after another, and no task has more than
 * `maxFanIn + 1` predecessors. Returns the same object when nothing needs splitting. A target with
 * a condition or a policy other than `all` is refused: its meaning would change. Never throws.
 */
export function sequentializeFanIn(definition: WorkflowDefinition, maxFanIn: number): Result<WorkflowDefinition> {
  if (!Number.isInteger(maxFanIn) || maxFanIn < 2) {
    return { ok: false, issues: [{ code: 'bad-fan-in', path: '', message: `--max-fan-in must be an integer ≥ 2, got ${maxFanIn}` }] };
  }
  const issues: Issue[] = [];
  definition.tasks.forEach((task, index) => {
    if (task.dependsOn.length <= maxFanIn) return;
    if (task.condition !== null) {
      issues.push({
        code: 'condition-with-fan-in',
        path: `tasks[${index}].condition`,
        message: `task "${task.name}" has ${task.dependsOn.length} dependencies and a condition: a condition cannot be split by --max-fan-in ${maxFanIn}`,
      });
    }
    if (task.depPolicy !== 'all') {
      issues.push({
        code: 'bad-fan-in',
        path: `tasks[${index}].dep_policy`,
        message: `task "${task.name}" has ${task.dependsOn.length} dependencies and dep_policy ${JSON.stringify(task.depPolicy)}: only "all" can be split by --max-fan-in ${maxFanIn}`,
      });
    }
  });
  if (issues.length > 0) return { ok: false, issues };
  if (!definition.tasks.some((t) => t.dependsOn.length > maxFanIn)) return { ok: true, value: definition, warnings: [] };

  const gates = new Map<string, string[]>();
  const addGate = (name: string, gate: string) => {
    const list = gates.get(name) ?? [];
    list.push(gate);
    gates.set(name, list);
  };
  const tasks: TaskDefinition[] = [];
  for (const task of definition.tasks) {
    if (task.dependsOn.length <= maxFanIn) {
      tasks.push(task);
      continue;
    }
    let previous: string | undefined;
    for (let batch = 0, start = 0; start < task.dependsOn.length; batch++, start += maxFanIn) {
      const members = task.dependsOn.slice(start, start + maxFanIn);
      if (previous !== undefined) for (const member of members) addGate(member, previous);
      const merge = mergeNodeName(task.name, batch);
      tasks.push({
        name: merge,
        kwargs: { __batch_merge: true, __target: task.name, __batch: batch },
        dependsOn: previous === undefined ? members : [...members, previous],
        queue: null,
        depPolicy: 'all',
        condition: null,
        numRetries: 0,
        timeoutS: null,
        retryDelayS: null,
        retryBackoff: null,
        retryMaxDelayS: null,
      });
      previous = merge;
    }
    tasks.push({ ...task, dependsOn: [previous!] });
  }
  const gated = tasks.map((task) => {
    const extra = gates.get(task.name);
    return extra === undefined ? task : { ...task, gates: [...(task.gates ?? []), ...extra] };
  });
  return validateWith(toRawDefinition({ ...definition, tasks: gated }), { internal: true });
}

/**
 * The real parents of a task: its dependencies, with merge nodes replaced by the tasks they merge,
 * in the original dependency order. Gates are not parents. Unknown task → `[]`. Iterative, so long
 * merge chains do not overflow the stack.
 */
export function realUpstreamTasks(definition: WorkflowDefinition, taskName: string): string[] {
  const byName = new Map(definition.tasks.map((t) => [t.name, t]));
  const start = byName.get(taskName);
  if (!start) return [];
  const out: string[] = [];
  const emitted = new Set<string>();
  const expanded = new Set<string>();
  // A merge node lists its batch, then the previous merge node: earlier batches come first.
  const parentsOf = (task: TaskDefinition): string[] =>
    isMergeNode(task.name, task.kwargs)
      ? [...task.dependsOn.filter((d) => d.startsWith(MERGE_PREFIX)), ...task.dependsOn.filter((d) => !d.startsWith(MERGE_PREFIX))]
      : task.dependsOn;
  // A copy: `parentsOf` hands back the task's own `dependsOn`, which must not be reversed or popped.
  const stack = [...parentsOf(start)].reverse();
  while (stack.length > 0) {
    const name = stack.pop()!;
    const task = byName.get(name);
    if (task && isMergeNode(task.name, task.kwargs)) {
      if (expanded.has(name)) continue;
      expanded.add(name);
      stack.push(...parentsOf(task).reverse());
    } else if (!emitted.has(name)) {
      emitted.add(name);
      out.push(name);
    }
  }
  return out;
}
