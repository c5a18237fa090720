import { closeSync, fchownSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, JobqError, TASK_SOCKET_VARIABLE, TASK_TOKEN_VARIABLE, isJobqError } from '@jobq/ports';
import type { Slot } from './slot-dirs';
import { openTaskChannel, type TaskChannel, type TaskChannelStore } from './task-channel';
import type { TaskUser } from './task-user';

/** Options of {@link AttemptFiles}. */
export interface AttemptFilesOptions {
  /** The slot the attempt runs in: its directory holds the files. */
  slot: Slot;
  workflowId: string;
  taskName: string;
  attemptNo: number;
  /** Parent → output ref: the refs file's content and what the channel lets the task read. */
  upstreamRefs: Readonly<Record<string, string | null>>;
  outputs: TaskChannelStore;
  taskUser: TaskUser | null;
  /** The attempt's log: the task channel's failed requests, a directory that could not be emptied. */
  log: (line: string) => void;
}

/** The variables of a workflow task that name its files and its channel. */
export const ATTEMPT_FILE_VARIABLES = [
  'JOBQ_OUTPUT_FILE',
  'JOBQ_WORKFLOW_UPSTREAM_REFS',
  'JOBQ_WORKFLOW_CANCEL_FILE',
  TASK_SOCKET_VARIABLE,
  TASK_TOKEN_VARIABLE,
] as const;
type AttemptFileVariable = (typeof ATTEMPT_FILE_VARIABLES)[number];

/**
 * The files and the task channel of one attempt, in its slot's directory, each made when the task
 * can first use it:
 *
 * - `task/output.json` (`JOBQ_OUTPUT_FILE`): empty, in a subdirectory of its own so that
 *   `setOutput` can write a temporary file next to it and rename it into place;
 * - `upstream-refs.json` (`JOBQ_WORKFLOW_UPSTREAM_REFS`): parent → output ref;
 * - `cancelled` (`JOBQ_WORKFLOW_CANCEL_FILE`): made once the worker sees the cancel flag;
 * - the channel's socket `task.sock` (`JOBQ_TASK_SOCKET`, `JOBQ_TASK_TOKEN`).
 *
 * A subprocess gets them all before it starts ({@link prepareAll}). A command run in the worker's
 * own process gets variables that make their file when read ({@link defineIn}), so one that reads
 * none of them (a no-op, a benchmark) costs no file-system call at all.
 *
 * With a task user, `task/`, the output file, the refs file and the socket belong to that user,
 * and the slot directory stays the worker's (mode 0711): the task reaches the files it is told about
 * but can neither list nor replace them, so the socket, the refs file and the cancel mark cannot be
 * swapped for links to the worker's own files. Files are made with `O_EXCL` and handed over through
 * their descriptor, never through a path the task could have changed.
 */
export class AttemptFiles {
  private dir: string | null = null;
  private outputFile: string | null = null;
  private refsFile: string | null = null;
  private cancelFile: string | null = null;
  private channel: TaskChannel | null = null;
  private cancelled = false;
  private ended = false;
  private failure: JobqError | null = null;

  constructor(private readonly options: AttemptFilesOptions) {}

  /** The output file, when the task was given one (null: it cannot have written an output). */
  get givenOutputFile(): string | null {
    return this.outputFile;
  }

  /** Makes every file and starts the channel (before starting a subprocess). Throws a `JobqError`. */
  prepareAll(): void {
    for (const name of ATTEMPT_FILE_VARIABLES) this.value(name);
  }

  /**
   * Adds the variables to `env` as properties that make their file (or start the channel) the
   * first time they are read; they are enumerable like the others, and a value assigned replaces
   * them. Reading one after the command ended gives what it gave before, or nothing.
   */
  defineIn(env: NodeJS.ProcessEnv): void {
    for (const name of ATTEMPT_FILE_VARIABLES) {
      Object.defineProperty(env, name, {
        enumerable: true,
        configurable: true,
        get: () => this.value(name),
        set: (value: string | undefined) =>
          Object.defineProperty(env, name, { value, enumerable: true, configurable: true, writable: true }),
      });
    }
  }

  /** The value of one of the variables, its file made first. Throws a `JobqError` when that fails. */
  value(name: AttemptFileVariable): string | undefined {
    if (this.ended) return this.known(name);
    if (this.failure !== null) throw this.failure;
    try {
      switch (name) {
        case 'JOBQ_OUTPUT_FILE':
          return (this.outputFile ??= this.makeOutputFile());
        case 'JOBQ_WORKFLOW_UPSTREAM_REFS':
          return (this.refsFile ??= this.makeRefsFile());
        case 'JOBQ_WORKFLOW_CANCEL_FILE':
          if (this.cancelFile === null) {
            this.cancelFile = join(this.directory(), 'cancelled');
            if (this.cancelled) touch(this.cancelFile);
          }
          return this.cancelFile;
        default:
          this.channel ??= openTaskChannel({
            dir: this.directory(),
            workflowId: this.options.workflowId,
            taskName: this.options.taskName,
            attemptNo: this.options.attemptNo,
            upstreamRefs: this.options.upstreamRefs,
            outputs: this.options.outputs,
            taskUser: this.options.taskUser,
            log: this.options.log,
          });
          return this.channel.env[name];
      }
    } catch (error) {
      this.failure = isJobqError(error)
        ? error
        : new JobqError('internal', `could not prepare the task's files in ${this.dir ?? 'its directory'}: ${errorMessage(error)}`, {
            cause: error,
          });
      throw this.failure;
    }
  }

  /**
   * The worker saw the workflow's cancel flag: the cancel mark is made now if the task was given
   * its path, or when it asks for it. Synchronous, so it never lands after {@link end}.
   */
  markCancelled(): void {
    this.cancelled = true;
    if (this.cancelFile !== null && !this.ended) {
      try {
        touch(this.cancelFile);
      } catch {
        // The task stops anyway (SIGTERM); the mark only lets it notice without a signal.
      }
    }
  }

  /**
   * The command has ended: the channel is stopped, and the variables make nothing any more (they
   * give what they gave before, or nothing). Safe to call again.
   */
  async commandEnded(): Promise<void> {
    this.ended = true;
    await this.channel?.close();
  }

  /** Ends the attempt: {@link commandEnded}, then what the attempt left in the directory is removed. */
  async end(): Promise<void> {
    await this.commandEnded();
    if (this.dir !== null) await this.options.slot.clear(this.options.log);
  }

  private known(name: AttemptFileVariable): string | undefined {
    switch (name) {
      case 'JOBQ_OUTPUT_FILE':
        return this.outputFile ?? undefined;
      case 'JOBQ_WORKFLOW_UPSTREAM_REFS':
        return this.refsFile ?? undefined;
      case 'JOBQ_WORKFLOW_CANCEL_FILE':
        return this.cancelFile ?? undefined;
      default:
        return this.channel?.env[name];
    }
  }

  private directory(): string {
    return (this.dir ??= this.options.slot.open(this.options.log));
  }

  private makeOutputFile(): string {
    const file = join(this.options.slot.taskDir(this.directory()), 'output.json');
    writeNewFile(file, null, this.options.taskUser);
    return file;
  }

  private makeRefsFile(): string {
    const file = join(this.directory(), 'upstream-refs.json');
    writeNewFile(file, JSON.stringify(this.options.upstreamRefs), this.options.taskUser);
    return file;
  }
}

/** Creates `path` (mode 0600, failing if anything is there), writes `text`, and gives it to the task user. */
function writeNewFile(path: string, text: string | null, taskUser: TaskUser | null): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    if (text !== null) writeFileSync(fd, text, 'utf8');
    if (taskUser !== null) fchownSync(fd, taskUser.uid, taskUser.gid);
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` if missing (the worker's own directory: nothing the task can replace). */
function touch(path: string): void {
  closeSync(openSync(path, 'a', 0o644));
}
