import { validateWorkflow } from '../../definition/validate';
import type { WorkflowDefinition } from '../../definition/types';
import { decodeRuntime } from '../codec';
import { createRuntime } from '../create';
import { reduce } from '../reduce';
import type { Effect, ReduceResult, WorkflowEvent, WorkflowRuntime } from '../types';

/** A definition from a compact list of tasks; every task gets a `cmd`. */
export function definition(tasks: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}): WorkflowDefinition {
  const result = validateWorkflow({ name: 'test', ...extra, tasks: tasks.map((t) => ({ kwargs: { cmd: 'true' }, ...t })) });
  if (!result.ok) throw new Error(result.issues.map((i) => `${i.path}: ${i.message}`).join('\n'));
  return result.value;
}

/** Second `n` of 2026-01-01 as an ISO timestamp. */
/** The runtime {@link decodeRuntime} reads from `text`; throws its one-line error when it reads none. */
export function decodedRuntime(text: string): WorkflowRuntime {
  const result = decodeRuntime(text);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

export function at(n: number): string {
  const seconds = String(n % 60).padStart(2, '0');
  const minutes = String(Math.floor(n / 60) % 60).padStart(2, '0');
  const hours = String(Math.floor(n / 3600)).padStart(2, '0');
  return `2026-01-01T${hours}:${minutes}:${seconds}.000Z`;
}

/** An event without its timestamp (the harness supplies one), for each kind of event. */
export type EventInput = WorkflowEvent extends infer E ? (E extends WorkflowEvent ? Omit<E, 'now'> & { now?: string } : never) : never;

/** Drives a runtime with events, remembering every effect, with a clock that ticks once per event. */
export class Harness {
  runtime: WorkflowRuntime;
  effects: Effect[] = [];
  last: ReduceResult | undefined;
  private clock = 0;

  constructor(def: WorkflowDefinition, outputsContainer: string | null = 'test-outputs') {
    this.runtime = createRuntime(def, { workflowId: 'wf1', now: at(0), outputsContainer });
  }

  now(): string {
    return at(++this.clock);
  }

  /** Moves the clock forward without an event. */
  advance(seconds: number): void {
    this.clock += seconds;
  }

  send(event: EventInput): ReduceResult {
    const full = { now: this.now(), ...event };
    this.last = reduce(this.runtime, full);
    this.runtime = this.last.runtime;
    this.effects.push(...this.last.effects);
    return this.last;
  }

  activate(): ReduceResult {
    return this.send({ type: 'activate' });
  }

  succeed(taskName: string, outputRef: string | null = null, attemptNo: number | null = this.attempt(taskName)): ReduceResult {
    return this.send({ type: 'completion', taskName, attemptNo, success: true, outputRef, error: null });
  }

  fail(taskName: string, error = 'exit code 1', attemptNo: number | null = this.attempt(taskName)): ReduceResult {
    return this.send({ type: 'completion', taskName, attemptNo, success: false, outputRef: null, error });
  }

  attempt(taskName: string): number {
    return this.runtime.tasks[taskName]?.attemptNo ?? 0;
  }

  status(taskName: string): string | undefined {
    return this.runtime.tasks[taskName]?.status;
  }

  statuses(): Record<string, string> {
    return Object.fromEntries(Object.entries(this.runtime.tasks).map(([name, t]) => [name, t.status]));
  }

  /** Names dispatched by the last event, in order. */
  dispatched(): string[] {
    return (this.last?.effects ?? []).flatMap((e) => (e.type === 'dispatch' ? [e.taskName] : []));
  }
}
