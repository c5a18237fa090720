import { describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobqError, VirtualClock } from '@jobq/ports';
import type { RunShellOptions, ShellResult } from './subprocess';
import { memoryOutputs, RecordingCompletions } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor, type WorkflowProcessorOptions } from './workflow-processor';

// Task logs (docs/observability.md#task-logs), with a command that prints without a subprocess
// and a counting output store: every log write is recorded.

const ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Logs' };

function exited(exitCode: number): ShellResult {
  return { exitCode, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
}

/** A command that prints `lines` and exits with `exitCode`. */
function printing(lines: readonly string[], exitCode = 0) {
  return (options: RunShellOptions): Promise<ShellResult> => {
    for (const line of lines) options.onLine?.('stdout', line);
    return Promise.resolve(exited(exitCode));
  };
}

async function setup(overrides: Partial<WorkflowProcessorOptions> = {}) {
  const tempDir = await mkdtemp(join(tmpdir(), 'jobq-logs-'));
  const outputs = memoryOutputs();
  const completions = new RecordingCompletions();
  const processor = new WorkflowProcessor({
    outputs,
    completions,
    isCancelled: () => Promise.resolve(false),
    env: ENV,
    killTimeoutInMs: 1_000,
    completionBackoff: { initialInMs: 1, maxInMs: 2 },
    cancelPollIntervalInMs: 24 * 3600_000,
    tempDir,
    workerName: 'host-7',
    ...overrides,
  });
  const run = async (taskName: string, attemptNo = 1) => {
    const context = workflowContext({ workflowId: 'wf-logs', taskName, attemptNo, kwargs: { cmd: 'true' } });
    const outcome = await processor.process(context);
    return { outcome, lines: context.lines };
  };
  return { outputs, completions, processor, run, dispose: () => rm(tempDir, { recursive: true, force: true }) };
}

describe('task logs on the worker', () => {
  it('a silent task makes no log request; three lines make one upload, with its metadata, before the completion', async () => {
    const silent = await setup({ runCommand: printing([]) });
    expect((await silent.run('quiet')).outcome).toEqual({ kind: 'done' });
    expect(silent.outputs.logWrites).toHaveLength(0);
    await silent.dispose();

    let completionsAtUpload = -1;
    const t = await setup({ runCommand: printing(['one', 'two ü', 'three']) });
    const put = t.outputs.putTaskLog.bind(t.outputs);
    t.outputs.putTaskLog = (...args) => {
      completionsAtUpload = t.completions.sent.length;
      return put(...args);
    };
    expect((await t.run('talk')).outcome).toEqual({ kind: 'done' });
    expect(t.outputs.logWrites).toHaveLength(1);
    expect(completionsAtUpload).toBe(0);
    const log = t.outputs.logs.get('wf-logs/talk/1');
    expect(log?.text).toBe('one\ntwo ü\nthree\n');
    expect(log?.metadata).toEqual({
      outcome: 'succeeded',
      exitCode: 0,
      started: expect.any(String),
      ended: expect.any(String),
      bytes: 17,
      worker: 'host-7',
    });
    expect(t.processor.taskLogCounters).toEqual({ uploads: 1, snapshots: 0, failures: 0 });
    await t.dispose();
  });

  it('a failed task leaves a log even when it printed nothing; task names may hold "/"', async () => {
    const t = await setup({ runCommand: printing([], 3) });
    await t.run('fan/in');
    expect(t.outputs.logs.get('wf-logs/fan/in/1')).toEqual({
      text: '',
      metadata: expect.objectContaining({ outcome: 'failed', exitCode: 3, bytes: 0 }),
    });
    expect(t.completions.sent).toEqual([expect.objectContaining({ taskName: 'fan/in', success: false })]);
    await t.dispose();
  });

  it('50 MiB of output keeps the head and the tail, joined by the omitted line', async () => {
    const line = 'x'.repeat(1023);
    const lines = ['first', ...Array.from({ length: 50 * 1024 }, () => line), 'last'];
    const t = await setup({ runCommand: printing(lines) });
    await t.run('loud');
    const text = t.outputs.logs.get('wf-logs/loud/1')?.text ?? '';
    expect(text.startsWith(`first\n${line}`)).toBe(true);
    expect(text.endsWith(`${line}\nlast\n`)).toBe(true);
    const omitted = /\n\[jobq: (\d+) bytes omitted\]\n/.exec(text);
    expect(omitted).not.toBeNull();
    const total = 6 + 50 * 1024 * 1024 + 5;
    expect(t.outputs.logs.get('wf-logs/loud/1')?.metadata.bytes).toBe(total);
    expect(Number(omitted?.[1])).toBe(total - 64 * 1024 - 1024 * 1024);
    expect(Buffer.byteLength(text)).toBe(64 * 1024 + 1024 * 1024 + (omitted?.[0].length ?? 0));
    await t.dispose();
  });

  it('a failed upload only warns and counts: the task still completes', async () => {
    const t = await setup({ runCommand: printing(['hello']) });
    t.outputs.failLogs = new JobqError('unavailable', 'the storage service could not be reached');
    const { outcome, lines } = await t.run('net');
    expect(outcome).toEqual({ kind: 'done' });
    expect(t.completions.sent).toEqual([expect.objectContaining({ success: true })]);
    expect(t.processor.taskLogCounters).toEqual({ uploads: 0, snapshots: 0, failures: 1 });
    expect(lines.some((l) => l.startsWith('warning: could not write the log of task "net" attempt 1:'))).toBe(true);
    await t.dispose();
  });

  it('a flaky task leaves 1.log and 2.log', async () => {
    let calls = 0;
    const t = await setup({
      runCommand: (options) => {
        calls++;
        options.onLine?.('stderr', `try ${calls}`);
        return Promise.resolve(exited(calls === 1 ? 1 : 0));
      },
    });
    await t.run('flaky', 1);
    await t.run('flaky', 2);
    expect([...t.outputs.logs.entries()].map(([key, log]) => [key, log.text, log.metadata.outcome])).toEqual([
      ['wf-logs/flaky/1', 'try 1\n', 'failed'],
      ['wf-logs/flaky/2', 'try 2\n', 'succeeded'],
    ]);
    await t.dispose();
  });

  it('"failed" keeps only failed attempts; "off" keeps none (also from JOBQ_TASK_LOGS)', async () => {
    const failedOnly = await setup({ taskLogs: { mode: 'failed' }, runCommand: printing(['out']) });
    await failedOnly.run('ok');
    expect(failedOnly.outputs.logWrites).toHaveLength(0);
    await failedOnly.dispose();
    const failing = await setup({ taskLogs: { mode: 'failed' }, runCommand: printing(['out'], 2) });
    await failing.run('bad');
    expect(failing.outputs.logs.get('wf-logs/bad/1')?.metadata.outcome).toBe('failed');
    await failing.dispose();
    const off = await setup({ env: { ...ENV, JOBQ_TASK_LOGS: 'off' }, runCommand: printing(['out'], 2) });
    await off.run('bad');
    expect(off.outputs.logWrites).toHaveLength(0);
    await off.dispose();
    await expect(setup({ env: { ...ENV, JOBQ_TASK_LOGS: 'sometimes' } })).rejects.toThrow(
      'JOBQ_TASK_LOGS must be always, failed or off, got "sometimes"',
    );
  });

  it('a long task is rewritten as a live snapshot once per interval, only with new bytes (virtual time)', async () => {
    const clock = new VirtualClock();
    const t = await setup({
      clock,
      taskLogs: { flushIntervalInMs: 30_000 },
      runCommand: async (options) => {
        options.onLine?.('stdout', 'a');
        await clock.sleep(31_000);
        options.onLine?.('stdout', 'b');
        await clock.sleep(60_000); // 60 s and 90 s: a snapshot at 60 s, none at 90 s (no new bytes)
        return exited(0);
      },
    });
    let done = false;
    void t.run('long').then(() => (done = true));
    await clock.runUntil(() => done);
    expect(t.outputs.logWrites.map((w) => [w.metadata.outcome, w.text, w.metadata.ended === null])).toEqual([
      ['live', 'a\n', true],
      ['live', 'a\nb\n', true],
      ['succeeded', 'a\nb\n', false],
    ]);
    expect(t.processor.taskLogCounters).toEqual({ uploads: 3, snapshots: 2, failures: 0 });
    await t.dispose();
  });
});
