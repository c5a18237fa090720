import { describe, expect, it } from '@jest/globals';
import type { TaskStatus } from '@jobq/dag-core';
import type { TaskLogMetadata, TaskLogRead } from '@jobq/ports';
import { followTaskLog, lastLines, unprintedPart } from './task-logs';

const meta = (bytes: number, outcome: TaskLogMetadata['outcome'] = 'live'): TaskLogMetadata => ({
  outcome,
  exitCode: null,
  started: '',
  ended: null,
  bytes,
  worker: 'w',
});

describe('task log reading', () => {
  it('lastLines ignores the final newline', () => {
    expect(lastLines('a\nb\nc\n', 2)).toEqual(['b', 'c']);
    expect(lastLines('a\nb', 5)).toEqual(['a', 'b']);
    expect(lastLines('', 5)).toEqual([]);
  });

  it('unprintedPart continues a whole log, and takes only the new bytes of a cut one', () => {
    expect(unprintedPart(Buffer.from('abcdef'), 6, 2).toString()).toBe('cdef');
    const head = 'h'.repeat(64 * 1024);
    const cut = Buffer.from(`${head}\n[jobq: 100 bytes omitted]\n0123456789`);
    const total = 64 * 1024 + 100 + 10;
    expect(unprintedPart(cut, total, total - 4).toString()).toBe('6789');
    expect(unprintedPart(cut, total, total - 15).toString()).toBe('[jobq: 5 bytes omitted]\n0123456789');
    expect(unprintedPart(cut, total, total).byteLength).toBe(0);
  });

  it('--follow prints new bytes as they come, polls with the etag, follows a retry, and returns the final status (no real sleep)', async () => {
    // The task's history, one step per poll: attempt 1 runs and fails, attempt 2 runs and completes.
    const steps: Array<{ status: TaskStatus; attemptNo: number; logs: Record<number, string> }> = [
      { status: 'ready', attemptNo: 0, logs: {} },
      { status: 'running', attemptNo: 1, logs: { 1: 'one\n' } },
      { status: 'running', attemptNo: 1, logs: { 1: 'one\n' } },
      { status: 'running', attemptNo: 1, logs: { 1: 'one\ntwo\n' } },
      { status: 'running', attemptNo: 2, logs: { 1: 'one\ntwo\nboom\n' } },
      { status: 'completed', attemptNo: 2, logs: { 1: 'one\ntwo\nboom\n', 2: 'again\n' } },
    ];
    let step = 0;
    const out: string[] = [];
    const notes: string[] = [];
    const sleeps: number[] = [];
    const conditional: boolean[] = [];
    const status = await followTaskLog({
      task: () => Promise.resolve(steps[Math.min(step, steps.length - 1)]!),
      read: (attemptNo, ifNoneMatch): Promise<TaskLogRead | null> => {
        const text = steps[Math.min(step, steps.length - 1)]!.logs[attemptNo];
        if (text === undefined) return Promise.resolve(null);
        const etag = `"${attemptNo}:${text.length}"`;
        conditional.push(ifNoneMatch !== undefined);
        if (etag === ifNoneMatch) return Promise.resolve({ notModified: true, etag });
        return Promise.resolve({ notModified: false, bytes: Buffer.from(text), size: text.length, etag, metadata: meta(text.length) });
      },
      write: (bytes) => out.push(bytes.toString()),
      note: (line) => notes.push(line),
      sleep: (ms) => {
        sleeps.push(ms);
        step++;
        return Promise.resolve();
      },
      intervalInMs: 2_000,
    });
    expect(status).toBe('completed');
    expect(out.join('')).toBe('one\ntwo\nboom\nagain\n');
    expect(notes).toEqual(['[jobq: attempt 2]']);
    expect(sleeps.every((ms) => ms === 2_000)).toBe(true);
    expect(conditional.filter(Boolean).length).toBeGreaterThan(0);
  });

  it('--follow returns at once for a task that already failed', async () => {
    const status = await followTaskLog({
      task: () => Promise.resolve({ status: 'failed', attemptNo: 1 }),
      read: () => Promise.resolve({ notModified: false, bytes: Buffer.from('bad\n'), size: 4, etag: '"1"', metadata: meta(4, 'failed') }),
      write: () => undefined,
      note: () => undefined,
      sleep: () => Promise.reject(new Error('no sleep expected')),
      intervalInMs: 2_000,
    });
    expect(status).toBe('failed');
  });
});
