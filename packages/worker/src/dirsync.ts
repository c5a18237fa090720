import { copyFile, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { isStorageAccountName } from '@jobq/dag-core';
import { errorMessage, JobqError } from '@jobq/ports';
import { type LogLine } from './log';
import type { Clock } from '@jobq/ports';
import { type LongTimer, setLongTimeout } from './long-timer';

/** Where `bg_dirsync_to` copies to: a local directory or `ACCOUNT/CONTAINER/PATH` in blob storage. */
export type DirsyncDestination =
  { kind: 'local'; path: string } | { kind: 'blob'; account: string; container: string; path: string; text: string };

/** The blob part of {@link DirsyncDestination}. */
export type BlobDirsyncDestination = Extract<DirsyncDestination, { kind: 'blob' }>;

/**
 * Uploads one file of a blob destination. `relativePath` uses `/` separators; the blob name is
 * `destination.path` + `/` + `relativePath`. Called again for a file whose size or mtime changed.
 */
export type DirsyncUploader = (relativePath: string, absolutePath: string, destination: BlobDirsyncDestination) => Promise<void>;

const CONTAINER = /^(?:\$root|[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62})$/;

/**
 * Reads a `bg_dirsync_to` value. Absolute paths and paths starting with `./`, `../` or `~/` are local
 * (relative ones resolve against `cwd`); `ACCOUNT/CONTAINER[/PATH]` with a valid storage account
 * and container name is a blob destination; anything else is a local path relative to `cwd`.
 */
export function parseDirsyncDestination(
  text: string,
  cwd: string = process.cwd(),
  home: string | undefined = process.env.HOME,
): DirsyncDestination {
  if (text.trim() === '') throw new JobqError('invalid-argument', 'bg_dirsync_to is empty');
  if (text.startsWith('~/') && home) return { kind: 'local', path: join(home, text.slice(2)) };
  if (isAbsolute(text) || text.startsWith('./') || text.startsWith('../') || text === '.' || text === '..') {
    return { kind: 'local', path: resolve(cwd, text) };
  }
  const parts = text.split('/');
  const [account, container, ...rest] = parts;
  if (account !== undefined && container !== undefined && isStorageAccountName(account) && CONTAINER.test(container)) {
    return { kind: 'blob', account, container, path: rest.filter((p) => p !== '').join('/'), text };
  }
  return { kind: 'local', path: resolve(cwd, text) };
}

/** Options of {@link startDirsync}. */
export interface DirsyncOptions {
  /** The `bg_dirsync_to` value. */
  destination: string;
  /** How often to copy new and changed files (default 60 s). */
  intervalInMs?: number;
  /** Needed for `ACCOUNT/CONTAINER/PATH` destinations. */
  uploader?: DirsyncUploader;
  /** Where the temporary directory is made (default the OS temp dir). */
  tmpRoot?: string;
  /** Resolves relative local destinations (default `process.cwd()`). */
  cwd?: string;
  log?: LogLine;
  /** The clock of the sync interval (default the real one). */
  clock?: Clock;
}

/** A running background sync; see {@link startDirsync}. */
export interface DirsyncSession {
  /** The fresh directory the task writes to (`$JOBQ_DIRSYNC_DIR`). */
  readonly dir: string;
  readonly destination: DirsyncDestination;
  /** Copies what changed now (waits for a sync already running). Rejects on a copy error. */
  syncNow(): Promise<number>;
  /**
   * Stops the timer, runs the final sync and removes the directory. When the final sync fails it
   * rejects and keeps the directory (its path is in the error), so nothing is lost silently.
   */
  finish(): Promise<void>;
}

interface Seen {
  size: number;
  mtimeMs: number;
}

async function listFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // removed while we looked
      throw error;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) out.push(full); // symlinks, sockets, fifos are skipped
    }
  };
  await walk(root);
  return out;
}

/**
 * Starts `bg_dirsync_to` for one task: makes a fresh temp directory, and every `intervalInMs`
 * copies the files that are new or whose size or mtime changed to the destination, keeping their
 * relative paths (local: `mkdir -p` + copy; blob: the injected uploader). A blob destination
 * without an uploader is refused here, before the task starts.
 */
export async function startDirsync(options: DirsyncOptions): Promise<DirsyncSession> {
  const destination = parseDirsyncDestination(options.destination, options.cwd);
  const uploader = options.uploader;
  if (destination.kind === 'blob' && !uploader) {
    throw new JobqError(
      'invalid-config',
      `bg_dirsync_to "${options.destination}" is a blob destination (ACCOUNT/CONTAINER/PATH), which needs the storage configuration of the worker (a dirsync uploader); this worker has none. Use a local path (absolute or starting with ./) or configure storage.`,
    );
  }
  const log = options.log ?? (() => undefined);
  const intervalInMs = Math.max(10, options.intervalInMs ?? 60_000);
  const dir = await mkdtemp(join(options.tmpRoot ?? tmpdir(), 'jobq-dirsync-'));
  const seen = new Map<string, Seen>();

  const copyOne = async (relativePath: string, absolutePath: string): Promise<void> => {
    if (destination.kind === 'local') {
      const target = join(destination.path, relativePath);
      await mkdir(dirname(target), { recursive: true });
      await copyFile(absolutePath, target);
    } else {
      await uploader!(relativePath.split(sep).join('/'), absolutePath, destination);
    }
  };

  const syncOnce = async (): Promise<number> => {
    if (destination.kind === 'local') await mkdir(destination.path, { recursive: true });
    let copied = 0;
    for (const file of await listFiles(dir)) {
      let info;
      try {
        info = await stat(file);
      } catch {
        continue; // deleted since the listing
      }
      const rel = relative(dir, file);
      const before = seen.get(rel);
      if (before && before.size === info.size && before.mtimeMs === info.mtimeMs) continue;
      await copyOne(rel, file);
      seen.set(rel, { size: info.size, mtimeMs: info.mtimeMs });
      copied++;
    }
    return copied;
  };

  let running: Promise<number> | undefined;
  const syncNow = (): Promise<number> => {
    const previous = running ?? Promise.resolve(0);
    const next = previous.catch(() => 0).then(syncOnce);
    running = next;
    return next;
  };

  let timer: LongTimer | undefined;
  let finished = false;
  const schedule = () => {
    timer = setLongTimeout(
      () => {
        syncNow()
          .catch((error: unknown) => log(`bg_dirsync_to: sync failed (will retry): ${errorMessage(error)}`))
          .finally(() => {
            if (!finished) schedule();
          });
      },
      intervalInMs,
      options.clock,
    ).unref();
  };
  schedule();

  return {
    dir,
    destination,
    syncNow,
    async finish(): Promise<void> {
      finished = true;
      timer?.clear();
      try {
        await syncNow();
      } catch (error) {
        throw new JobqError(
          'internal',
          `bg_dirsync_to: the final sync to "${options.destination}" failed (${errorMessage(error)}); the files are kept in ${dir}`,
          {
            cause: error,
          },
        );
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
