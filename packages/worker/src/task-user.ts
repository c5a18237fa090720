import { JobqError, envValue } from '@jobq/ports';

/**
 * The OS user and group workflow tasks run as, when not the worker's own. A task running as the
 * worker's user can read that user's files (a federated token file, `~/.azure`, the worker's
 * `/proc/PID/environ`) and signal its processes; a task running as another user cannot.
 */
export interface TaskUser {
  uid: number;
  gid: number;
}

function idFrom(env: NodeJS.ProcessEnv, name: string): number | null {
  const text = envValue(env, name);
  if (text === null) return null;
  if (!/^\d{1,10}$/.test(text) || Number(text) > 0xfffffffe) {
    throw new JobqError('invalid-config', `${name} must be a numeric user or group id (e.g. 65534), got "${text}"`);
  }
  return Number(text);
}

/**
 * Reads `JOBQ_TASK_UID` and `JOBQ_TASK_GID` (both or neither; numeric ids): the user workflow tasks
 * run as, or null to run them as the worker's own user. Bad values are `invalid-config`.
 */
export function taskUserFromEnv(env: NodeJS.ProcessEnv): TaskUser | null {
  const uid = idFrom(env, 'JOBQ_TASK_UID');
  const gid = idFrom(env, 'JOBQ_TASK_GID');
  if (uid === null && gid === null) return null;
  if (uid === null || gid === null) {
    throw new JobqError(
      'invalid-config',
      `set both JOBQ_TASK_UID and JOBQ_TASK_GID to run tasks as another user (${uid === null ? 'JOBQ_TASK_UID' : 'JOBQ_TASK_GID'} is not set)`,
    );
  }
  return { uid, gid };
}

/**
 * Refuses a task user the worker cannot switch to: only root may start a process as another user,
 * and running tasks as root defeats the purpose. `currentUid` is the worker's (default `process.getuid()`).
 */
export function checkTaskUser(user: TaskUser, currentUid: number | undefined = process.getuid?.()): void {
  if (!Number.isSafeInteger(user.uid) || user.uid < 0 || !Number.isSafeInteger(user.gid) || user.gid < 0) {
    throw new JobqError('invalid-config', `the task user must be numeric ids ≥ 0, got uid ${String(user.uid)} gid ${String(user.gid)}`);
  }
  if (user.uid === 0)
    throw new JobqError('invalid-config', 'the task user is root (uid 0): choose an unprivileged user for JOBQ_TASK_UID, or unset it');
  if (currentUid !== 0) {
    throw new JobqError(
      'invalid-config',
      `running tasks as uid ${user.uid} (JOBQ_TASK_UID) needs a worker started as root (this one runs as uid ${currentUid ?? 'unknown'}); start the worker as root, or unset JOBQ_TASK_UID/JOBQ_TASK_GID`,
    );
  }
}
