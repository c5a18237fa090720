import type { TaskRuntime, WorkflowRuntime } from './types';

/**
 * A copy-on-write working copy of a runtime for one `reduce` call: the input is never touched, the
 * `tasks` map and counts are copied once, on the first task change, and unchanged calls hand back
 * the very object they were given.
 */
export class Draft {
  readonly runtime: WorkflowRuntime;
  /** Number of changes made so far; a call changed something when this moved. */
  changes = 0;
  private tasksCopied = false;

  constructor(readonly base: WorkflowRuntime) {
    this.runtime = { ...base };
  }

  get changed(): boolean {
    return this.changes > 0;
  }

  task(name: string): TaskRuntime | undefined {
    return Object.prototype.hasOwnProperty.call(this.runtime.tasks, name) ? this.runtime.tasks[name] : undefined;
  }

  /** Replaces a task's record (records are never mutated) and keeps the counts in step. */
  setTask(name: string, next: TaskRuntime): void {
    if (!this.tasksCopied) {
      this.runtime.tasks = { ...this.base.tasks };
      this.runtime.counts = { ...this.base.counts };
      this.tasksCopied = true;
    }
    const previous = this.runtime.tasks[name];
    if (previous && previous.status !== next.status) {
      this.runtime.counts[previous.status]--;
      this.runtime.counts[next.status]++;
    }
    this.runtime.tasks[name] = next;
    this.changes++;
  }

  /** Merges changes into a task's record. */
  updateTask(name: string, patch: Partial<TaskRuntime>): void {
    const current = this.task(name);
    if (current) this.setTask(name, { ...current, ...patch });
  }

  set<K extends keyof WorkflowRuntime>(key: K, value: WorkflowRuntime[K]): void {
    if (this.runtime[key] === value) return;
    this.runtime[key] = value;
    this.changes++;
  }
}
