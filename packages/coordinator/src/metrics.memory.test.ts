import { describe, expect, it } from '@jest/globals';
import { METRICS, type Instruments, type MetricName } from '@jobq/ports';
import { useMemoryStacks } from './test-helpers/memory-stack';

// What the coordinator and the worker record through `Instruments` (docs/metrics.md):
// only metrics of the METRICS table with exactly its labels, counters that agree with the
// coordinator's stats, and a number of series that does not grow with the number of workflows.

/** Records every call: counter sums and the distinct series (name + labels). */
class RecordingInstruments implements Instruments {
  readonly enabled = true;
  readonly sums = new Map<string, number>();
  readonly series = new Set<string>();
  readonly problems: string[] = [];

  private key(name: MetricName, labels: Readonly<Record<string, string>>): string {
    const expected = [...METRICS[name].labels].sort();
    if (JSON.stringify(Object.keys(labels).sort()) !== JSON.stringify(expected))
      this.problems.push(`${name}: labels ${Object.keys(labels).join(',')}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    this.series.add(key);
    return key;
  }

  inc(name: MetricName, labels: Readonly<Record<string, string>>, value = 1): void {
    if (METRICS[name].type !== 'counter') this.problems.push(`${name}: inc on a ${METRICS[name].type}`);
    const key = this.key(name, labels);
    this.sums.set(key, (this.sums.get(key) ?? 0) + value);
  }

  observe(name: MetricName, labels: Readonly<Record<string, string>>, value: number): void {
    if (METRICS[name].type !== 'histogram') this.problems.push(`${name}: observe on a ${METRICS[name].type}`);
    if (!(value >= 0)) this.problems.push(`${name}: observed ${value}`);
    this.key(name, labels);
  }

  set(name: MetricName, labels: Readonly<Record<string, string>>, value: number): void {
    if (METRICS[name].type !== 'gauge') this.problems.push(`${name}: set on a ${METRICS[name].type}`);
    if (!(value >= 0)) this.problems.push(`${name}: set to ${value}`);
    this.key(name, labels);
  }

  sum(name: MetricName, labels: Record<string, string>): number {
    return this.sums.get(`${name}${JSON.stringify(Object.entries(labels).sort())}`) ?? 0;
  }
}

const stacks = useMemoryStacks();
const diamond = (name: string) => ({
  name,
  tasks: [
    { name: 'a', kwargs: { cmd: 'sleep 1' } },
    { name: 'b', depends_on: ['a'], kwargs: { cmd: 'true' } },
    { name: 'c', depends_on: ['a'], kwargs: { cmd: 'fail-before 2' }, num_retries: 1 },
    { name: 'd', depends_on: ['b', 'c'], kwargs: { cmd: 'true' } },
  ],
});

async function runMany(count: number): Promise<{ recorded: RecordingInstruments; stats: Record<string, unknown> }> {
  const recorded = new RecordingInstruments();
  const s = await stacks.open({ workers: 8, coordinator: { instruments: recorded }, workerInstruments: recorded });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await s.submit(diamond(`wf-${i}`)));
  let done = 0;
  await s.until(
    async () => {
      while (done < ids.length && (await s.store.load(ids[done]!))?.runtime.status === 'completed') done++;
      return done === ids.length;
    },
    () => `${done} of ${ids.length} completed`,
    3_600_000,
  );
  await s.coordinator.stop();
  return { recorded, stats: s.coordinator.stats() };
}

describe('Metrics recorded by the coordinator and the worker (in memory, virtual time)', () => {
  it('records only METRICS names with their labels, and the completion counters equal the stats', async () => {
    const { recorded, stats } = await runMany(3);
    expect(recorded.problems).toEqual([]);
    expect(recorded.sum('jobq_coordinator_completions_total', { result: 'applied' })).toBe(stats.completionsApplied);
    expect(recorded.sum('jobq_coordinator_completions_total', { result: 'ignored' })).toBe(stats.completionsIgnored);
    expect(recorded.sum('jobq_coordinator_completions_total', { result: 'poison' })).toBe(stats.poison);
    expect(stats.completionsApplied).toBe(3 * 5); // 4 tasks, one of them retried once
    expect(recorded.sum('jobq_coordinator_dispatches_total', { queue: 'default', result: 'ok' })).toBe(stats.pushes);
    const names = new Set([...recorded.series].map((k) => k.slice(0, k.indexOf('['))));
    for (const name of [
      'jobq_coordinator_batch_messages',
      'jobq_coordinator_flush_duration_seconds',
      'jobq_queue_messages',
      'jobq_worker_task_duration_seconds',
      'jobq_worker_task_queue_wait_seconds',
      'jobq_worker_slots',
      'jobq_worker_slots_busy',
    ]) {
      expect(names).toContain(name);
    }
    // A workflow task that fails is reported by its processor, which returns `done` to the worker.
    expect(recorded.series).toContain('jobq_worker_task_duration_seconds[["outcome","done"],["queue","mem-default"]]');
  });

  it('has as many series after 1 000 workflows as after 10', async () => {
    const ten = await runMany(10);
    const thousand = await runMany(1_000);
    expect(thousand.recorded.problems).toEqual([]);
    expect(thousand.stats.completionsApplied).toBe(5_000);
    expect([...thousand.recorded.series].sort()).toEqual([...ten.recorded.series].sort());
  });
});
