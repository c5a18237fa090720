// The coordinator and the workers run as real `jobq` processes (the built CLI) against Azurite,
// which this file starts in the test process with `startAzurite()` from @jobq/local (one instance
// shared by the tests, each test on its own prefix). The tests crash processes with SIGKILL and
// check that the engine recovers: state is read back through the CLI (`--json`) and, for polling,
// through the workflow store opened in this process.
import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkflowRuntime } from '@jobq/dag-core';
import type { CliProcess } from './cli';
import { runCli } from './cli';
import {
  ProcessGroup,
  SharedStorage,
  cliJson,
  coordinatorArgs,
  crash,
  deployment,
  eventually,
  logsOf,
  processGroupAlive,
  sleep,
  stopProcess,
  summary,
  tempDir,
  waitForEnd,
  waitForRuntime,
  workerArgs,
  type Deployment,
} from './stack';

interface StatusReport {
  workflow_id: string;
  status: string;
  index_status: string;
  tasks: Array<{ task_name: string; status: string; attempt_no: number; error: string | null }>;
}

interface TaskRowJson {
  workflow_id: string;
  task_name: string;
  status: string;
  attempt_no: number;
}

interface TaskSpec {
  name: string;
  cmd: string;
  depends_on?: string[];
  num_retries?: number;
}

const storage = new SharedStorage();
const processes = new ProcessGroup();

afterAll(async () => {
  await processes.killAll();
  await storage.stop();
});

/** Writes a workflow file (JSON: no shell quoting inside YAML to get wrong). */
async function workflowFile(deploy: Deployment, dir: string, name: string, tasks: TaskSpec[]): Promise<string> {
  const path = join(dir, `${name}.json`);
  await writeFile(
    path,
    JSON.stringify({ name, default_queue: deploy.queue, tasks: tasks.map(({ cmd, ...t }) => ({ ...t, kwargs: { cmd } })) }, null, 2),
  );
  return path;
}

/** `jobq workflow submit FILE` → the id. */
async function submit(deploy: Deployment, file: string): Promise<string> {
  const result = await runCli(['workflow', 'submit', file], { env: deploy.env() });
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('Submitted') as unknown });
  const id = result.stdout.trim();
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  return id;
}

function countStatus(runtime: WorkflowRuntime, status: string): number {
  return Object.values(runtime.tasks).filter((t) => t.status === status).length;
}

function lines(path: string): string[] {
  return existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
}

/** A test's prefix, temp directory and processes; stops the processes (gracefully) and removes the directory at the end. */
async function scenario(
  tag: string,
  body: (deploy: Deployment, dir: string, started: Record<string, CliProcess | undefined>) => Promise<void>,
): Promise<void> {
  const deploy = await deployment(storage, tag);
  const dir = await tempDir(tag);
  const started: Record<string, CliProcess | undefined> = {};
  try {
    await body(deploy, dir.path, started);
  } catch (error) {
    if (error instanceof Error) error.message += `\n${logsOf(started)}`;
    throw error;
  } finally {
    await Promise.all(Object.values(started).flatMap((p) => (p ? [stopProcess(p)] : [])));
    await dir.remove();
  }
}

describe('the coordinator and workers as processes', () => {
  it.concurrent(
    'a coordinator SIGKILLed mid-run is restarted with --break-lease and the workflow completes, each completion applied once',
    async () => {
      await scenario('coordkill', async (deploy, dir, started) => {
        const file = await workflowFile(deploy, dir, 'coordinator-crash', [
          { name: 'a', cmd: 'sleep 1' },
          ...[1, 2, 3, 4].map((i) => ({ name: `b${i}`, depends_on: ['a'], cmd: `sleep 1; echo '{"n":${i}}' > "$JOBQ_OUTPUT_FILE"` })),
          // Fails its first attempt: a failure completion applied twice would burn a second attempt.
          { name: 'flaky', depends_on: ['a'], num_retries: 2, cmd: 'sleep 1; [ "$JOBQ_WORKFLOW_ATTEMPT" -ge 2 ]' },
          { name: 'c', depends_on: ['b1', 'b2', 'b3', 'b4', 'flaky'], cmd: 'sleep 1' },
          { name: 'd', depends_on: ['c'], cmd: `echo '{"done":true}' > "$JOBQ_OUTPUT_FILE"` },
        ]);
        const store = await deploy.store();
        const first = (started.coordinator1 = processes.start(coordinatorArgs(), { env: deploy.env() }));
        started.worker = processes.start(workerArgs(deploy.queue, ['--num-workers', '4']), { env: deploy.env() });
        await first.waitFor(/Coordinator running/);
        const id = await submit(deploy, file);
        const logs = (): string => logsOf(started);

        await waitForRuntime(store, id, 'a first completed task', (r) => countStatus(r, 'completed') >= 1, 90_000, logs);
        const killed = await crash(first);
        expect(killed.signal).toBe('SIGKILL');

        // The dead coordinator's lease is still held: a plain start refuses with one clear line.
        const refused = await runCli(coordinatorArgs(), { env: deploy.env() });
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/^jobq: lease-held: .*--break-lease/);
        expect(refused.stderr).not.toMatch(/\n\s+at /);

        const second = (started.coordinator2 = processes.start(coordinatorArgs(['--break-lease']), { env: deploy.env() }));
        await second.waitFor(/Coordinator running \(lease broken and taken over\)/);
        const midway = await waitForRuntime(
          store,
          id,
          'five completed tasks',
          (r) => countStatus(r, 'completed') >= 5 || r.status !== 'running',
          90_000,
          logs,
        );
        if (midway.status === 'running') {
          expect((await crash(second)).signal).toBe('SIGKILL');
          const third = (started.coordinator3 = processes.start(coordinatorArgs(['--break-lease']), { env: deploy.env() }));
          await third.waitFor(/Coordinator running/);
        }

        const end = await waitForEnd(store, id, 120_000, logs);
        expect(summary(end)).toMatch(/^completed;/);
        // Past the completion visibility timeout (5 s), so completions the killed coordinators had
        // received but not acknowledged have come back; they must have been ignored.
        await sleep(6_000);

        const expected = ['a', 'b1', 'b2', 'b3', 'b4', 'flaky', 'c', 'd'].map((name) => ({
          task_name: name,
          status: 'completed',
          attempt_no: name === 'flaky' ? 2 : 1,
        }));
        const status = await cliJson<StatusReport>(['workflow', 'status', id], { env: deploy.env() });
        expect(status.status).toBe('completed');
        expect(status.index_status).toBe('completed');
        expect(status.tasks.map(({ task_name, status: s, attempt_no }) => ({ task_name, status: s, attempt_no }))).toEqual(expected);
        // The task table lists every task. Its statuses are derived rows and are not compared here:
        // a coordinator killed between the runtime write and the row writes leaves those rows behind
        // (the runtime above is the source of truth).
        const rows = await cliJson<TaskRowJson[]>(['workflow', 'tasks', id, '--limit', '0'], { env: deploy.env() });
        expect(rows.map((r) => r.task_name).sort()).toEqual(expected.map((t) => t.task_name).sort());
        expect(rows.every((r) => r.workflow_id === id)).toBe(true);
        const final = (await store.load(id))!.runtime;
        // Nothing was applied after the end: late and redelivered completions left the runtime alone.
        expect(final.updatedAt).toBe(end.updatedAt);
        expect(JSON.parse(final.tasks.d!.outputRef!)).toEqual({ done: true });
        expect(JSON.parse(final.tasks.b3!.outputRef!)).toEqual({ n: 3 });
      });
    },
  );

  it.concurrent(
    'a worker SIGKILLed mid-task: the message comes back after the visibility timeout, a new worker runs it and the workflow completes',
    async () => {
      await scenario('workerkill', async (deploy, dir, started) => {
        const startedFile = join(dir, 'started.txt');
        const finishedFile = join(dir, 'finished.txt');
        const file = await workflowFile(deploy, dir, 'worker-crash', [
          {
            name: 'slow',
            cmd: `echo "$$ $JOBQ_WORKFLOW_ATTEMPT" >> '${startedFile}'; sleep 6; echo done >> '${finishedFile}'; echo '{"ok":true}' > "$JOBQ_OUTPUT_FILE"`,
          },
          { name: 'after', depends_on: ['slow'], cmd: 'true' },
        ]);
        const store = await deploy.store();
        started.coordinator = processes.start(coordinatorArgs(), { env: deploy.env() });
        const first = (started.worker1 = processes.start(workerArgs(deploy.queue, ['--visibility-timeout', '3s']), { env: deploy.env() }));
        const id = await submit(deploy, file);
        await eventually(
          'the task to start',
          () => Promise.resolve(lines(startedFile).length >= 1 ? true : undefined),
          90_000,
          () => logsOf(started),
        );

        expect((await crash(first)).signal).toBe('SIGKILL');
        // The machine "died" with the worker: its task's process group goes too.
        for (const run of lines(startedFile)) {
          try {
            process.kill(-Number(run.split(' ')[0]), 'SIGKILL');
          } catch {
            // Already gone.
          }
        }

        // The new worker keeps the default visibility timeout: under load a 3 s lock can be lost
        // between renewals, which would (correctly) run the task once more.
        const second = (started.worker2 = processes.start(workerArgs(deploy.queue), { env: deploy.env() }));
        const end = await waitForEnd(store, id, 120_000, () => logsOf(started));
        expect(summary(end)).toMatch(/^completed;/);

        // The same message ran again (attempt 1, a later delivery): a redelivery, not a new dispatch;
        // only the new worker's run finished.
        const runs = lines(startedFile);
        expect(runs.length).toBeGreaterThanOrEqual(2);
        expect(runs.map((l) => l.split(' ')[1])).toEqual(runs.map(() => '1'));
        expect(lines(finishedFile)).toEqual(['done']);
        expect(second.stderr).toMatch(new RegExp(`${id}/slow/1\\] started \\(workflow, delivery [2-9]\\)`));
        expect(second.stderr).toMatch(new RegExp(`${id}/slow/1\\] completion sent: task "slow" attempt 1 succeeded`));
        const status = await cliJson<StatusReport>(['workflow', 'status', id], { env: deploy.env() });
        expect(status.status).toBe('completed');
        expect(status.tasks.map((t) => [t.task_name, t.status, t.attempt_no])).toEqual([
          ['slow', 'completed', 1],
          ['after', 'completed', 1],
        ]);
      });
    },
  );

  it.concurrent('`jobq workflow cancel` from another process stops a running shell command and the workflow ends cancelled', async () => {
    await scenario('cancel', async (deploy, dir, started) => {
      const pidFile = join(dir, 'pid.txt');
      const finishedFile = join(dir, 'finished.txt');
      const file = await workflowFile(deploy, dir, 'cancel-me', [
        // With a retry budget the outcome does not depend on whether the worker (polling the
        // index) or the coordinator sees the cancel request first.
        { name: 'long', num_retries: 5, cmd: `echo $$ >> '${pidFile}'; sleep 60; touch '${finishedFile}'` },
        { name: 'after', depends_on: ['long'], cmd: 'true' },
      ]);
      const store = await deploy.store();
      started.coordinator = processes.start(coordinatorArgs(), { env: deploy.env() });
      started.worker = processes.start(workerArgs(deploy.queue), {
        env: deploy.env({ JOBQ_CANCEL_POLL_INTERVAL: '1', JOBQ_KILL_TIMEOUT: '3' }),
      });
      const id = await submit(deploy, file);
      const pid = await eventually(
        'the command to start',
        () => Promise.resolve(lines(pidFile).length >= 1 ? Number(lines(pidFile)[0]) : undefined),
        90_000,
        () => logsOf(started),
      );
      expect(processGroupAlive(pid)).toBe(true);

      const cancel = await runCli(['workflow', 'cancel', id], { env: deploy.env() });
      expect(cancel.code).toBe(0);
      expect(cancel.stdout).toContain(`Cancellation requested for workflow ${id}`);

      const end = await waitForEnd(store, id, 90_000, () => logsOf(started));
      expect(end.status).toBe('cancelled');
      expect([end.tasks.long?.status, end.tasks.after?.status]).toEqual(['cancelled', 'cancelled']);
      // The command ran once: a second attempt, if any was dispatched, is not started for a cancelled workflow.
      expect(lines(pidFile)).toEqual([String(pid)]);
      await eventually("the command's process group to be gone", () => Promise.resolve(processGroupAlive(pid) ? undefined : true), 30_000);
      expect(existsSync(finishedFile)).toBe(false);

      const status = await cliJson<StatusReport>(['workflow', 'status', id], { env: deploy.env() });
      expect(status.status).toBe('cancelled');
      expect(status.tasks.map((t) => [t.task_name, t.status])).toEqual([
        ['long', 'cancelled'],
        ['after', 'cancelled'],
      ]);
      // Cancelling again is harmless and says so; the worker is still serving its queue.
      const again = await cliJson<{ requested: boolean; message: string }>(['workflow', 'cancel', id], { env: deploy.env() });
      expect(again.requested).toBe(false);
      expect(again.message).not.toBe('');
      expect(started.worker.child.exitCode).toBeNull();
    });
  });

  it.concurrent('`jobq workflow retry` after the cause of a failure is fixed completes the workflow', async () => {
    await scenario('retry', async (deploy, dir, started) => {
      const flag = join(dir, 'flag');
      const file = await workflowFile(deploy, dir, 'retry-me', [
        { name: 'check', cmd: `test -f '${flag}'` },
        { name: 'next', depends_on: ['check'], cmd: `echo '{"after":"fix"}' > "$JOBQ_OUTPUT_FILE"` },
      ]);
      const store = await deploy.store();
      started.coordinator = processes.start(coordinatorArgs(), { env: deploy.env() });
      started.worker = processes.start(workerArgs(deploy.queue), { env: deploy.env() });
      const id = await submit(deploy, file);

      const failed = await waitForEnd(store, id, 90_000, () => logsOf(started));
      expect(failed.status).toBe('failed');
      expect([failed.tasks.check?.status, failed.tasks.next?.status]).toEqual(['failed', 'upstream_failed']);

      await writeFile(flag, 'fixed\n');
      const retry = await runCli(['workflow', 'retry', id], { env: deploy.env() });
      expect(retry.code).toBe(0);
      expect(retry.stdout).toContain(`Retry requested for workflow ${id}`);

      const end = await waitForRuntime(
        store,
        id,
        'completed after the retry',
        (r) => r.status === 'completed',
        90_000,
        () => logsOf(started),
      );
      expect(JSON.parse(end.tasks.next!.outputRef!)).toEqual({ after: 'fix' });
      const status = await cliJson<StatusReport>(['workflow', 'status', id], { env: deploy.env() });
      expect(status.status).toBe('completed');
      expect(status.tasks.map((t) => [t.task_name, t.status, t.attempt_no])).toEqual([
        ['check', 'completed', 2],
        ['next', 'completed', 1],
      ]);
      // Nothing left to retry: a clear no-op.
      const again = await cliJson<{ requested: boolean; message: string }>(['workflow', 'retry', id], { env: deploy.env() });
      expect(again.requested).toBe(false);
      expect(again.message).not.toBe('');
    });
  });

  it.concurrent('batch submit: 50 paths on stdin give 50 ids on stdout, and all 50 workflows complete', async () => {
    await scenario('batch', async (deploy, dir, started) => {
      const files = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          workflowFile(deploy, dir, `batch-${String(i).padStart(2, '0')}`, [
            { name: 'produce', cmd: `echo '{"i":${i}}' > "$JOBQ_OUTPUT_FILE"` },
            { name: 'consume', depends_on: ['produce'], cmd: 'jobq_in="$(cat "$JOBQ_WORKFLOW_UPSTREAM_REFS")"; test -n "$jobq_in"' },
          ]),
        ),
      );
      const store = await deploy.store();
      const result = await runCli(['workflow', 'submit'], { env: deploy.env(), input: `${files.join('\n')}\n` });
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 0,
        stderr: expect.stringContaining('Submitted 50/50 workflows (100 tasks)') as unknown,
      });
      const ids = result.stdout.split('\n').filter((l) => l !== '');
      expect(ids).toHaveLength(50);
      expect(new Set(ids).size).toBe(50);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
      // Ids come in the order of the files.
      const names = await Promise.all(ids.map(async (id) => (await store.load(id))!.runtime.definition.name));
      expect(names).toEqual(files.map((_, i) => `batch-${String(i).padStart(2, '0')}`));

      started.coordinator = processes.start(coordinatorArgs(), { env: deploy.env() });
      started.worker = processes.start(workerArgs(deploy.queue, ['--num-workers', '8']), { env: deploy.env() });
      let statuses: string[] = [];
      await eventually(
        'all 50 workflows to complete',
        async () => {
          statuses = await Promise.all(ids.map(async (id) => (await store.load(id))?.runtime.status ?? 'missing'));
          return statuses.every((s) => s === 'completed' || s === 'failed' || s === 'cancelled') ? true : undefined;
        },
        150_000,
        () => `statuses: ${statuses.join(' ')}\n${logsOf(started)}`,
      );
      expect(statuses).toEqual(ids.map(() => 'completed'));
      const listed = await cliJson<Array<{ workflow_id: string; status: string }>>(['workflow', 'list'], { env: deploy.env() });
      expect(listed.map((w) => w.workflow_id).sort()).toEqual([...ids].sort());
      expect(new Set(listed.map((w) => w.status))).toEqual(new Set(['completed']));
    });
  });
});
