/**
 * Large workflows for the dashboard's browser tests and bench: a fan (prep → N parallel tasks →
 * join) and a layered DAG, written into an in-memory store as a created and activated runtime.
 */
import { createRuntime, parseWorkflow, reduce, type WorkflowDefinition, type WorkflowRuntime } from '@jobq/dag-core';
import type { WorkflowStore } from '@jobq/ports';

const T0 = '2026-01-01T00:00:00.000Z';

function definitionOf(name: string, tasks: Array<{ name: string; depends_on?: string[]; queue?: string }>): WorkflowDefinition {
  const parsed = parseWorkflow(JSON.stringify({ name, tasks: tasks.map((t) => ({ ...t, kwargs: { cmd: 'true' } })) }), {
    filename: `${name}.json`,
  });
  if (!parsed.ok) throw new Error(`fixture ${name}: ${JSON.stringify(parsed.issues.slice(0, 2))}`);
  return parsed.value;
}

/** `prep` → `fan-00000`…`fan-{n-1}` → `join`: n + 2 tasks. */
export function fanDefinition(n: number): WorkflowDefinition {
  const tasks: Array<{ name: string; depends_on?: string[]; queue?: string }> = [{ name: 'prep', queue: 'cpu' }];
  const fan: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `fan-${String(i).padStart(5, '0')}`;
    fan.push(name);
    tasks.push({ name, depends_on: ['prep'], queue: 'gpu' });
  }
  tasks.push({ name: 'join', depends_on: fan, queue: 'cpu' });
  return definitionOf('fan-out', tasks);
}

/** `layers` layers of `width` tasks (`l03-0042`); each depends on one to three tasks of the layer before, picked by a fixed sequence. */
export function layeredDefinition(layers: number, width: number): WorkflowDefinition {
  const tasks: Array<{ name: string; depends_on?: string[]; queue?: string }> = [];
  const name = (l: number, i: number): string => `l${String(l).padStart(2, '0')}-${String(i).padStart(4, '0')}`;
  let seed = 12345;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed;
  };
  for (let l = 0; l < layers; l++) {
    for (let i = 0; i < width; i++) {
      if (l === 0) {
        tasks.push({ name: name(l, i), queue: 'cpu' });
        continue;
      }
      const deps = new Set<string>();
      const count = 1 + (next() % 3);
      for (let k = 0; k < count; k++) deps.add(name(l - 1, next() % width));
      tasks.push({ name: name(l, i), depends_on: [...deps], queue: l % 2 === 0 ? 'cpu' : 'gpu' });
    }
  }
  return definitionOf('layered', tasks);
}

/** Creates, activates and indexes a workflow; returns its runtime. */
export async function createWorkflow(store: WorkflowStore, workflowId: string, definition: WorkflowDefinition): Promise<WorkflowRuntime> {
  const created = createRuntime(definition, { workflowId, now: T0 });
  const { runtime } = reduce(created, { type: 'activate', now: T0 });
  await store.create(runtime, `fixture-${workflowId}`);
  await store.writeIndexRow(runtime);
  return runtime;
}

/** Finishes running tasks of a stored workflow (success or failure), as a coordinator would, and saves it. */
export async function finishTasks(
  store: WorkflowStore,
  workflowId: string,
  names: readonly string[],
  success = true,
  output: unknown = { ok: true },
): Promise<void> {
  const loaded = await store.load(workflowId);
  if (!loaded) throw new Error(`fixture: no workflow ${workflowId}`);
  let runtime = loaded.runtime;
  for (const taskName of names) {
    runtime = reduce(runtime, {
      type: 'completion',
      now: T0,
      taskName,
      attemptNo: null,
      success,
      outputRef: success ? JSON.stringify(output) : null,
      error: success ? null : 'fixture failure',
    }).runtime;
  }
  await store.save(runtime, loaded.etag);
  await store.writeIndexRow(runtime);
}
