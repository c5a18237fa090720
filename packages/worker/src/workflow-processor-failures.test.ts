import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTaskMessage, type TaskMessageInput } from '@jobq/dag-core/wire';
import { JobqError, VirtualClock } from '@jobq/ports';
import { MemoryTaskQueue } from '@jobq/memory';
import { memoryOutputs, memoryWorkflowProcessor } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { runOnClock } from './test-helpers/worker-helpers';
import { Worker } from './worker';
import type { WorkflowProcessorOptions } from './workflow-processor';

const BASE_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Failures' };

let scratch: string;
let tempDir: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'jobq-wf-failures-'));
  tempDir = join(scratch, 'tmp');
  await mkdtemp(tempDir).then((made) => (tempDir = made));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

function setup(overrides: Partial<WorkflowProcessorOptions> = {}) {
  return memoryWorkflowProcessor({ env: BASE_ENV, cancelPollIntervalInMs: 100, tempDir, ...overrides });
}

function task(taskName: string, kwargs: Record<string, unknown>, attemptNo = 1): TaskMessageInput {
  return { workflowId: 'wf-fail', taskName, attemptNo, kwargs };
}

/**
 * Runs the message through a worker on an in-memory queue, on a virtual clock (the worker stops at its
 * idle timeout without a wall-clock wait): what was sent, and what is left on the queues.
 */
async function throughWorker(input: TaskMessageInput, overrides: Partial<WorkflowProcessorOptions> = {}) {
  const clock = new VirtualClock();
  const { completions, processor } = setup({ clock, ...overrides });
  const queue = new MemoryTaskQueue({ clock });
  await queue.send({ body: encodeTaskMessage(input) });
  const summary = await runOnClock(
    clock,
    new Worker({
      queue,
      processors: [processor],
      idleTimeoutInMs: 200,
      receiveWaitInMs: 20,
      maxIdleBackoffInMs: 50,
      log: () => undefined,
      clock,
    }),
  );
  return {
    summary,
    sent: completions.forAttempt(input.workflowId, input.taskName, input.attemptNo),
    left: await queue.approximateMessageCount(),
    deadLettered: await queue.deadLetterQueue().approximateMessageCount(),
  };
}

describe('WorkflowProcessor: a failure of the worker itself still reports the attempt', () => {
  it.each([
    ['a NUL byte in kwargs.cmd', { cmd: 'echo a\0b' }, /^kwargs\.cmd contains a NUL byte/],
    ['a NUL byte in kwargs.cwd', { cmd: 'true', cwd: '/tmp\0/x' }, /^kwargs\.cwd "\/tmp\\u0000\/x" contains a NUL byte/],
    ['a NUL byte in a kwargs.env value', { cmd: 'true', env: { A: 'x\0y' } }, /kwargs\.env has an invalid variable name or value: "A"/],
    ['a NUL byte in a kwargs.env name', { cmd: 'true', env: { 'A\0B': 'x' } }, /kwargs\.env has an invalid variable name or value/],
    ['a kwargs.cwd that does not exist', { cmd: 'true', cwd: '/no/such/dir' }, /^kwargs\.cwd "\/no\/such\/dir" does not exist$/],
  ])('%s: one failure completion, the message completed', async (_what, kwargs, error) => {
    const { summary, sent, left, deadLettered } = await throughWorker(task('a', kwargs));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ success: false, outputRef: null, error: expect.stringMatching(error) });
    expect(summary).toMatchObject({ processed: 1, succeeded: 1, failed: 0 });
    expect(left).toBe(0);
    expect(deadLettered).toBe(0);
  });

  it('a kwargs.cwd that is a file says so', async () => {
    const file = join(scratch, 'a-file');
    await writeFile(file, 'x');
    const { sent } = await throughWorker(task('a', { cmd: 'true', cwd: file }));
    expect(sent).toEqual([expect.objectContaining({ success: false, error: `kwargs.cwd ${JSON.stringify(file)} is not a directory` })]);
  });

  it('a temporary directory that cannot be made (ENOTDIR) fails the attempt with the reason', async () => {
    const file = join(scratch, 'not-a-dir');
    await writeFile(file, 'x');
    const { summary, sent, left } = await throughWorker(task('a', { cmd: 'true' }), { tempDir: join(file, 'below') });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      success: false,
      error: expect.stringMatching(/^could not create the task's temporary directory in ".*below": ENOTDIR/),
    });
    expect(summary).toMatchObject({ succeeded: 1, deadLettered: 0 });
    expect(left).toBe(0);
  });

  it('in-process: the directory is made only when a variable naming a file is read; failing then fails the attempt once', async () => {
    const file = join(scratch, 'not-a-dir-either');
    await writeFile(file, 'x');
    const tempDir = join(file, 'below');
    const quiet = await throughWorker(task('quiet', { cmd: 'in-process' }), {
      tempDir,
      runCommand: () =>
        Promise.resolve({ exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null }),
    });
    expect(quiet.sent).toEqual([expect.objectContaining({ success: true, outputRef: null })]);
    let reads = 0;
    const { sent, left } = await throughWorker(task('reads', { cmd: 'in-process' }), {
      tempDir,
      runCommand: (options) => {
        // The second read gives the same error without trying again.
        const read = () => {
          try {
            return options.env.JOBQ_OUTPUT_FILE;
          } catch {
            reads++;
            return undefined;
          }
        };
        read();
        read();
        // Not caught here: the command fails as one that cannot start.
        const socket = options.env.JOBQ_TASK_SOCKET;
        return Promise.resolve({
          exitCode: socket === undefined ? 1 : 0,
          exitSignal: null,
          stopped: false,
          timedOut: false,
          killed: false,
          spawnError: null,
        });
      },
    });
    expect(reads).toBe(2);
    expect(sent).toEqual([
      expect.objectContaining({
        success: false,
        error: expect.stringMatching(
          /^the worker failed while running the task: could not create the task's temporary directory in ".*below": ENOTDIR/,
        ),
      }),
    ]);
    expect(left).toBe(0);
  });

  it('a runCommand that throws (an unexpected failure inside the worker) sends one failure completion', async () => {
    const { sent, left } = await throughWorker(task('a', { cmd: 'true' }), {
      runCommand: () => Promise.reject(new Error('EMFILE: too many open files')),
    });
    expect(sent).toEqual([
      expect.objectContaining({ success: false, error: 'the worker failed while running the task: EMFILE: too many open files' }),
    ]);
    expect(left).toBe(0);
  });

  it('a throw while the lock is being lost leaves the message instead (no completion)', async () => {
    const controller = new AbortController();
    const { completions, processor } = setup({
      runCommand: () => {
        controller.abort('lock-lost');
        return Promise.reject(new Error('boom'));
      },
    });
    const outcome = await processor.process(workflowContext(task('a', { cmd: 'true' }), controller.signal));
    expect(outcome).toMatchObject({ kind: 'leave', reason: expect.stringMatching(/boom.*lock-lost/) });
    expect(completions.sent).toEqual([]);
  });

  it('a throw after the completion was sent does not send a second one', async () => {
    const { completions, processor } = setup();
    let first = true;
    const context = workflowContext(task('a', { cmd: 'true' }));
    const log = (line: string) => context.log(line);
    // The log line after a sent completion throws once.
    const throwingContext = {
      ...context,
      log: (line: string) => {
        if (first && line.startsWith('completion sent')) {
          first = false;
          throw new Error('log sink broke');
        }
        log(line);
      },
    };
    const outcome = await processor.process(throwingContext);
    expect(outcome).toEqual({ kind: 'done' });
    expect(completions.sent).toHaveLength(1);
  });
});

describe('WorkflowProcessor: the log says what was sent', () => {
  it('after the oversize fallback the log reports the failure that was sent, not a success', async () => {
    const { completions, processor } = setup({
      runCommand: async (options) => {
        await writeFile(options.env.JOBQ_OUTPUT_FILE!, '{"big":true}');
        return { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
      },
    });
    completions.failures = [new JobqError('message-too-large', 'the message is 70000 bytes; the limit is 65536')];
    const context = workflowContext(task('big', { cmd: 'true' }));
    expect(await processor.process(context)).toEqual({ kind: 'done', failed: true });
    expect(completions.sent).toEqual([
      expect.objectContaining({ success: false, outputRef: null, error: expect.stringMatching(/does not fit/) }),
    ]);
    const sentLines = context.lines.filter((line) => line.startsWith('completion sent'));
    expect(sentLines).toEqual([
      expect.stringMatching(/^completion sent: task "big" attempt 1 failed \(the completion carrying the output does not fit/),
    ]);
  });
});

describe('WorkflowProcessor: inline or blob is decided on the completion as it is sent', () => {
  it('an output under 32 KiB whose completion would not fit the queue goes to the attempt blob and the task succeeds', async () => {
    // 25 006 bytes of JSON strings full of quotes: escaped three times on the way, about 95 KB.
    const output = JSON.stringify(Array.from({ length: 2_500 }, () => '"q"'));
    expect(Buffer.byteLength(output)).toBeLessThan(32 * 1024);
    const outputs = memoryOutputs();
    const { completions, processor } = setup({
      outputs,
      runCommand: async (options) => {
        await writeFile(options.env.JOBQ_OUTPUT_FILE!, output);
        return { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
      },
    });
    expect(await processor.process(workflowContext(task('quotes', { cmd: 'true' })))).toEqual({ kind: 'done' });
    expect(completions.sent).toEqual([
      expect.objectContaining({ success: true, outputRef: 'blob:mem-outputs/outputs/wf-fail/quotes/1.json' }),
    ]);
    expect(outputs.blobs.get('outputs/wf-fail/quotes/1.json')).toBe(output);
  });

  it('a small output travels inline', async () => {
    const { completions, processor } = setup({
      runCommand: async (options) => {
        await writeFile(options.env.JOBQ_OUTPUT_FILE!, '{"accuracy":0.9}');
        return { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
      },
    });
    await processor.process(workflowContext(task('small', { cmd: 'true' })));
    expect(completions.sent).toEqual([expect.objectContaining({ success: true, outputRef: '{"accuracy":0.9}' })]);
  });
});

describe('WorkflowProcessor: startedAt and cancelled in the completion', () => {
  const STARTED_AT = '2030-01-02T03:04:05.678Z';
  const clock = () => new Date(STARTED_AT);

  it('a task that ran carries startedAt from the injected clock (exit 0, a failure, a timeout)', async () => {
    const { completions, processor } = setup({ now: clock, killTimeoutInMs: 100 });
    await processor.process(workflowContext(task('ok', { cmd: 'true' })));
    await processor.process(workflowContext(task('exit', { cmd: 'exit 4' })));
    const timingOut = setup({
      now: clock,
      runCommand: () =>
        Promise.resolve({ exitCode: null, exitSignal: 'SIGTERM', stopped: false, timedOut: true, killed: false, spawnError: null }),
    });
    await timingOut.processor.process(workflowContext({ ...task('slow', { cmd: 'sleep 5' }), timeoutS: 3 }));
    expect(
      [...completions.sent, ...timingOut.completions.sent].map((c) => [c.taskName, c.success, c.error, c.startedAt, c.cancelled]),
    ).toEqual([
      ['ok', true, null, STARTED_AT, false],
      ['exit', false, 'exit code 4', STARTED_AT, false],
      ['slow', false, 'timed out after 3s', STARTED_AT, false],
    ]);
  });

  it('a task refused before it started has no startedAt', async () => {
    const { completions, processor } = setup({ now: clock });
    await processor.process(workflowContext(task('nocwd', { cmd: 'true', cwd: '/no/such/dir' })));
    expect(completions.sent).toEqual([expect.objectContaining({ taskName: 'nocwd', success: false, startedAt: null, cancelled: false })]);
  });

  it('cancelled is true for a task not started because of a cancel, and for one stopped by the cancel flag', async () => {
    let cancelled = true;
    const { completions, processor } = setup({
      now: clock,
      isCancelled: () => Promise.resolve(cancelled),
      cancelPollIntervalInMs: 10,
      cancelPollJitter: 0,
      runCommand: (options) =>
        new Promise((resolve) => {
          cancelled = true;
          options.signal?.addEventListener('abort', () =>
            resolve({ exitCode: null, exitSignal: 'SIGTERM', stopped: true, timedOut: false, killed: false, spawnError: null }),
          );
        }),
    });
    await processor.process(workflowContext(task('before', { cmd: 'true' })));
    cancelled = false;
    await processor.process(workflowContext(task('during', { cmd: 'true' })));
    expect(completions.sent.map((c) => [c.taskName, c.error, c.startedAt, c.cancelled])).toEqual([
      ['before', 'workflow cancelled', null, true],
      ['during', 'stopped: workflow cancelled', STARTED_AT, true],
    ]);
  });

  it('an unexpected failure after the start keeps startedAt', async () => {
    const { completions, processor } = setup({ now: clock, runCommand: () => Promise.reject(new Error('boom')) });
    await processor.process(workflowContext(task('throws', { cmd: 'true' })));
    expect(completions.sent).toEqual([
      expect.objectContaining({ success: false, error: 'the worker failed while running the task: boom', startedAt: STARTED_AT }),
    ]);
  });
});
