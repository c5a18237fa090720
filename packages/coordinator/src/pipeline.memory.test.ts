import { describe, expect, it } from '@jest/globals';
import { isTerminalWorkflowStatus, type WorkflowRuntime } from '@jobq/dag-core';
import { decodeCoordinatorMessage } from '@jobq/dag-core/wire';
import { JobqError, type SaveResult } from '@jobq/ports';
import { useMemoryStacks, type MemoryStack } from './test-helpers/memory-stack';
import { outcome, taskNameOf, wrapStore, WrappedQueue } from './test-helpers/wrappers';

// Pipelining (docs/failure-model.md, "Pipelining"), on the in-memory adapters and a virtual clock:
// the next batch is received, folded and pushed while a save is in flight, and saved once the ETag
// it needs is known; no message is acked before a save that holds it; a save never records a
// dispatch that was not pushed; a 412 or a crash while batches overlap loses nothing and applies
// nothing twice.

const stacks = useMemoryStacks();

const terminal = (r: WorkflowRuntime) => isTerminalWorkflowStatus(r.status);

function completionOf(body: string): string | null {
  const decoded = decodeCoordinatorMessage(body);
  return decoded.kind === 'completion' ? decoded.completion.taskName : null;
}

/** a and b run in parallel (b longer), each with a child; the batches of a and of b overlap when a's save is held. */
const twoChains = (name: string) => ({
  name,
  tasks: [
    { name: 'a', kwargs: { cmd: 'sleep 1' } },
    { name: 'b', kwargs: { cmd: 'sleep 2' } },
    { name: 'a2', depends_on: ['a'], kwargs: { cmd: 'true' } },
    { name: 'b2', depends_on: ['b'], kwargs: { cmd: 'true' } },
  ],
});

interface Probe {
  /** Completions acked, by task name, in order. */
  acked: string[];
  /** Acks made before a save holding their completion (must stay empty). */
  early: string[];
  /** The most acks in flight at once. */
  peakAcks: number;
  /** From now on the coordinator is dead: its saves fail, its acks fail, its receives take messages and never answer. */
  crash(): void;
  /** Saves, each as the tasks it records completed. */
  saves: string[][];
  /** Saves that recorded a running task not pushed before (must stay empty). */
  unpushed: string[];
  /** Holds the next save that records `task` completed until `release()`; `fail` makes it a 412 instead. */
  hold(task: string, fail?: boolean): { held: () => boolean; release: () => void };
}

/** A stack whose coordinator saves and acks are watched (and can be held). */
async function probed(extra: Parameters<typeof stacks.open>[0] = {}, ackDelayInMs = 0): Promise<{ s: MemoryStack; probe: Probe }> {
  const acked: string[] = [];
  const saves: string[][] = [];
  const unpushed: string[] = [];
  const early: string[] = [];
  let crashed = false;
  let acking = 0;
  let holding: { task: string; fail: boolean; gate: Promise<void>; open: () => void; held: boolean } | null = null;
  let stack: MemoryStack | null = null;
  const s = await stacks.open({
    ...extra,
    coordinatorStore: (store) =>
      wrapStore(store, async (runtime, _etag, save): Promise<SaveResult> => {
        if (crashed) throw new JobqError('internal', 'injected: the coordinator crashed');
        const h = holding;
        if (h !== null && !h.held && runtime.tasks[h.task]?.status === 'completed') {
          h.held = true;
          await h.gate;
          holding = null;
          if (h.fail) {
            const current = await store.load(runtime.workflowId);
            if (current) await store.save(current.runtime, current.etag); // another writer: the ETag moves
          }
        }
        // Push before save: every task the save records as running was pushed at least once.
        for (const [name, task] of Object.entries(runtime.tasks))
          if (task.status === 'running' && !(stack?.pushed.get(name) ?? 0)) unpushed.push(name);
        if (crashed) throw new JobqError('internal', 'injected: the coordinator crashed');
        const result = await save();
        saves.push(
          Object.entries(runtime.tasks)
            .filter(([, t]) => t.status === 'completed')
            .map(([n]) => n)
            .sort(),
        );
        return result;
      }),
    coordinatorCompletions: (queue) =>
      new WrappedQueue(queue, {
        receive: async (options, receive) => {
          if (!crashed) return receive();
          await receive();
          await new Promise<void>((resolve) => options.abortSignal?.addEventListener('abort', () => resolve(), { once: true }));
          return [];
        },
        complete: async (message, complete) => {
          if (crashed) throw new JobqError('internal', 'injected: the coordinator crashed');
          const name = completionOf(message.body);
          if (name !== null && !saves.some((done) => done.includes(name))) early.push(name);
          probe.peakAcks = Math.max(probe.peakAcks, ++acking);
          if (ackDelayInMs > 0) await s.clock.sleep(ackDelayInMs);
          acking--;
          await complete();
          if (name !== null) acked.push(name);
        },
      }),
  });
  stack = s;
  const probe: Probe = {
    acked,
    early,
    peakAcks: 0,
    saves,
    unpushed,
    crash: () => {
      crashed = true;
    },
    hold(task, fail = false) {
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const h = { task, fail, gate, open, held: false };
      holding = h;
      return { held: () => h.held, release: () => h.open() };
    },
  };
  return { s, probe };
}

describe('Coordinator pipelining (in memory, virtual time)', () => {
  it('folds and pushes the next batch while a save is in flight, saves it once that save is done, and acks each batch only after its save', async () => {
    const { s, probe } = await probed();
    const hold = probe.hold('a');
    const workflowId = await s.submit(twoChains('overlap'));
    await s.until(hold.held, () => "a's save never started");
    // a's save is in flight. b completes meanwhile: its batch is received, folded and b2 pushed.
    await s.until(
      () => (s.pushed.get('b2') ?? 0) === 1,
      () => `pushed ${JSON.stringify([...s.pushed])}`,
    );
    // Push before save: a2 went out before a's save started; nothing of a or b is acked yet.
    expect(s.pushed.get('a2')).toBe(1);
    expect(probe.acked).toEqual([]);
    expect(probe.saves.some((done) => done.includes('a'))).toBe(false);
    hold.release();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], a2: ['completed', 1], b2: ['completed', 1] });
    await s.until(
      () => probe.acked.length >= 4,
      () => `acked ${probe.acked.join(',')}`,
    );
    // a's save, then b's batch saved at once over its ETag (no 412, nothing re-pushed).
    const withA = probe.saves.findIndex((d) => d.includes('a'));
    expect(probe.saves[withA]).not.toContain('b');
    expect(probe.saves[withA + 1]).toContain('b');
    expect(s.coordinator.counters).toMatchObject({ conflicts: 0, completionsApplied: 4, completionsIgnored: 0 });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1, a2: 1, b2: 1 });
    expect(probe.unpushed).toEqual([]);
    // Each completion acked once, none before a save that holds it.
    expect([...probe.acked].sort()).toEqual(['a', 'a2', 'b', 'b2']);
    expect(probe.early).toEqual([]);
  });

  it('the next batch folds while the task messages of the one before are still being sent; nothing is saved before they are', async () => {
    let release: () => void = () => undefined;
    let heldA2 = false;
    const { s, probe } = await probed({
      coordinatorTasks: (queue) =>
        new WrappedQueue(queue, {
          send: async (messages, send) => {
            if (!heldA2 && messages.some((m) => taskNameOf(m.body) === 'a2')) {
              heldA2 = true;
              await new Promise<void>((resolve) => (release = resolve));
            }
            return send();
          },
        }),
    });
    const workflowId = await s.submit(twoChains('slow-push'));
    await s.until(
      () => heldA2,
      () => "a2's push never started",
    );
    // a's batch is folded, its push held. b's batch folds on it meanwhile and pushes b2.
    await s.until(
      () => (s.pushed.get('b2') ?? 0) === 1,
      () => `pushed ${JSON.stringify([...s.pushed])}`,
    );
    expect(s.pushed.get('a2') ?? 0).toBe(0);
    expect(probe.saves.some((done) => done.includes('a'))).toBe(false);
    expect(probe.acked).toEqual([]);
    release();
    const done = await s.waitFor(workflowId, terminal);
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], a2: ['completed', 1], b2: ['completed', 1] });
    // Once a2 went out, one save stored both batches.
    const first = probe.saves.find((d) => d.includes('a'));
    expect(first).toEqual(expect.arrayContaining(['a', 'b']));
    expect(s.coordinator.counters).toMatchObject({ conflicts: 0, completionsApplied: 4, completionsIgnored: 0 });
    expect(Object.fromEntries(s.pushed)).toEqual({ a: 1, b: 1, a2: 1, b2: 1 });
    expect(probe.unpushed).toEqual([]);
    expect(probe.early).toEqual([]);
  });

  it('a 412 on a save while the next batch is folded: both batches are applied again from the stored runtime, each task completed once', async () => {
    const { s, probe } = await probed();
    const hold = probe.hold('a', true);
    const workflowId = await s.submit(twoChains('conflict'));
    await s.until(hold.held, () => "a's save never started");
    await s.until(
      () => (s.pushed.get('b2') ?? 0) === 1,
      () => `pushed ${JSON.stringify([...s.pushed])}`,
    );
    expect(probe.acked).toEqual([]);
    hold.release(); // the held save meets a 412
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], a2: ['completed', 1], b2: ['completed', 1] });
    const c = s.coordinator.counters;
    await s.until(
      () => c.completionsApplied + c.completionsIgnored >= [...s.pushed.values()].reduce((x, y) => x + y, 0),
      () => JSON.stringify(c),
    );
    expect(c.conflicts).toBeGreaterThanOrEqual(1);
    expect(c.completionsApplied).toBe(4);
    // The re-applied batches pushed their children again (same attempt): the extra copies' completions are ignored.
    expect(s.pushed.get('a2')).toBe(2);
    expect(s.pushed.get('b2')).toBe(2);
    expect(c.completionsIgnored).toBe(2);
    expect(probe.unpushed).toEqual([]);
    expect(s.logs.some((line) => line.includes('412 on flush, re-reading and re-applying'))).toBe(true);
  });

  it('several batches waiting behind a save are saved together: one save for all of them', async () => {
    const { s, probe } = await probed({ workers: 8 });
    const hold = probe.hold('root');
    const workflowId = await s.submit({
      name: 'coalesce',
      tasks: [
        { name: 'root', kwargs: { cmd: 'true' } },
        ...[1, 2, 3, 4, 5, 6].map((i) => ({ name: `x${i}`, depends_on: ['root'], kwargs: { cmd: `sleep ${i / 10}` } })),
      ],
    });
    await s.until(hold.held, () => "root's save never started");
    // The leaves run and complete while root's save is held: their batches fold and wait.
    await s.until(
      () => s.coordinator.counters.batches >= 4,
      () => JSON.stringify(s.coordinator.counters),
    );
    const savesBefore = probe.saves.length;
    hold.release();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    // root's save, then fewer saves than the leaf batches folded behind it.
    const c = s.coordinator.counters;
    await s.until(
      () => c.completionsApplied >= 7,
      () => JSON.stringify(c),
    );
    expect(probe.saves.length - savesBefore).toBeLessThan(c.batches - 1);
    expect(c).toMatchObject({ conflicts: 0, completionsApplied: 7, completionsIgnored: 0 });
    expect(probe.unpushed).toEqual([]);
    expect(probe.early).toEqual([]);
  });

  it('keeps receiving while a fan-out is still being sent: batches wait for their save up to 8 × the depth, one save stands for them, acks go out 32 at a time', async () => {
    const LEAVES = 200;
    let release: () => void = () => undefined;
    let held = false;
    const { s, probe } = await probed(
      {
        workers: 16,
        coordinator: { pipelineDepth: 2, batchSize: 8 },
        completionLockInMs: 60_000, // the completions received wait 5 s below: no redelivery meanwhile
        coordinatorTasks: (queue) =>
          new WrappedQueue(queue, {
            // The fan-out: the first 180 messages go out, the last 20 are held.
            send: async (messages, send) => {
              if (messages.length < LEAVES) return send();
              await queue.send(messages.slice(0, LEAVES - 20));
              held = true;
              await new Promise<void>((resolve) => (release = resolve));
              await queue.send(messages.slice(LEAVES - 20));
            },
          }),
      },
      10, // each ack takes 10 ms, so that the acks after one save overlap
    );
    try {
      const workflowId = await s.submit({
        name: 'wide',
        tasks: [
          { name: 'root', kwargs: { cmd: 'true' } },
          ...Array.from({ length: LEAVES }, (_, i) => ({ name: `leaf${i}`, depends_on: ['root'], kwargs: { cmd: 'true' } })),
        ],
      });
      await s.until(
        () => held,
        () => 'the fan-out never started',
      );
      const c = s.coordinator.counters;
      // 180 leaves run and complete while the fan-out's last sends are held. The coordinator goes
      // on receiving them: after the submit's wake-up and the root's batch, 15 more (2 × 8
      // batches in flight), of up to 8 completions each; then it waits.
      await s.until(
        () => c.batches >= 17,
        () => JSON.stringify(c),
      );
      await s.clock.advance(5_000);
      expect(c.batches).toBe(17);
      const waiting = c.messages - 2;
      expect(waiting).toBeGreaterThan(15);
      expect(probe.saves.some((done) => done.includes('root'))).toBe(false);
      expect(probe.acked).toEqual([]);
      const savesBefore = probe.saves.length;
      release();
      const done = await s.waitFor(workflowId, terminal);
      expect(done.status).toBe('completed');
      await s.until(
        () => probe.acked.length >= LEAVES + 1,
        () => `acked ${probe.acked.length}`,
      );
      expect(c).toMatchObject({ conflicts: 0, completionsApplied: LEAVES + 1, completionsIgnored: 0 });
      // The first save once the fan-out was out stood for every batch received meanwhile.
      expect(probe.saves[savesBefore]).toHaveLength(1 + waiting);
      expect(probe.peakAcks).toBe(32);
      expect(probe.unpushed).toEqual([]);
      expect(probe.early).toEqual([]);
    } finally {
      release();
    }
  });

  it('a crash with a receive in flight and batches folded but not saved: the next coordinator applies everything once', async () => {
    const { s, probe } = await probed();
    const hold = probe.hold('a');
    const workflowId = await s.submit(twoChains('crash'));
    await s.until(hold.held, () => "a's save never started");
    await s.until(
      () => (s.pushed.get('b2') ?? 0) === 1,
      () => `pushed ${JSON.stringify([...s.pushed])}`,
    );
    // Crash now: a's save (held) never lands, b's folded batch is never saved, the receive in
    // flight takes whatever comes next and never answers.
    probe.crash();
    const old = s.coordinator;
    hold.release();
    await old.stop();
    expect(old.counters.completionsApplied).toBe(0);
    const next = s.newCoordinator({}, { store: (store) => store, completions: (queue) => queue });
    await next.start();
    const done = await s.waitFor(workflowId, terminal);
    expect(done.status).toBe('completed');
    expect(outcome(done)).toEqual({ a: ['completed', 1], b: ['completed', 1], a2: ['completed', 1], b2: ['completed', 1] });
    await s.until(
      () => next.counters.completionsApplied >= 4,
      () => JSON.stringify(next.counters),
    );
    // a2 and b2 were pushed before the crash and again by the new coordinator: their extra runs' completions are ignored.
    expect(next.counters.completionsApplied).toBe(4);
    expect(probe.unpushed).toEqual([]);
    await s.until(
      async () => (await s.completions.approximateMessageCount()) === 0,
      () => 'completions left on the queue',
    );
  });
});
