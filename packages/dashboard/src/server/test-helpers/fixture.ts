import { WorkflowClient, definitionHash } from '@jobq/coordinator';
import { createRuntime, reduce, type WorkflowDefinition, type WorkflowEvent } from '@jobq/dag-core';
import { MemoryOutputStore, MemoryTaskQueue, MemoryWorkerRegistry, MemoryWorkflowStore } from '@jobq/memory';
import { VirtualClock, type WorkflowStore } from '@jobq/ports';

/** An event without its time (the fixture's clock gives it). */
export type EventInput = WorkflowEvent extends infer E ? (E extends WorkflowEvent ? Omit<E, 'now'> : never) : never;

/** Method calls made on a store, by name. */
export type CallCounts = Record<string, number>;

/** A store that counts the calls made on it (every method is one or more storage requests). */
export function countingStore(inner: WorkflowStore): { store: WorkflowStore; calls: CallCounts; fail: { next: Error | null } } {
  const calls: CallCounts = {};
  const fail: { next: Error | null } = { next: null };
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]): unknown => {
        calls[key] = (calls[key] ?? 0) + 1;
        if (fail.next) return Promise.reject(fail.next);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls, fail };
}

/** In-memory ports, a virtual clock, and helpers that move workflows forward as the coordinator would. */
export class Fixture {
  readonly clock = new VirtualClock({ startMs: Date.UTC(2026, 0, 1) });
  readonly memory = new MemoryWorkflowStore();
  readonly counting = countingStore(this.memory);
  readonly store = this.counting.store;
  readonly outputs = new MemoryOutputStore();
  readonly completions = new MemoryTaskQueue({ name: 'p-workflow-completions' });
  readonly workers = new MemoryWorkerRegistry({ clock: this.clock });
  readonly client = new WorkflowClient({
    store: this.memory,
    completions: this.completions,
    outputsContainer: this.outputs.outputsContainer,
    now: () => new Date(this.clock.now()),
  });

  async submit(id: string, text: string): Promise<void> {
    await this.client.submit({ text, filename: `${id}.yaml` }, { id });
  }

  /** Creates a workflow from a definition without validating it (big shapes). */
  async create(id: string, definition: WorkflowDefinition): Promise<void> {
    const runtime = createRuntime(definition, {
      workflowId: id,
      now: new Date(this.clock.now()).toISOString(),
      outputsContainer: this.outputs.outputsContainer,
    });
    await this.memory.create(runtime, definitionHash(definition));
  }

  /** Applies events to a workflow's runtime and saves it (as the coordinator does). */
  async apply(id: string, ...events: EventInput[]): Promise<void> {
    const loaded = await this.memory.load(id);
    if (!loaded) throw new Error(`no workflow ${id}`);
    let runtime = loaded.runtime;
    for (const event of events) {
      runtime = reduce(runtime, { ...event, now: new Date(this.clock.now()).toISOString() }).runtime;
    }
    await this.memory.save(runtime, loaded.etag, { previous: loaded.runtime });
  }

  /** Completes a task's current attempt (success with an output, or failure). */
  async finish(id: string, taskName: string, outcome: { output?: unknown; error?: string }): Promise<void> {
    const loaded = await this.memory.load(id);
    const attemptNo = loaded?.runtime.tasks[taskName]?.attemptNo ?? 1;
    let outputRef: string | null = null;
    if (outcome.output !== undefined)
      outputRef = (await this.outputs.putOutput(id, taskName, attemptNo, JSON.stringify(outcome.output))).ref;
    await this.apply(id, {
      type: 'completion',
      taskName,
      attemptNo,
      success: outcome.error === undefined,
      outputRef,
      error: outcome.error ?? null,
    });
  }
}
