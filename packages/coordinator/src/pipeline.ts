import type { WorkflowEvent, WorkflowRuntime } from '@jobq/dag-core';
import { errorMessage, isJobqError } from '@jobq/ports';
import { commit, foldAhead, PUSHED, type ApplyContext, type EventOutcome, type PushOutcome } from './effects';

/**
 * One workflow's batches, as the coordinator's loop hands them to the {@link WorkflowPipeline}: the
 * completions of one received batch, all successful (anything else takes the plain path).
 */
export interface PipelinedGroup {
  events: readonly WorkflowEvent[];
}

/** What the {@link WorkflowPipeline} calls back into. */
export interface PipelineHooks<G> {
  ctx: ApplyContext;
  /**
   * The plain path of one group, as without pipelining: load (or take the cache), fold, push, save
   * with its 412 re-reads, ack or leave the messages. Used for the groups the pipeline does not
   * fold ahead, and for any group whose speculative state turned out void.
   */
  plain(workflowId: string, group: G, conflicts: number): Promise<void>;
  /** A transient push or read failure while folding ahead: the group's messages are left for their redelivery. */
  left(workflowId: string, group: G, reason: string): Promise<void>;
  /** The group's events are in a saved runtime: count what each came to and ack its messages. */
  settled(workflowId: string, group: G, events: readonly EventOutcome[]): void;
}

/**
 * A runtime folded by the pipeline, not necessarily saved yet: `seq` orders the states of a lane,
 * `epoch` voids them; `pushed` settles once the task messages of this state and of every state
 * before it are sent; `own` is how the sending of its own messages ended (null: still sending).
 */
interface State {
  seq: number;
  epoch: number;
  runtime: WorkflowRuntime;
  pushed: Promise<PushOutcome>;
  own: PushOutcome | null;
}

/** The last state of a lane known to be stored, with its ETag; `confirmed` when this lane saved it (not just found it cached). */
interface Saved extends State {
  etag: string;
  confirmed: boolean;
}

/** One workflow's groups in flight: two chains (fold, save), each in arrival order. */
class Lane {
  seq = 0;
  epoch = 0;
  /** The newest folded state (null: the next group takes the plain path or starts from the cache). */
  head: State | null = null;
  /** The states folded since the last save, oldest first (the candidates of the next save). */
  pending: State[] = [];
  /** The newest stored state of the current epoch. */
  saved: Saved | null = null;
  foldTail: Promise<void> = Promise.resolve();
  saveTail: Promise<void> = Promise.resolve();
  active = 0;
}

/** The state after `before` with `runtime`, whose own messages are being sent (`own`). */
function chain(seq: number, before: State, runtime: WorkflowRuntime, own: Promise<PushOutcome>): State {
  const state: State = {
    seq,
    epoch: before.epoch,
    runtime,
    own: null,
    pushed: own === PUSHED ? before.pushed : Promise.all([before.pushed, own]).then(([a, b]) => (a.kind !== 'pushed' ? a : b)),
  };
  if (own === PUSHED) state.own = { kind: 'pushed' };
  else void own.then((outcome) => (state.own = outcome));
  return state;
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * Pipelining within a workflow (docs/failure-model.md, "Pipelining"). Each group goes through two
 * stages, each taken in arrival order per workflow: **fold** (fold its events into the newest folded
 * state, push the task messages that makes ready) and **save** (write the newest folded state over
 * the ETag of the last save, then ack). A group folds while the groups before it are still being
 * saved, so the next batch is received, folded and pushed while a save is in flight, and saved as
 * soon as the ETag it needs is known; when several folded groups wait, one save writes the newest
 * state for all of them. Push before save holds: a state is saved only once its own pushes and
 * those of every state before it are done.
 *
 * A save that fails (a 412: someone else wrote the runtime) or a fold that cannot be done ahead (a
 * transient push failure, a reducer error) voids every state folded since the last save (a new
 * epoch): each group of the old epoch, in order, takes the plain path from the stored runtime. Its
 * pushes are then made again (at-least-once: duplicates are ignored by the reducer), and no
 * message is acked before a save that holds its events.
 */
export class WorkflowPipeline<G extends PipelinedGroup> {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly hooks: PipelineHooks<G>) {}

  /**
   * Queues a group (synchronously: groups handed in one after another keep that order) and
   * resolves once it is settled: saved, or handled by the plain path. `ahead`: the group may be
   * folded ahead (its events are successful completions only); otherwise it waits for every save
   * before it and takes the plain path.
   */
  run(workflowId: string, group: G, ahead: boolean, onFolded?: () => void): Promise<void> {
    return this.enter(
      workflowId,
      (lane, foldBefore, saveBefore, folded) => this.process(lane, workflowId, group, ahead, foldBefore, saveBefore, folded),
      onFolded,
    );
  }

  /**
   * Runs `work` on the workflow alone, in turn with its groups: after every group before it is
   * saved, and before any later group folds (the scans and sweeps, so that they do not race the
   * pipeline's saves). Later groups start from what it leaves in the cache.
   */
  exclusive(workflowId: string, work: () => Promise<void>): Promise<void> {
    return this.enter(workflowId, async (lane, foldBefore, saveBefore) => {
      await foldBefore;
      await saveBefore;
      await this.alone(lane, workflowId, work);
    });
  }

  private enter(
    workflowId: string,
    body: (lane: Lane, foldBefore: Promise<void>, saveBefore: Promise<void>, folded: () => void) => Promise<void>,
    onFolded?: () => void,
  ): Promise<void> {
    let lane = this.lanes.get(workflowId);
    if (lane === undefined) {
      lane = new Lane();
      this.lanes.set(workflowId, lane);
    }
    const l = lane;
    l.active++;
    const foldBefore = l.foldTail;
    const saveBefore = l.saveTail;
    const fold = gate();
    const save = gate();
    l.foldTail = fold.promise;
    l.saveTail = save.promise;
    if (onFolded) void fold.promise.then(onFolded);
    return body(l, foldBefore, saveBefore, fold.open).finally(() => {
      fold.open();
      save.open();
      if (--l.active === 0 && this.lanes.get(workflowId) === l) this.lanes.delete(workflowId);
    });
  }

  private async process(
    lane: Lane,
    id: string,
    group: G,
    ahead: boolean,
    foldBefore: Promise<void>,
    saveBefore: Promise<void>,
    folded: () => void,
  ): Promise<void> {
    const { ctx } = this.hooks;
    await foldBefore;
    let head = lane.head;
    if (head === null && ahead && lane.active === 1) {
      // Nothing in flight: start from this coordinator's last save, as the plain path would.
      const cached = ctx.cache?.get(id);
      if (cached !== undefined) head = this.seed(lane, cached.runtime, cached.etag, false);
    }
    if (!ahead || head === null) {
      await saveBefore;
      await this.alone(lane, id, () => this.hooks.plain(id, group, 0));
      return;
    }
    const result = await foldAhead(ctx, head.runtime, group.events);
    if (result.kind === 'retry-later') {
      // Nothing of it becomes a state (its pushes are made again with the redelivery); the states
      // folded before it stay good, and later groups fold on them.
      folded();
      await this.hooks.left(id, group, result.reason);
      return;
    }
    if (result.kind === 'failed') {
      ctx.log(`workflow ${id}: ${result.reason}; applying the batch from the stored runtime`);
      this.voidLane(lane, id);
      folded();
      await saveBefore;
      await this.hooks.plain(id, group, 0);
      return;
    }
    let mine: State = head;
    if (result.runtime !== head.runtime) {
      mine = chain(++lane.seq, head, result.runtime, result.pushed);
      // A lane voided during the fold (a failed save) keeps no head: the state is void too.
      if (mine.epoch === lane.epoch) {
        lane.head = mine;
        lane.pending.push(mine);
      } else lane.head = null;
    }
    folded();
    await saveBefore;
    const own = await mine.pushed;
    if (own.kind !== 'pushed' && mine.epoch === lane.epoch) {
      // Its pushes failed (those of the states before it went out: they were saved): every
      // state after it is void.
      const base = lane.saved;
      this.voidLane(lane, id);
      if (own.kind === 'retry-later') {
        await this.hooks.left(id, group, own.reason);
        return;
      }
      const stored = own.runtime !== undefined && base !== null ? await this.save(id, own.runtime, base) : null;
      if (stored !== null && stored !== 'conflict') {
        // Saved with the refused attempts failed, as the plain path would have.
        this.hooks.settled(id, group, result.events);
        return;
      }
      ctx.log(`workflow ${id}: ${own.reason}; applying the batch from the stored runtime`);
    }
    const saved = lane.saved;
    if (mine.epoch !== lane.epoch || saved === null) {
      await this.hooks.plain(id, group, 0);
      return;
    }
    if (mine.seq <= saved.seq) {
      // Already stored: by a save of a later state that held it, or unchanged. Unchanged on a
      // runtime only found in the cache, it is checked against the blob first (the plain path).
      if (result.runtime === head.runtime && mine.seq === saved.seq && !saved.confirmed) await this.hooks.plain(id, group, 0);
      else this.hooks.settled(id, group, result.events);
      return;
    }
    // The newest state whose messages (and those of all before it) are all sent: this one at least.
    let target = mine;
    for (const state of lane.pending) {
      if (state.seq <= mine.seq) continue;
      if (state.own?.kind !== 'pushed') break;
      target = state;
    }
    const stored = await this.save(id, target.runtime, saved);
    if (stored === null) {
      this.voidLane(lane, id);
      await this.hooks.plain(id, group, 0);
      return;
    }
    if (stored === 'conflict') {
      this.voidLane(lane, id);
      await this.hooks.plain(id, group, 1);
      return;
    }
    lane.saved = { ...target, etag: stored.etag, confirmed: true };
    lane.pending = lane.pending.filter((state) => state.seq > target.seq);
    this.hooks.settled(id, group, result.events);
  }

  /**
   * Saves `runtime` over the stored state `base`: its new ETag, `'conflict'` on a 412, null on
   * another error (logged; the caller voids the lane and takes the plain path).
   */
  private async save(id: string, runtime: WorkflowRuntime, base: Saved): Promise<{ etag: string } | 'conflict' | null> {
    const { ctx } = this.hooks;
    try {
      return { etag: await commit(ctx, runtime, base, { cached: true, rowsKnown: true }) };
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (isJobqError(error, 'conflict')) {
        ctx.counters.conflicts++;
        ctx.log(`workflow ${id}: 412 on flush, re-reading and re-applying`);
        return 'conflict';
      }
      ctx.log(`workflow ${id}: save failed (${errorMessage(error)}); applying the batch from the stored runtime`);
      return null;
    }
  }

  /** Runs `work` holding both stages (the caller waited for both); later groups fold on what it leaves in the cache. */
  private async alone(lane: Lane, id: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } finally {
      const cached = this.hooks.ctx.cache?.get(id);
      if (cached !== undefined) this.seed(lane, cached.runtime, cached.etag, false);
      else this.voidLane(lane, id);
    }
  }

  /** Starts a new epoch at a stored runtime. */
  private seed(lane: Lane, runtime: WorkflowRuntime, etag: string, confirmed: boolean): State {
    const state: State = { seq: ++lane.seq, epoch: ++lane.epoch, runtime, pushed: PUSHED, own: { kind: 'pushed' } };
    lane.head = state;
    lane.pending = [];
    lane.saved = { ...state, etag, confirmed };
    return state;
  }

  /** Voids every state folded since the last save: the groups holding them take the plain path. */
  private voidLane(lane: Lane, id: string): void {
    lane.epoch++;
    lane.head = null;
    lane.pending = [];
    lane.saved = null;
    this.hooks.ctx.cache?.delete(id);
  }
}
