import { spawn } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, JobqError } from '@jobq/ports';
import type { TaskUser } from './task-user';

/** The subdirectory of a slot directory that belongs to the task (its output file goes there). */
export const TASK_SUBDIR = 'task';

/** Options of {@link SlotDirs}. */
export interface SlotDirsOptions {
  /** Where the slot directories are made (`mkdtemp`, one per slot, at its first use). */
  root: string;
  /** With a task user, the slot directories get mode 0711 and `task/` is emptied as that user. */
  taskUser: TaskUser | null;
  /** Worker-level log lines (a directory that could not be emptied and is left in place). */
  log?: (line: string) => void;
}

/** Runs `command` as the task user and waits for it; never rejects. */
function runAs(taskUser: TaskUser, command: string, args: string[]): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { uid: taskUser.uid, gid: taskUser.gid, stdio: 'ignore', cwd: '/' });
    child.on('error', () => resolve());
    child.on('close', () => resolve());
  });
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/**
 * The working directories of one worker's task attempts: one per slot (a slot runs one attempt at
 * a time), made with `mkdtemp` at its first use, so workers sharing a machine never share one, and
 * reused by the slot's next attempts. Each attempt gets the directory empty: what an earlier
 * attempt left is removed before the next one uses it (and again when it ends). {@link close}
 * removes them.
 */
export class SlotDirs {
  private readonly free: Slot[] = [];
  private readonly inUse = new Set<Slot>();
  /** Bumped by {@link close}: a slot taken before it is removed when given back instead of kept. */
  private epoch = 0;

  constructor(readonly options: SlotDirsOptions) {}

  /** A slot for one attempt (no file-system call: its directory is made or checked when used). */
  acquire(): Slot {
    const slot = this.free.pop() ?? new Slot(this.options);
    slot.epoch = this.epoch;
    this.inUse.add(slot);
    return slot;
  }

  /** Gives the slot back after {@link Slot.clear}; removed at once when {@link close} ran meanwhile. */
  async release(slot: Slot): Promise<void> {
    if (!this.inUse.delete(slot)) return;
    if (slot.epoch === this.epoch) this.free.push(slot);
    else await slot.remove();
  }

  /** Removes every slot directory not in use (and the others when given back). Safe to call again. */
  async close(): Promise<void> {
    this.epoch++;
    await Promise.all(this.free.splice(0).map((slot) => slot.remove()));
  }
}

/** One slot's directory; see {@link SlotDirs}. */
export class Slot {
  /** The directory, or null while none was made (or the last one was given up). */
  private dir: string | null = null;
  /**
   * Device, inode and birth time of {@link dir}: a directory put in its place is never used, even
   * when the file system gave it the inode of the one removed.
   */
  private identity: { dev: number; ino: number; birthtimeMs: number } | null = null;
  /** @internal */
  epoch = 0;

  constructor(private readonly options: SlotDirsOptions) {}

  /**
   * The slot's directory, empty, for the attempt that holds the slot: made at first use (mode
   * 0700, 0711 with a task user), and made again when it was removed or replaced under the worker.
   * What is found in it (left by an attempt that ended without its clean-up) is removed first; when
   * that cannot be done here (directories of the task user), the directory is left in place, said
   * in the log, and a new one is made. Synchronous, so it can serve a variable the moment a task
   * reads it. Throws a `JobqError` when no directory can be made. `log`: the attempt's log (default
   * the one of the options).
   */
  open(log = this.options.log): string {
    const dir = this.dir;
    if (dir !== null) {
      try {
        if (!this.stillOurs()) {
          // Removed (or replaced by someone else's): that path is not touched again.
          log?.(`the task directory ${dir} was removed or replaced; a new one is made`);
          this.dir = null;
        } else if (!this.sweep(dir)) {
          this.abandon('it holds directories the worker does not remove as root', log);
        }
      } catch (error) {
        this.abandon(errorMessage(error), log);
      }
      if (this.dir !== null) return this.dir;
    }
    const root = this.options.root;
    let made: string;
    try {
      made = mkdtempSync(join(root, 'jobq-wf-'));
      if (this.options.taskUser !== null) chmodSync(made, 0o711);
      const info = lstatSync(made);
      this.identity = { dev: info.dev, ino: info.ino, birthtimeMs: info.birthtimeMs };
    } catch (error) {
      throw new JobqError(
        'internal',
        `could not create the task's temporary directory in ${JSON.stringify(root)}: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
    this.dir = made;
    return made;
  }

  /**
   * Empties the directory after an attempt. With a task user, what is left in `task/` beyond plain
   * files is deleted by a process running as that user (processes the task left behind may still
   * change that tree, and a recursive removal as root could then follow a link they planted there).
   * A directory that cannot be emptied is left in place (`log` says so) and the slot makes a new one.
   */
  async clear(log = this.options.log): Promise<void> {
    const dir = this.dir;
    if (dir === null) return;
    try {
      if (this.sweep(dir)) return;
      const taskUser = this.options.taskUser;
      if (taskUser !== null) {
        // As the task user: make what it left writable again (chmod skips links), then delete it.
        const taskDir = join(dir, TASK_SUBDIR);
        await runAs(taskUser, 'sh', ['-c', 'chmod -R u+rwX -- "$1" 2>/dev/null; exec find "$1" -mindepth 1 -delete', 'sh', taskDir]);
        if (this.sweep(dir)) return;
      }
      this.abandon('files are left there that the task user cannot delete', log);
    } catch (error) {
      if (code(error) === 'ENOENT') this.dir = null;
      else this.abandon(errorMessage(error), log);
    }
  }

  /** Empties and removes the directory (when the worker stops). */
  async remove(): Promise<void> {
    await this.clear();
    const dir = this.dir;
    this.dir = null;
    if (dir === null) return;
    try {
      try {
        rmdirSync(join(dir, TASK_SUBDIR));
      } catch (error) {
        if (code(error) !== 'ENOENT') throw error;
      }
      rmdirSync(dir);
    } catch (error) {
      if (code(error) !== 'ENOENT') this.options.log?.(`could not remove the task directory ${dir}: ${errorMessage(error)}`);
    }
  }

  /**
   * The task's subdirectory `task/` of the slot's directory (from {@link open}), made at first use
   * (mode 0700, then given to the task user) and kept, emptied, for the slot's next attempts; its
   * mode is set back to 0700 when the attempt before changed it (the task owns it).
   */
  taskDir(dir: string): string {
    const taskDir = join(dir, TASK_SUBDIR);
    const info = lstatSync(taskDir, { throwIfNoEntry: false });
    if (info?.isDirectory()) {
      if ((info.mode & 0o7777) !== 0o700) chmodSync(taskDir, 0o700);
      return taskDir;
    }
    // Without a task user the task could remove it, or put something else there.
    if (info !== undefined) unlinkSync(taskDir);
    mkdirSync(taskDir, { mode: 0o700 });
    const taskUser = this.options.taskUser;
    if (taskUser !== null) chownSync(taskDir, taskUser.uid, taskUser.gid);
    return taskDir;
  }

  /** Gives up the current directory: left in place, said in the log; the next use makes a new one. */
  private abandon(why: string, log: ((line: string) => void) | undefined): void {
    if (this.dir !== null) log?.(`could not empty the task directory ${this.dir} (${why}); it is left in place`);
    this.dir = null;
  }

  /** True when the directory is still the one made here. */
  private stillOurs(): boolean {
    try {
      const info = lstatSync(this.dir!);
      const made = this.identity;
      return info.isDirectory() && made !== null && info.dev === made.dev && info.ino === made.ino && info.birthtimeMs === made.birthtimeMs;
    } catch {
      return false;
    }
  }

  /**
   * Removes everything in `dir` that can be removed without the task user's help, keeping `task/`
   * (emptied); true when that left nothing else. Entries are unlinked by name, which never follows
   * a link. Without a task user, whatever is there belongs to the worker's own user and is removed
   * recursively (given its permissions back first when the task took them off); with one, `task/`
   * (the only directory the task can fill) is emptied here when it holds no directory — the common
   * case: the output file and perhaps a temporary one.
   */
  private sweep(dir: string): boolean {
    try {
      return this.sweepOnce(dir);
    } catch (error) {
      if (this.options.taskUser !== null || (code(error) !== 'EACCES' && code(error) !== 'EPERM')) throw error;
      makeWritable(dir, 0o700);
      return this.sweepOnce(dir);
    }
  }

  private sweepOnce(dir: string): boolean {
    let clean = true;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.name === TASK_SUBDIR && entry.isDirectory()) {
        if (!this.emptyTaskDir(path)) clean = false;
      } else if (!entry.isDirectory()) {
        unlinkSync(path);
      } else if (this.options.taskUser === null) {
        rmSync(path, { recursive: true, force: true });
      } else {
        clean = false;
      }
    }
    return clean;
  }

  /** Empties `task/`; false when, with a task user, it holds a directory (nothing more is done then). */
  private emptyTaskDir(taskDir: string): boolean {
    const taskUser = this.options.taskUser;
    const entries = readdirSync(taskDir, { withFileTypes: true });
    if (taskUser !== null && entries.some((entry) => entry.isDirectory())) return false;
    for (const entry of entries) {
      const path = join(taskDir, entry.name);
      try {
        if (entry.isDirectory()) rmSync(path, { recursive: true, force: true });
        else unlinkSync(path);
      } catch (error) {
        if (code(error) === 'ENOENT') continue;
        if (taskUser === null) throw error;
        // EISDIR: replaced by a directory since it was listed (by a process the task left behind).
        return false;
      }
    }
    return true;
  }
}

/** Gives the worker's own user rwx on `dir` (mode `mode`) and every directory below it; links are not followed. */
function makeWritable(dir: string, mode: number): void {
  chmodSync(dir, mode);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      const path = join(dir, entry.name);
      makeWritable(path, (lstatSync(path).mode & 0o777) | 0o700);
    }
  }
}
