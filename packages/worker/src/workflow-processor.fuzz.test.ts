import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { TaskMessageInput } from '@jobq/dag-core/wire';
import { JobqError } from '@jobq/ports';
import type { ProcessOutcome } from './processor';
import type { RunShellOptions, ShellResult } from './subprocess';
import { memoryOutputs, memoryWorkflowProcessor, RecordingCompletions } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor } from './workflow-processor';

// Random bytes in cmd, cwd, env names and values and the output file, and faults in the stores:
// whatever comes in, each attempt ends with exactly one terminal completion (a failure carries its
// reason), or the message is left for another delivery with none. The processor never throws.

const BASE_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Fuzz' };

let scratch: string;
let tempDir: string;
let existingDir: string;
let existingFile: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'jobq-wf-fuzz-'));
  tempDir = await mkdtemp(join(tmpdir(), 'jobq-wf-fuzz-tmp-'));
  existingDir = join(scratch, 'dir');
  existingFile = join(scratch, 'file');
  await mkdtemp(existingDir).then((made) => (existingDir = made));
  await writeFile(existingFile, 'x');
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

const anyText = (maxLength: number) =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'binary', maxLength }),
    fc.string({
      unit: fc.constantFrom('\0', '\n', '\r', '"', '\\', '$', '`', '\u2028', '\uFFFE', '\uFFFF', '\uD800', 'a', ' ', '='),
      maxLength,
    }),
  );

const cmdArb = fc.oneof(anyText(40), fc.constant('true'), fc.constant(''), fc.integer(), fc.constant(null));
const cwdArb = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant('__existing_dir__'),
  fc.constant('__existing_file__'),
  anyText(30),
  fc.integer(),
);
const envArb = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(anyText(12), fc.oneof(anyText(20), fc.integer(), fc.boolean(), fc.constant(null), fc.constant({})), { maxKeys: 4 }),
  fc.constant('not an object'),
);
const outputArb = fc.oneof(
  fc.constant(new Uint8Array()),
  fc.uint8Array({ maxLength: 64 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => new TextEncoder().encode(JSON.stringify(v) ?? 'null')),
  anyText(60).map((t) => new TextEncoder().encode(t)),
  fc.constant(new TextEncoder().encode(JSON.stringify('x'.repeat(40 * 1024)))),
);
const runArb = fc.oneof(
  fc.constant({ kind: 'exit' as const, code: 0 }),
  fc.integer({ min: 1, max: 255 }).map((code) => ({ kind: 'exit' as const, code })),
  fc.constant({ kind: 'signal' as const }),
  fc.constant({ kind: 'throw' as const }),
  fc.constant({ kind: 'spawn-error' as const }),
);
const faultArb = fc.record({
  /** Completion sends that fail before one passes (3 attempts in all). */
  sendFailures: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4 })),
  sendFailureRetryable: fc.boolean(),
  putFailure: fc.oneof(fc.constant(null), fc.constant('unavailable' as const), fc.constant('auth' as const)),
});

function resolvePlaceholder(cwd: unknown): unknown {
  if (cwd === '__existing_dir__') return existingDir;
  if (cwd === '__existing_file__') return existingFile;
  return cwd;
}

function inProcessRunner(run: { kind: 'exit' | 'signal' | 'throw' | 'spawn-error'; code?: number }, output: Uint8Array) {
  return async (options: RunShellOptions): Promise<ShellResult> => {
    const base: ShellResult = { exitCode: null, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
    if (run.kind === 'throw') throw new Error('injected: the runner threw');
    if (run.kind === 'spawn-error') return { ...base, spawnError: 'could not start bash: injected' };
    if (options.env.JOBQ_OUTPUT_FILE) await writeFile(options.env.JOBQ_OUTPUT_FILE, output);
    if (run.kind === 'signal') return { ...base, exitSignal: 'SIGSEGV' };
    return { ...base, exitCode: run.code ?? 0 };
  };
}

function checkOutcome(outcome: ProcessOutcome, completions: RecordingCompletions, input: TaskMessageInput): void {
  const mine = completions.forAttempt(input.workflowId, input.taskName, input.attemptNo);
  expect(completions.sent).toHaveLength(mine.length);
  if (outcome.kind === 'done') {
    expect(mine).toHaveLength(1);
    const [completion] = mine;
    if (!completion!.success) expect(completion!.error).toEqual(expect.stringMatching(/\S/));
    else expect(completion!.error).toBeNull();
  } else {
    expect(outcome.kind).toBe('leave');
    expect(mine).toHaveLength(0);
  }
}

describe('WorkflowProcessor fuzz', () => {
  it('random cmd, cwd, env, output and faults (in-process runner): one completion per attempt, or leave', async () => {
    await fc.assert(
      fc.asyncProperty(
        cmdArb,
        cwdArb,
        envArb,
        outputArb,
        runArb,
        faultArb,
        fc.integer({ min: 1, max: 5 }),
        async (cmd, cwd, env, output, run, faults, attemptNo) => {
          const completions = new RecordingCompletions();
          completions.failures = Array.from({ length: faults.sendFailures }, () =>
            faults.sendFailureRetryable
              ? new JobqError('unavailable', 'injected outage')
              : new JobqError('invalid-argument', 'injected 400'),
          );
          const outputs = memoryOutputs();
          if (faults.putFailure !== null) outputs.failNext = new JobqError(faults.putFailure, `injected ${faults.putFailure}`);
          const processor = new WorkflowProcessor({
            outputs,
            completions,
            isCancelled: () => Promise.resolve(false),
            env: BASE_ENV,
            killTimeoutInMs: 100,
            completionSendMaxAttempts: 3,
            completionBackoff: { initialInMs: 0, maxInMs: 0 },
            tempDir,
            runCommand: inProcessRunner(run, output),
          });
          const kwargs: Record<string, unknown> = { cmd, cwd: resolvePlaceholder(cwd), env };
          for (const key of Object.keys(kwargs)) if (kwargs[key] === undefined) delete kwargs[key];
          const input: TaskMessageInput = { workflowId: 'wf-fuzz', taskName: 't', attemptNo, kwargs };
          const outcome = await processor.process(workflowContext(input));
          checkOutcome(outcome, completions, input);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('random bytes through real bash: one completion per attempt', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
          { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'), weight: 1 },
          { arbitrary: anyText(30), weight: 1 },
        ),
        fc.oneof({ arbitrary: fc.constantFrom(undefined, '__existing_dir__'), weight: 4 }, { arbitrary: cwdArb, weight: 1 }),
        fc.dictionary(
          fc.oneof(fc.stringMatching(/^[A-Z0-9_]{0,6}$/), anyText(6)).map((name) => `FUZZ_${name}`),
          anyText(20),
          { maxKeys: 2 },
        ),
        fc.constantFrom(0, 0, 3),
        fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
        async (data, cwd, extraEnv, exitCode, nulInCmd) => {
          const { completions, processor } = memoryWorkflowProcessor({
            env: BASE_ENV,
            killTimeoutInMs: 100,
            completionBackoff: { initialInMs: 0, maxInMs: 0 },
            tempDir,
          });
          // The random data is written by the task, never executed.
          const cmd = `printf '%s' "$FUZZ_DATA" > "$JOBQ_OUTPUT_FILE"; exit ${exitCode}${nulInCmd ? ' #\0' : ''}`;
          const kwargs: Record<string, unknown> = { cmd, env: { ...extraEnv, FUZZ_DATA: data } };
          const resolvedCwd = resolvePlaceholder(cwd);
          if (resolvedCwd !== undefined) kwargs.cwd = resolvedCwd;
          const input: TaskMessageInput = { workflowId: 'wf-fuzz-bash', taskName: 't', attemptNo: 1, kwargs };
          const outcome = await processor.process(workflowContext(input));
          checkOutcome(outcome, completions, input);
        },
      ),
      { numRuns: 16 },
    );
  });
});
