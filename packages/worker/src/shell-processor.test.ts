import { describe, expect, it } from '@jest/globals';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { decodeEnvelope } from '@jobq/dag-core/wire';
import type { ReceivedMessage } from '@jobq/ports';
import type { TaskContext } from './processor';
import { killTimeoutFromEnv, ShellProcessor } from './shell-processor';
import { taskEnvironment } from './task-environment';
import { lines, task, tempDir, waitFor } from './test-helpers/worker-helpers';

function context(kwargs: Record<string, unknown>, signal: AbortSignal = new AbortController().signal): TaskContext & { lines: string[] } {
  const body = task('t1', kwargs).body;
  const decoded = decodeEnvelope(body);
  if (!decoded.ok) throw new Error(decoded.error);
  const message: ReceivedMessage = {
    messageId: 'm1',
    body,
    deliveryCount: 1,
    enqueuedAt: null,
    lockedUntil: new Date(Date.now() + 60_000),
  };
  const collected: string[] = [];
  return { message, envelope: decoded.value, signal, log: (line) => collected.push(line), lines: collected };
}

const processor = new ShellProcessor({ killTimeoutInMs: 300, baseEnv: { PATH: process.env.PATH, BASE_ONLY: 'base' } });

describe('ShellProcessor', () => {
  it('takes kwargs without __workflow_id, or what its accepts option says', () => {
    expect(processor.accepts({ cmd: 'true' })).toBe(true);
    expect(processor.accepts({ cmd: 'true', __workflow_id: 'w' })).toBe(false);
    expect(new ShellProcessor({ killTimeoutInMs: 1, accepts: (k) => k.kind === 'x' }).accepts({ kind: 'x', __workflow_id: 'w' })).toBe(
      true,
    );
  });

  it('exit 0 is done; output lines go to the context log unprefixed', async () => {
    const ctx = context({ cmd: 'echo out; echo err >&2' });
    expect(await processor.process(ctx)).toEqual({ kind: 'done' });
    expect(ctx.lines.sort()).toEqual(['err', 'out']);
  });

  it('a non-zero exit, a missing or non-string cmd fail with a clear error', async () => {
    expect(await processor.process(context({ cmd: 'exit 7' }))).toEqual({ kind: 'failed', error: 'exit code 7' });
    expect(await processor.process(context({}))).toEqual({ kind: 'failed', error: 'kwargs.cmd is missing' });
    expect(await processor.process(context({ cmd: 42 }))).toMatchObject({
      kind: 'failed',
      error: expect.stringContaining('kwargs.cmd must be a non-empty string'),
    });
    expect(await processor.process(context({ cmd: 'kill -KILL $$' }))).toEqual({ kind: 'failed', error: 'ended by SIGKILL' });
  });

  it('env is the base env plus kwargs.env; a non-string value fails the task', async () => {
    const ctx = context({ cmd: 'echo "$BASE_ONLY $EXTRA"', env: { EXTRA: 'task' } });
    expect(await processor.process(ctx)).toEqual({ kind: 'done' });
    expect(ctx.lines).toEqual(['base task']);
    expect(await processor.process(context({ cmd: 'true', env: { N: [1] } }))).toEqual({
      kind: 'failed',
      error: 'kwargs.env.N must be a string, got an array',
    });
    // Numbers and booleans (as YAML writes `N: 1`) reach the task as text.
    expect(await processor.process(context({ cmd: 'test "$N" = 1 && test "$B" = true', env: { N: 1, B: true } }))).toEqual({
      kind: 'done',
    });
    expect(await processor.process(context({ cmd: 'true', env: ['A=1'] }))).toMatchObject({
      kind: 'failed',
      error: expect.stringContaining('kwargs.env must be an object of strings'),
    });
  });

  it('runs in kwargs.cwd, and fails clearly when it is not a directory', async () => {
    const { dir, cleanup } = tempDir();
    const ctx = context({ cmd: 'pwd', cwd: dir });
    expect(await processor.process(ctx)).toEqual({ kind: 'done' });
    expect(ctx.lines).toEqual([realpathSync(dir)]);
    expect(await processor.process(context({ cmd: 'true', cwd: join(dir, 'nope') }))).toMatchObject({
      kind: 'failed',
      error: expect.stringContaining('is not a directory'),
    });
    cleanup();
  });

  it('the context signal sends SIGTERM to the process group, then SIGKILL after the kill timeout', async () => {
    const { dir, cleanup } = tempDir();
    const polite = new AbortController();
    const first = processor.process(
      context({ cmd: `trap 'echo term > ${dir}/term; exit 143' TERM; touch ${dir}/a; sleep 30 & wait $!` }, polite.signal),
    );
    await waitFor(() => existsSync(join(dir, 'a')));
    polite.abort('lock-lost');
    expect(await first).toMatchObject({ kind: 'failed', error: expect.stringContaining('lock-lost') });
    expect(lines(join(dir, 'term'))).toEqual(['term']);

    const stubborn = new AbortController();
    const second = processor.process(context({ cmd: `trap '' TERM; touch ${dir}/b; while true; do sleep 0.05; done` }, stubborn.signal));
    await waitFor(() => existsSync(join(dir, 'b')));
    stubborn.abort('shutdown');
    expect(await second).toMatchObject({ kind: 'failed', error: expect.stringContaining('killed') });
    cleanup();
  });

  it('refuses a blob bg_dirsync_to when no uploader is configured', async () => {
    const outcome = await processor.process(context({ cmd: 'true', bg_dirsync_to: 'myaccount/results/run1' }));
    expect(outcome).toMatchObject({ kind: 'failed', error: expect.stringContaining('needs the storage configuration') });
  });
});

describe('taskEnvironment and killTimeoutFromEnv', () => {
  it('copies the base env and never changes its inputs', () => {
    const base = { A: '1', B: '2' };
    const extra = { B: 'x', C: '3' };
    const env = taskEnvironment(base, extra);
    expect(env).toEqual({ A: '1', B: 'x', C: '3' });
    expect(base).toEqual({ A: '1', B: '2' });
    expect(env).not.toBe(base);
    expect(taskEnvironment(base, undefined)).toEqual(base);
    expect(() => taskEnvironment(base, 'A=1')).toThrow('kwargs.env must be an object of strings');
  });

  it('reads JOBQ_KILL_TIMEOUT in seconds, default 600 s', () => {
    expect(killTimeoutFromEnv({})).toBe(600_000);
    expect(killTimeoutFromEnv({ JOBQ_KILL_TIMEOUT: '' })).toBe(600_000);
    expect(killTimeoutFromEnv({ JOBQ_KILL_TIMEOUT: '5' })).toBe(5_000);
    expect(killTimeoutFromEnv({ JOBQ_KILL_TIMEOUT: '250ms' })).toBe(250);
    expect(killTimeoutFromEnv({ JOBQ_KILL_TIMEOUT: '2m' })).toBe(120_000);
    expect(() => killTimeoutFromEnv({ JOBQ_KILL_TIMEOUT: 'soon' })).toThrow('JOBQ_KILL_TIMEOUT');
  });
});
