/**
 * The benchmark workflow shapes, built as a user would submit them (raw, snake_case), and the
 * prepared state a run starts from: validated, transformed, created and activated.
 */
import {
  createRuntime,
  reduce,
  sequentializeFanIn,
  validateWorkflow,
  type Effect,
  type WorkflowDefinition,
  type WorkflowRuntime,
} from '@jobq/dag-core';

export interface RawTask {
  name: string;
  kwargs: { cmd: string };
  depends_on?: string[];
}

export interface RawWorkflow {
  name: string;
  tasks: RawTask[];
}

export type Shape = 'wide' | 'wide/seq1000' | 'layered';
export const SHAPES: readonly Shape[] = ['wide', 'wide/seq1000', 'layered'];

/** Tasks per layer of the layered shape. */
export const LAYER_WIDTH = 100;
/** `--max-fan-in` of the seq1000 shape. */
export const MAX_FAN_IN = 1000;

export const T_CREATE = '2026-01-01T00:00:00.000Z';
export const T_ACTIVATE = '2026-01-01T00:00:01.000Z';
export const T_RUN = '2026-01-01T00:00:02.000Z';
export const WORKFLOW_ID = 'bench-wf';
export const OUTPUTS_CONTAINER = 'bench-outputs';

/** `root` → n−2 leaves → `sink` (the sink depends on every leaf). */
export function wideRaw(n: number): RawWorkflow {
  const tasks: RawTask[] = [{ name: 'root', kwargs: { cmd: 'true' } }];
  const leaves: string[] = [];
  for (let i = 0; i < n - 2; i++) {
    const name = `leaf${i}`;
    leaves.push(name);
    tasks.push({ name, kwargs: { cmd: 'true' }, depends_on: ['root'] });
  }
  tasks.push({ name: 'sink', kwargs: { cmd: 'true' }, depends_on: leaves });
  return { name: `wide-${n}`, tasks };
}

/** Numerical Recipes LCG; the low bits are weak, so callers get the top 24. */
export function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state >>> 8;
  };
}

/** n/width layers of `width` tasks; each task depends on 2 or 3 tasks of the previous layer (fixed seed). */
export function layeredRaw(n: number, width = LAYER_WIDTH): RawWorkflow {
  const layers = Math.round(n / width);
  const next = lcg(0x5eed);
  const name = (layer: number, j: number) => `l${layer}_${j}`;
  const tasks: RawTask[] = [];
  for (let layer = 0; layer < layers; layer++) {
    for (let j = 0; j < width; j++) {
      if (layer === 0) {
        tasks.push({ name: name(layer, j), kwargs: { cmd: 'true' } });
        continue;
      }
      const k = 2 + (next() % 2);
      const picked = new Set<number>();
      while (picked.size < k) picked.add(next() % width);
      const deps = [...picked].sort((a, b) => a - b).map((p) => name(layer - 1, p));
      tasks.push({ name: name(layer, j), kwargs: { cmd: 'true' }, depends_on: deps });
    }
  }
  return { name: `layered-${n}`, tasks };
}

/** The validated (and, for seq1000, transformed) definition of a shape at n tasks. */
export function definitionOf(shape: Shape, n: number): WorkflowDefinition {
  const raw = shape === 'layered' ? layeredRaw(n) : wideRaw(n);
  const valid = validateWorkflow(raw);
  if (!valid.ok) throw new Error(`${shape} ${n}: invalid: ${JSON.stringify(valid.issues.slice(0, 3))}`);
  if (shape !== 'wide/seq1000') return valid.value;
  const seq = sequentializeFanIn(valid.value, MAX_FAN_IN);
  if (!seq.ok) throw new Error(`sequentializeFanIn: ${JSON.stringify(seq.issues.slice(0, 3))}`);
  return seq.value;
}

/** Task names waiting for their completion, first dispatched first (a ring over an array). */
export class Fifo {
  private items: string[] = [];
  private head = 0;
  push(name: string): void {
    this.items.push(name);
  }
  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const name = this.items[this.head++];
    if (this.head > 65_536 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return name;
  }
  get length(): number {
    return this.items.length - this.head;
  }
  clone(): Fifo {
    const copy = new Fifo();
    copy.items = this.items.slice(this.head);
    return copy;
  }
}

/** Queues the dispatched tasks of `effects`; an ignored event is a bench bug. */
export function queueDispatches(effects: readonly Effect[], queue: Fifo): void {
  for (const e of effects) {
    if (e.type === 'dispatch') queue.push(e.taskName);
    else if (e.type === 'ignored') throw new Error(`bench bug: event ignored: ${e.reason}`);
  }
}

/** A created and activated runtime of a shape, with the tasks its activation dispatched. */
export function activated(definition: WorkflowDefinition): { runtime: WorkflowRuntime; queue: Fifo } {
  const created = createRuntime(definition, { workflowId: WORKFLOW_ID, now: T_CREATE, outputsContainer: OUTPUTS_CONTAINER });
  const r = reduce(created, { type: 'activate', now: T_ACTIVATE });
  const queue = new Fifo();
  queueDispatches(r.effects, queue);
  return { runtime: r.runtime, queue };
}
