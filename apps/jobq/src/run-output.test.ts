import { describe, expect, it } from '@jest/globals';
import { createRuntime, parseWorkflow, withTaskStates, type TaskRuntime, type WorkflowRuntime } from '@jobq/dag-core';
import type { TaskLine } from '@jobq/worker';
import { ProgressReporter } from './progress';
import { RunOutput, countsWithWaiting, failureLines, taskEvents, waitingRetries, type Verbosity } from './run-output';

const NOW = Date.parse('2026-01-01T00:01:00.000Z');
const at = (offsetS: number): string => new Date(NOW + offsetS * 1000).toISOString();

const WORKFLOW = [
  'name: events',
  'tasks:',
  '  - name: train',
  '    num_retries: 2',
  '    queue: cpu',
  '    kwargs: {cmd: "true"}',
  '  - name: report',
  '    depends_on: [train]',
  '    condition: inputs.train.acc > 0.9',
  '    kwargs: {cmd: "true"}',
  '',
].join('\n');

function state(status: TaskRuntime['status'], attemptNo = 0, error: string | null = null, retryDueAt: string | null = null): TaskRuntime {
  return {
    status,
    attemptNo,
    retryBase: 0,
    outputRef: null,
    error,
    dispatchedAt: null,
    startedAt: null,
    completedAt: null,
    awaitingInputs: false,
    retryDueAt,
  };
}

function runtime(train: TaskRuntime, report: TaskRuntime = state('pending')): WorkflowRuntime {
  const parsed = parseWorkflow(WORKFLOW, { filename: 'events.yaml' });
  if (!parsed.ok) throw new Error('bad fixture');
  const created = createRuntime(parsed.value, { workflowId: 'wf-1', now: at(-60), outputsContainer: null });
  return withTaskStates(created, [
    ['train', train],
    ['report', report],
  ]);
}

/** A RunOutput writing into an array, one entry per line (not a terminal). */
function output(verbosity: Verbosity): { out: RunOutput; lines: string[] } {
  const lines: string[] = [];
  const stream = { write: (text: string) => lines.push(...text.split('\n').filter((l) => l !== '')) } as unknown as NodeJS.WriteStream;
  return { out: new RunOutput(new ProgressReporter(stream, false), verbosity), lines };
}

describe('workflow run output', () => {
  it('tells the task events between two reads: dispatch, a failed attempt retried after a delay, completion, a skip', () => {
    const first = runtime(state('running', 1));
    const failed = runtime(state('running', 2, 'exit code 1', at(30)));
    const done = runtime(state('completed', 2), state('skipped', 0, 'condition false: inputs.train.acc = 0.5, not > 0.9'));
    expect(taskEvents(null, first, NOW)).toEqual(['train#1 dispatched to cpu']);
    expect(taskEvents(first, failed, NOW)).toEqual([
      'train#1 failed: exit code 1; retrying',
      'train#2 waits 30s for its retry delay (queue cpu)',
    ]);
    expect(taskEvents(failed, done, NOW)).toEqual([
      'train#2 completed',
      'report skipped: condition false: inputs.train.acc = 0.5, not > 0.9',
    ]);
    // Seen `ready` with its error, the failure is told once; a retry dispatched at once.
    const rearmed = runtime(state('ready', 1, 'exit code 1'));
    expect(taskEvents(first, rearmed, NOW)).toEqual(['train#1 failed: exit code 1; retrying']);
    expect(taskEvents(rearmed, runtime(state('running', 2, 'exit code 1')), NOW)).toEqual(['train#2 dispatched to cpu']);
    // An attempt that failed and a retry that finished between two reads: told from what is left.
    expect(taskEvents(first, runtime(state('failed', 3, 'exit code 2')), NOW)).toEqual([
      'train#2 failed; retrying',
      'train#3 dispatched to cpu',
      'train#3 failed: exit code 2',
    ]);
    expect(taskEvents(done, done, NOW)).toEqual([]);
  });

  it('counts a retry waiting for its delay as waiting, not running', () => {
    const rt = runtime(state('running', 2, 'exit code 1', at(30)));
    const waiting = waitingRetries(rt, NOW);
    expect([...waiting.keys()]).toEqual(['train']);
    expect(waitingRetries(rt, NOW + 31_000).size).toBe(0);
    expect(countsWithWaiting({ pending: 1, running: 3, completed: 2 }, 1)).toBe('pending 1 · running 2 · waiting 1 · completed 2');
    expect(countsWithWaiting({ running: 1 }, 1)).toBe('waiting 1');
    // Never more waiting than running (the waiting set may be older than the counts).
    expect(countsWithWaiting({ completed: 4 }, 2)).toBe('completed 4');
  });

  it('lists failed tasks with their errors, the rest counted as "and N more"', () => {
    const failed = Array.from({ length: 5 }, (_, i) => ({ name: `t${i}`, attemptNo: 1, error: i === 0 ? null : `exit code ${i}` }));
    expect(failureLines(failed, { limit: 3, more: '--json lists every task' })).toEqual([
      '  failed: t0 (attempt 1): no error recorded',
      '  failed: t1 (attempt 1): exit code 1',
      '  failed: t2 (attempt 1): exit code 2',
      '  … and 2 more failed (--json lists every task)',
    ]);
    expect(failureLines(failed.slice(0, 2), { limit: 3, more: '' })).toHaveLength(2);
  });

  it("prefixes task lines with name and attempt; --quiet drops them and the services' lines, --verbose adds events and the workers' routine lines about each task", () => {
    const task = { id: 'wf-1/train/2', workflowTask: { workflowId: 'wf-1', taskName: 'train', attemptNo: 2 } };
    const feed = (out: RunOutput): void => {
      out.info('submitted workflow');
      out.service('coordinator', 'workflow wf-1: completed');
      out.task('cpu', { task, stream: 'stdout', text: 'epoch 3' } satisfies TaskLine);
      out.task('cpu', { task, stream: 'stderr', text: 'warning: slow' });
      out.task('cpu', { task, stream: null, text: 'started (workflow, delivery 1)' });
      out.task('cpu', { task, stream: null, text: 'lock lost (renewal refused): stopping the task' });
      out.task('cpu', { task: { id: 'plain-1', workflowTask: null }, stream: 'stdout', text: 'hi' });
      out.event('train#2 completed');
      out.problem('could not read the workflow (will retry)');
    };
    const normal = output('normal');
    feed(normal.out);
    expect(normal.lines).toEqual([
      'submitted workflow',
      '[coordinator] workflow wf-1: completed',
      '[train#2] epoch 3',
      '[train#2] warning: slow',
      '[worker cpu] [train#2] lock lost (renewal refused): stopping the task',
      '[plain-1] hi',
      'could not read the workflow (will retry)',
    ]);
    const quiet = output('quiet');
    feed(quiet.out);
    expect(quiet.lines).toEqual(['could not read the workflow (will retry)']);
    const verbose = output('verbose');
    feed(verbose.out);
    expect(verbose.lines).toEqual([
      'submitted workflow',
      '[coordinator] workflow wf-1: completed',
      '[train#2] epoch 3',
      '[train#2] warning: slow',
      '[worker cpu] [train#2] started (workflow, delivery 1)',
      '[worker cpu] [train#2] lock lost (renewal refused): stopping the task',
      '[plain-1] hi',
      'train#2 completed',
      'could not read the workflow (will retry)',
    ]);
  });
});
