import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, open, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TaskUser } from './task-user';

/** The subdirectory of the attempt directory that belongs to the task. */
const TASK_SUBDIR = 'task';

/**
 * Lays out a fresh attempt directory (made by the worker with `mkdtemp`, mode 0700) and returns the
 * task's output file: `task/output.json`, empty, in a subdirectory of its own so that `setOutput`
 * can write a temporary file next to it and rename it into place.
 *
 * With a task user, `task/` and the output file belong to that user, and the attempt directory
 * stays the worker's with mode 0711: the task reaches the files it is told about but can neither
 * list nor replace them, so the socket, the refs file and the cancel mark the worker writes there
 * cannot be swapped for links to the worker's own files.
 */
export async function prepareAttemptDir(dir: string, taskUser: TaskUser | null): Promise<{ outputFile: string }> {
  const taskDir = join(dir, TASK_SUBDIR);
  await mkdir(taskDir, { mode: 0o700 });
  const outputFile = join(taskDir, 'output.json');
  await (await open(outputFile, 'wx', 0o600)).close();
  if (taskUser !== null) {
    await chown(taskDir, taskUser.uid, taskUser.gid);
    await chown(outputFile, taskUser.uid, taskUser.gid);
    await chmod(dir, 0o711);
  }
  return { outputFile };
}

/** Hands a file the worker wrote for the task (e.g. the upstream refs) to the task user, if any. */
export async function giveToTaskUser(path: string, taskUser: TaskUser | null): Promise<void> {
  if (taskUser !== null) await chown(path, taskUser.uid, taskUser.gid);
}

/** Runs `command` as the task user and waits for it; never rejects. */
function runAs(taskUser: TaskUser, command: string, args: string[]): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { uid: taskUser.uid, gid: taskUser.gid, stdio: 'ignore', cwd: '/' });
    child.on('error', () => resolve());
    child.on('close', () => resolve());
  });
}

/**
 * Removes the attempt directory. With a task user, what is inside `task/` is deleted by a process
 * running as that user: processes the task left behind may still change that tree, and a recursive
 * removal as root could then follow a link they planted there. When `task/` cannot be emptied, the
 * directory is left in place and `log` says so.
 */
export async function removeAttemptDir(dir: string, taskUser: TaskUser | null, log?: (line: string) => void): Promise<void> {
  if (taskUser !== null) {
    const taskDir = join(dir, TASK_SUBDIR);
    // As the task user: make what it left writable again (chmod skips links), then delete it.
    await runAs(taskUser, 'sh', ['-c', 'chmod -R u+rwX -- "$1" 2>/dev/null; exec find "$1" -mindepth 1 -delete', 'sh', taskDir]);
    try {
      await rmdir(taskDir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        log?.(`could not remove ${taskDir} (${code ?? 'error'}: files left there that the task user cannot delete); the attempt directory is left in place`);
        return;
      }
    }
  }
  await rm(dir, { recursive: true, force: true });
}
