import { randomUUID } from 'node:crypto';

/**
 * The suffix of the wake-up a client sends with a re-run request (`wakeup/{workflow_id}/rerun-{request
 * id}`): the coordinator applies the workflow's re-run records right after it (its scan would,
 * within `cancelPollIntervalInMs`, if the wake-up were lost).
 */
export const RERUN_WAKEUP_SUFFIX = 'rerun-';

/** A new re-run request id: the request time (base 36 milliseconds) and 16 random hex digits. */
export function newRerunRequestId(at: Date): string {
  return `${at.getTime().toString(36)}-${randomUUID().replace(/-/g, '').slice(0, 16)}`;
}
