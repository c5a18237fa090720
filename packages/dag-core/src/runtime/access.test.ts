import { describe, expect, it } from '@jest/globals';
import { changedTasks, taskCount, taskState, taskStatus, tasksIn } from './access';
import { Harness, definition } from './test-helpers/build';

const diamond = definition([
  { name: 'a' },
  { name: 'b', depends_on: ['a'] },
  { name: 'c', depends_on: ['a'] },
  { name: 'd', depends_on: ['b', 'c'] },
]);

describe('task accessors', () => {
  it('read states by name and in definition order; unknown names are undefined / pending', () => {
    const h = new Harness(diamond);
    h.activate();
    expect(taskState(h.runtime, 'a')).toMatchObject({ status: 'running', attemptNo: 1 });
    expect(taskState(h.runtime, 'nope')).toBeUndefined();
    expect(taskState(h.runtime, 'constructor')).toBeUndefined();
    expect(taskStatus(h.runtime, 'nope')).toBe('pending');
    expect([...tasksIn(h.runtime)].map(([name, t]) => `${name}=${t.status}`)).toEqual(['a=running', 'b=pending', 'c=pending', 'd=pending']);
    expect(taskCount(h.runtime)).toBe(4);
  });

  it('changedTasks names exactly the tasks an event changed, all of them without a previous runtime', () => {
    const h = new Harness(diamond);
    h.activate();
    const before = h.runtime;
    h.succeed('a');
    expect(changedTasks(before, h.runtime)).toEqual(['a', 'b', 'c']);
    expect(changedTasks(h.runtime, h.runtime)).toEqual([]);
    expect(changedTasks(undefined, h.runtime)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('reads tasks named like Object.prototype members as any other', () => {
    const h = new Harness(
      definition([
        { name: 'constructor' },
        { name: 'toString', depends_on: ['constructor'] },
        { name: 'hasOwnProperty', depends_on: ['toString'] },
      ]),
    );
    h.activate();
    h.succeed('constructor');
    expect(taskStatus(h.runtime, 'toString')).toBe('running');
    expect(taskState(h.runtime, 'valueOf')).toBeUndefined();
    expect(h.send({ type: 'completion', taskName: 'valueOf', attemptNo: 1, success: true, outputRef: null, error: null }).effects).toEqual([
      { type: 'ignored', reason: 'unknown task "valueOf"' },
    ]);
    h.succeed('toString');
    h.succeed('hasOwnProperty');
    expect(h.runtime.status).toBe('completed');
  });
});
