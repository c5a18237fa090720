import { formatElapsed, workerState, type WorkerRecord, type WorkerRegistry } from '@jobq/ports';
import type { Deployment } from './deployment';
import type { PlacementJson, WorkerJson } from './json-output';

/** The heartbeat interval assumed when no worker of the queue sends heartbeats (the worker's default). */
const DEFAULT_INTERVAL_IN_MS = 30_000;
/** Slack after one heartbeat interval before a dispatched task no heartbeat lists reads "waiting". */
const WAITING_SLACK_IN_MS = 10_000;

/** A task as placement needs it. */
export interface PlacedTask {
  taskName: string;
  status: string;
  attemptNo: number;
  queue: string;
  dispatchedAt: string | null;
}

/** Reads the heartbeats; a registry that cannot be read counts as none (placement is a hint, never an error). */
export async function readWorkers(registry: WorkerRegistry | null): Promise<WorkerRecord[] | null> {
  if (registry === null) return null;
  try {
    return await registry.list();
  } catch {
    return null;
  }
}

/**
 * Where a running task is (docs/design.md#placement): on a worker whose fresh (not lost) heartbeat
 * lists it, else — once one heartbeat interval + 10 s passed since its dispatch with no heartbeat
 * listing it — waiting in its queue; null when it cannot be told yet, or when a worker of its queue
 * runs more tasks than its row lists. `queueKey` maps queue specs naming one queue to one key.
 */
export function placementOf(
  workflowId: string,
  task: PlacedTask,
  workers: readonly WorkerRecord[],
  now: number,
  queueKey: (spec: string) => string,
): PlacementJson | null {
  if (task.status !== 'running' || task.attemptNo < 1) return null;
  const id = `${workflowId}/${task.taskName}/${task.attemptNo}`;
  const fresh = workers.filter((w) => workerState(w) !== 'lost');
  for (const worker of fresh) {
    const entry = worker.running.find((r) => r.id === id);
    if (entry === undefined) continue;
    const since = Date.parse(entry.since);
    // The worker's clock: its `since` against the row's age on the service clock.
    const forMs = Number.isFinite(since) ? Math.max(0, Date.parse(worker.seenAt) + worker.ageInMs - since) : 0;
    return {
      state: 'on_worker',
      worker_id: worker.workerId,
      host: worker.host,
      since: entry.since,
      queue: task.queue,
      text: `running on ${worker.workerId} (${worker.host}) for ${formatElapsed(forMs)}`,
    };
  }
  if (task.dispatchedAt === null) return null;
  const dispatched = Date.parse(task.dispatchedAt);
  if (!Number.isFinite(dispatched)) return null;
  const key = queueKey(task.queue);
  const ofQueue = fresh.filter((w) => w.queues.some((q) => queueKey(q.queue) === key));
  if (ofQueue.some((w) => w.runningMore > 0)) return null;
  const pool = ofQueue.length > 0 ? ofQueue : fresh;
  const interval = pool.length > 0 ? Math.max(...pool.map((w) => w.intervalInMs)) : DEFAULT_INTERVAL_IN_MS;
  const ago = now - dispatched;
  if (ago < interval + WAITING_SLACK_IN_MS) return null;
  return {
    state: 'waiting',
    worker_id: null,
    host: null,
    since: task.dispatchedAt,
    queue: task.queue,
    text: `dispatched ${formatElapsed(ago)} ago, waiting in queue ${task.queue}`,
  };
}

/** A heartbeat row as `jobq workers --json` prints it. */
export function workerJson(w: WorkerRecord): WorkerJson {
  return {
    worker_id: w.workerId,
    host: w.host,
    pid: w.pid,
    version: w.version,
    state: workerState(w),
    age_s: Math.round(w.ageInMs / 100) / 10,
    seen_at: w.seenAt,
    started_at: w.startedAt,
    heartbeat_interval_s: w.intervalInMs / 1000,
    queues: w.queues.map((q) => ({ queue: q.queue, slots: q.slots, busy: q.busy, last_receive_at: q.lastReceiveAt })),
    running: w.running.map((r) => ({ id: r.id, since: r.since })),
    running_more: w.runningMore,
  };
}

/** A function mapping queue specs that name one queue to one key (a spec that names none keeps its text). */
export function queueKeyOf(deployment: Pick<Deployment, 'locate'>): (spec: string) => string {
  return (spec) => {
    try {
      return deployment.locate(spec).key;
    } catch {
      return spec;
    }
  };
}
