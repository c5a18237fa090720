import { describe, expect, it } from '@jest/globals';
import { isJobqError } from '@jobq/ports';
import { checkTaskUser, taskUserFromEnv } from './task-user';

function thrown(call: () => unknown): Error {
  try {
    call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('taskUserFromEnv', () => {
  it('reads JOBQ_TASK_UID and JOBQ_TASK_GID; neither set is the worker’s own user', () => {
    expect(taskUserFromEnv({ JOBQ_TASK_UID: '65534', JOBQ_TASK_GID: '65534' })).toEqual({ uid: 65534, gid: 65534 });
    expect(taskUserFromEnv({})).toBeNull();
    expect(taskUserFromEnv({ JOBQ_TASK_UID: ' ', JOBQ_TASK_GID: '' })).toBeNull();
  });

  it('refuses one without the other and ids that are not numbers, with one clear line', () => {
    const errors = [
      thrown(() => taskUserFromEnv({ JOBQ_TASK_UID: '1000' })),
      thrown(() => taskUserFromEnv({ JOBQ_TASK_GID: '1000' })),
      thrown(() => taskUserFromEnv({ JOBQ_TASK_UID: 'nobody', JOBQ_TASK_GID: '1' })),
      thrown(() => taskUserFromEnv({ JOBQ_TASK_UID: '-1', JOBQ_TASK_GID: '1' })),
    ];
    for (const error of errors) expect(isJobqError(error, 'invalid-config')).toBe(true);
    expect(errors[0]!.message).toBe('set both JOBQ_TASK_UID and JOBQ_TASK_GID to run tasks as another user (JOBQ_TASK_GID is not set)');
    expect(errors[2]!.message).toMatch(/JOBQ_TASK_UID must be a numeric user or group id/);
  });
});

describe('checkTaskUser', () => {
  it('needs a worker running as root, and refuses root as the task user', () => {
    expect(() => checkTaskUser({ uid: 65534, gid: 65534 }, 0)).not.toThrow();
    const notRoot = thrown(() => checkTaskUser({ uid: 65534, gid: 65534 }, 1000));
    expect(isJobqError(notRoot, 'invalid-config')).toBe(true);
    expect(notRoot.message).toMatch(/needs a worker started as root \(this one runs as uid 1000\)/);
    expect(thrown(() => checkTaskUser({ uid: 0, gid: 0 }, 0)).message).toMatch(/the task user is root/);
  });
});
