import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeEnvelope } from '@jobq/dag-core/wire';
import type { ReceivedMessage } from '@jobq/ports';
import { parseDirsyncDestination, startDirsync } from './dirsync';
import type { TaskContext } from './processor';
import { ShellProcessor } from './shell-processor';
import { task, tempDir, waitFor } from './test-helpers/worker-helpers';

function context(kwargs: Record<string, unknown>): TaskContext & { lines: string[] } {
  const body = task('t-sync', kwargs).body;
  const decoded = decodeEnvelope(body);
  if (!decoded.ok) throw new Error(decoded.error);
  const message: ReceivedMessage = { messageId: 'm', body, deliveryCount: 1, enqueuedAt: null, lockedUntil: new Date(Date.now() + 60_000) };
  const collected: string[] = [];
  return { message, envelope: decoded.value, signal: new AbortController().signal, log: (line) => collected.push(line), lines: collected };
}

describe('bg_dirsync_to', () => {
  it('copies files the task writes to a local destination, periodically and once at exit, then removes the temp dir', async () => {
    const { dir, cleanup } = tempDir();
    const dest = join(dir, 'dest');
    const processor = new ShellProcessor({ killTimeoutInMs: 1_000, dirsync: { intervalInMs: 100 } });
    // early.txt must show up while the task still runs; last.txt is written just before exit.
    const cmd = [
      'echo "$JOBQ_DIRSYNC_DIR" > ' + join(dir, 'syncdir'),
      'mkdir -p "$JOBQ_DIRSYNC_DIR/sub"',
      'echo early > "$JOBQ_DIRSYNC_DIR/sub/early.txt"',
      `for i in $(seq 100); do [ -f ${dest}/sub/early.txt ] && break; sleep 0.05; done`,
      `[ -f ${dest}/sub/early.txt ] || exit 9`,
      'echo changed > "$JOBQ_DIRSYNC_DIR/sub/early.txt"',
      'echo last > "$JOBQ_DIRSYNC_DIR/last.txt"',
    ].join('; ');
    const ctx = context({ cmd, bg_dirsync_to: dest });
    expect(await processor.process(ctx)).toEqual({ kind: 'done' });
    expect(readFileSync(join(dest, 'last.txt'), 'utf8')).toBe('last\n');
    expect(readFileSync(join(dest, 'sub', 'early.txt'), 'utf8')).toBe('changed\n');
    const syncDir = readFileSync(join(dir, 'syncdir'), 'utf8').trim();
    expect(syncDir).not.toBe('');
    expect(existsSync(syncDir)).toBe(false);
    cleanup();
  });

  it('uploads new and changed files of a blob destination through the injected uploader', async () => {
    const uploads: string[] = [];
    const session = await startDirsync({
      destination: 'myaccount/results/run1',
      intervalInMs: 60_000,
      uploader: (relativePath, absolutePath, destination) => {
        uploads.push(`${destination.container}/${destination.path}/${relativePath}=${readFileSync(absolutePath, 'utf8')}`);
        return Promise.resolve();
      },
    });
    mkdirSync(join(session.dir, 'a'));
    writeFileSync(join(session.dir, 'a', 'one.txt'), '1');
    expect(await session.syncNow()).toBe(1);
    expect(await session.syncNow()).toBe(0); // unchanged: not sent again
    writeFileSync(join(session.dir, 'a', 'one.txt'), '11');
    utimesSync(join(session.dir, 'a', 'one.txt'), new Date(), new Date(Date.now() + 5_000));
    await session.finish();
    expect(uploads).toEqual(['results/run1/a/one.txt=1', 'results/run1/a/one.txt=11']);
    expect(existsSync(session.dir)).toBe(false);
  });

  it('refuses a blob destination without an uploader, before making anything', async () => {
    await expect(startDirsync({ destination: 'myaccount/results/x' })).rejects.toThrow('needs the storage configuration');
  });

  it('keeps the temp dir and fails when the final sync fails', async () => {
    const session = await startDirsync({ destination: 'myaccount/results', uploader: () => Promise.reject(new Error('no network')) });
    writeFileSync(join(session.dir, 'f'), 'x');
    await expect(session.finish()).rejects.toThrow(/no network.*kept in/);
    expect(existsSync(session.dir)).toBe(true);
    rmSync(session.dir, { recursive: true, force: true });
  });

  it('tells local paths from ACCOUNT/CONTAINER/PATH', () => {
    expect(parseDirsyncDestination('/data/out', '/w')).toEqual({ kind: 'local', path: '/data/out' });
    expect(parseDirsyncDestination('./out', '/w')).toEqual({ kind: 'local', path: '/w/out' });
    expect(parseDirsyncDestination('acct/container/some/path', '/w')).toEqual({
      kind: 'blob',
      account: 'acct',
      container: 'container',
      path: 'some/path',
      text: 'acct/container/some/path',
    });
    expect(parseDirsyncDestination('Out_Dir/x', '/w')).toEqual({ kind: 'local', path: '/w/Out_Dir/x' });
  });

  it('syncs in the background while the task runs', async () => {
    const { dir, cleanup } = tempDir();
    const dest = join(dir, 'dest');
    const session = await startDirsync({ destination: dest, intervalInMs: 50 });
    writeFileSync(join(session.dir, 'bg.txt'), 'bg');
    await waitFor(() => existsSync(join(dest, 'bg.txt')), 5_000);
    await session.finish();
    cleanup();
  });
});
