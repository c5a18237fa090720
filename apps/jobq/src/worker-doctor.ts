import { formatElapsed, type WorkerRecord } from '@jobq/ports';
import type { Deployment } from './deployment';
import { errorLine } from './base';
import { queueKeyOf } from './placement';

/** Default of `doctor --worker-stale`: a heartbeat older than this does not count. */
export const DEFAULT_WORKER_STALE_IN_MS = 120_000;

/** One doctor check's result (see `DoctorCheck` in the doctor command). */
export interface WorkersCheckResult {
  name: 'workers';
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint: string | null;
}

/**
 * The `workers` check of `doctor` (docs/design.md#placement): for each queue with dispatched tasks,
 * whether a heartbeat of the last `staleMs` names it. None does: an error when the queue has
 * visible messages (nobody reads it); a warning when its messages are taken anyway (workers of
 * older jobq versions and Python workers send no heartbeats).
 */
export async function workersCheck(deployment: Deployment, specs: readonly string[], staleMs: number): Promise<WorkersCheckResult> {
  const name = 'workers';
  if (specs.length === 0) return { name, status: 'ok', message: 'no queue has dispatched tasks', hint: null };
  let workers: WorkerRecord[];
  try {
    workers = await deployment.workers.list();
  } catch (error) {
    return { name, status: 'warn', message: `cannot read the worker heartbeats: ${errorLine(error)}`, hint: null };
  }
  const key = queueKeyOf(deployment);
  const fresh = workers.filter((w) => w.ageInMs <= staleMs);
  const unread: string[] = [];
  const drained: string[] = [];
  const served: string[] = [];
  await Promise.all(
    specs.map(async (spec) => {
      const k = key(spec);
      const named = fresh.filter((w) => w.queues.some((q) => key(q.queue) === k));
      if (named.length > 0) {
        const slots = named.reduce((n, w) => n + w.queues.filter((q) => key(q.queue) === k).reduce((m, q) => m + q.slots, 0), 0);
        served.push(`${spec} (${named.length} worker${named.length === 1 ? '' : 's'}, ${slots} slot${slots === 1 ? '' : 's'})`);
        return;
      }
      try {
        const visible = (await (await deployment.queue(spec)).peek(1)).length > 0;
        (visible ? unread : drained).push(spec);
      } catch {
        // The task queues check says what is wrong with this queue.
      }
    }),
  );
  const window = staleMs >= 60_000 && staleMs % 60_000 === 0 ? `${staleMs / 60_000} min` : formatElapsed(staleMs);
  if (unread.length > 0) {
    unread.sort();
    return {
      name,
      status: 'fail',
      message: unread.map((q) => `no worker has read queue ${q} in the last ${window}`).join('; '),
      hint: `start a worker on it: jobq worker -q ${unread[0]!} (workers of older jobq versions and Python workers send no heartbeats)`,
    };
  }
  if (drained.length > 0) {
    drained.sort();
    return {
      name,
      status: 'warn',
      message: `no heartbeat in the last ${window} names ${drained.join(', ')}, but no message waits there: its workers send no heartbeats (older jobq, Python)`,
      hint: null,
    };
  }
  served.sort();
  return { name, status: 'ok', message: `heartbeats name ${served.join(', ')}`, hint: null };
}
