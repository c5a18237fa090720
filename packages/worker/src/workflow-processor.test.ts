import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeCoordinatorMessage, decodeEnvelope, type Completion, type TaskMessageInput } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { VirtualClock, type TaskQueue } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { openOutputStore, type AzureOutputStore } from '@jobq/store-azure';
import { realQueueBackends } from './test-helpers/real-queues';
import { drainCompletions, flakyQueue, waitFor, workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor, type WorkflowProcessorOptions } from './workflow-processor';

const PREFIX = 'WfProc';
const STARTED_AT = '2024-05-06T07:08:09.010Z';
const BASE_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}` };

let storage: LocalStorage;
let outputs: AzureOutputStore;
let completions: TaskQueue;
let work: string;
let tempDir: string;
let queueNo = 0;

beforeAll(async () => {
  storage = await startAzurite();
  outputs = await openOutputStore({ connection: { connectionString: storage.connectionString }, prefix: PREFIX });
  work = await mkdtemp(join(tmpdir(), 'jobq-wf-test-'));
  tempDir = await mkdtemp(join(tmpdir(), 'jobq-wf-tmp-'));
});

afterAll(async () => {
  await storage?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

beforeEach(async () => {
  completions = await openStorageQueue({
    connection: { connectionString: storage.connectionString },
    queueName: `wfproc-completions-${++queueNo}`,
  });
});

function processor(overrides: Partial<WorkflowProcessorOptions> = {}): WorkflowProcessor {
  return new WorkflowProcessor({
    outputs,
    completions,
    isCancelled: () => Promise.resolve(false),
    env: BASE_ENV,
    killTimeoutInMs: 1_000,
    completionBackoff: { initialInMs: 10, maxInMs: 40 },
    cancelPollIntervalInMs: 100,
    tempDir,
    now: () => new Date(STARTED_AT),
    ...overrides,
  });
}

function task(workflowId: string, taskName: string, cmd: string | null, extra: Partial<TaskMessageInput> = {}): TaskMessageInput {
  return { workflowId, taskName, attemptNo: 1, kwargs: cmd === null ? {} : { cmd }, ...extra };
}

async function runOne(p: WorkflowProcessor, input: TaskMessageInput) {
  const context = workflowContext(input);
  const outcome = await p.process(context);
  const published = await drainCompletions(completions);
  return { outcome, published, lines: context.lines };
}

function only(published: Completion[]): Completion {
  expect(published).toHaveLength(1);
  return published[0]!;
}

describe('WorkflowProcessor', () => {
  it('traced: gives the task TRACEPARENT and TRACESTATE, and the completion carries the context as a top-level key', async () => {
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'k=v' };
    const context = {
      ...workflowContext(task('wf-traced', 'echo', `printf '"%s %s"' "$TRACEPARENT" "$TRACESTATE" > "$JOBQ_OUTPUT_FILE"`)),
      trace,
    };
    const p = processor();
    expect(await p.process(context)).toEqual({ kind: 'done' });
    await p.close();
    const [message] = await completions.receive({ maxMessages: 1, maxWaitTimeInMs: 0 });
    const decoded = decodeCoordinatorMessage(message!.body);
    expect(decoded).toMatchObject({ kind: 'completion', completion: { success: true, outputRef: `"${trace.traceparent} k=v"` }, trace });
    expect(Object.keys(decodeEnvelope(message!.body).ok ? (JSON.parse(message!.body) as object) : {})).toEqual([
      'version',
      'reply_requested',
      'kwargs',
      'num_retries',
      'id',
      'traceparent',
      'tracestate',
    ]);
  });

  it('accepts only workflow kwargs', () => {
    const p = processor();
    expect(p.accepts({ __workflow_id: 'w', __workflow_task: 't', cmd: 'x' })).toBe(true);
    expect(p.accepts({ cmd: 'x' })).toBe(false);
    expect(p.accepts({ __workflow_id: 'w' })).toBe(false);
  });

  it('no output: success without output_ref; temp files are removed', async () => {
    const p = processor();
    const { outcome, published } = await runOne(p, task('wf-empty', 'a', 'echo hello'));
    expect(outcome).toEqual({ kind: 'done' });
    expect(only(published)).toEqual({
      workflowId: 'wf-empty',
      taskName: 'a',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
      startedAt: STARTED_AT,
      cancelled: false,
    });
    // The slot's directory stays for its next attempt, holding only the task's empty directory.
    const [slot, ...others] = await readdir(tempDir);
    expect(others).toEqual([]);
    expect(await readdir(join(tempDir, slot!))).toEqual(['task']);
    expect(await readdir(join(tempDir, slot!, 'task'))).toEqual([]);
    await p.close();
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('1 KiB output is inline', async () => {
    const value = { text: 'x'.repeat(1024) };
    const cmd = `printf '%s' '${JSON.stringify(value)}' > "$JOBQ_OUTPUT_FILE"`;
    const { outcome, published } = await runOne(processor(), task('wf-inline', 'a', cmd));
    expect(outcome).toEqual({ kind: 'done' });
    const c = only(published);
    expect(c.success).toBe(true);
    expect(JSON.parse(c.outputRef ?? 'null')).toEqual(value);
  });

  it('40 KiB output goes to the canonical blob and reads back', async () => {
    const cmd = `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify({ big: "b".repeat(40 * 1024) }))'`;
    const { outcome, published } = await runOne(processor(), task('wf-blob', 'big', cmd));
    expect(outcome).toEqual({ kind: 'done' });
    const c = only(published);
    expect(c.success).toBe(true);
    expect(c.outputRef).toMatch(/^blob:wfproc-outputs\/outputs\/wf-blob\/big\/1\.json:/);
    expect(await outputs.getOutput(c.outputRef)).toEqual({ big: 'b'.repeat(40 * 1024) });
  });

  it('reports the first stored output of an attempt again when the attempt is delivered twice', async () => {
    const write = (char: string) =>
      `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify("${char}".repeat(40 * 1024)))'`;
    const first = await runOne(processor(), task('wf-twice', 'big', write('a')));
    const second = await runOne(processor(), task('wf-twice', 'big', write('b')));
    const [a, b] = [only(first.published), only(second.published)];
    expect(a.outputRef).toMatch(/^blob:wfproc-outputs\/outputs\/wf-twice\/big\/1\.json:/);
    expect(b).toMatchObject({ success: true, outputRef: a.outputRef });
    expect(second.lines.some((line) => /already has a stored output/.test(line))).toBe(true);
    expect(await outputs.getOutput(b.outputRef)).toBe('a'.repeat(40 * 1024));
  });

  it('600 KiB output with the blob target down fails the attempt with a clear error', async () => {
    const other = await startAzurite();
    await other.stop();
    const down = await openOutputStore({
      connection: { connectionString: storage.connectionString },
      prefix: PREFIX,
      outputs: { connection: { connectionString: other.connectionString }, container: 'down-outputs' },
      uploadAttempts: 1,
      uploadRetryDelayInMs: 0,
      operationTimeoutInMs: 2_000,
    });
    const cmd = `node -e 'require("fs").writeFileSync(process.env.JOBQ_OUTPUT_FILE, JSON.stringify("h".repeat(600 * 1024)))'`;
    const { outcome, published } = await runOne(processor({ outputs: down }), task('wf-down', 'huge', cmd));
    expect(outcome).toEqual({ kind: 'done', failed: true });
    const c = only(published);
    expect(c.success).toBe(false);
    expect(c.outputRef).toBeNull();
    expect(c.error).toMatch(
      /could not store the output.*could not be uploaded.*does not fit in the completion message, so it cannot be sent inline/,
    );
  });

  it('invalid JSON output fails the attempt', async () => {
    const { outcome, published } = await runOne(processor(), task('wf-bad', 'a', `echo '{bad' > "$JOBQ_OUTPUT_FILE"`));
    expect(outcome).toEqual({ kind: 'done', failed: true });
    const c = only(published);
    expect(c.success).toBe(false);
    expect(c.error).toBe(
      'the output file is not JSON: found "{bad\\n"; write JSON (a quoted string, a number, an object…), e.g. with jobq task set-output',
    );
  });

  it('non-zero exit fails with the exit code; the task timeout from the message stops it locally', async () => {
    const clock = new VirtualClock();
    const p = processor({ killTimeoutInMs: 60_000, clock });
    const failed = await runOne(p, task('wf-exit', 'a', 'echo oops >&2; exit 7'));
    expect(only(failed.published)).toMatchObject({ success: false, error: 'exit code 7' });
    expect(failed.lines).toContain('oops');
    // The 1 s limit is on the processor's (virtual) clock: moved past once the process runs, the
    // process gets SIGTERM at once; the kill delay after it never passes (time stands still).
    const context = workflowContext(task('wf-exit', 'b', 'echo up; sleep 20', { timeoutS: 1 }));
    let outcome: unknown;
    void p.process(context).then((o) => (outcome = o));
    expect(await clock.advanceUntil(() => context.lines.includes('up'), { withinMs: 0 })).toBe(true);
    await clock.advance(999);
    expect(outcome).toBeUndefined();
    await clock.advance(1);
    expect(await clock.advanceUntil(() => outcome !== undefined, { withinMs: 0 })).toBe(true);
    expect(only(await drainCompletions(completions))).toMatchObject({ success: false, error: 'timed out after 1s' });
  });

  it('gives the task every JOBQ_* variable, the user env and the upstream refs file', async () => {
    const dump = join(work, 'env-dump');
    const cmd = `env | grep -E '^(JOBQ_|MY_VAR=)' | sort > '${dump}.env'; cat "$JOBQ_WORKFLOW_UPSTREAM_REFS" > '${dump}.refs'; test -f "$JOBQ_OUTPUT_FILE" && test ! -s "$JOBQ_OUTPUT_FILE"`;
    const p = processor({
      env: { ...BASE_ENV, JOBQ_WORKFLOW_QUEUES: 'devstoreaccount1', JOBQ_WORKFLOW_BLOBS: 'devstoreaccount1/wfproc-outputs' },
    });
    const input = task('wf-env', 'child', cmd, {
      attemptNo: 3,
      kwargs: { cmd, env: { MY_VAR: 'from kwargs', JOBQ_WORKFLOW_ID: 'spoofed' } },
      upstream: { s: ['big'], i: { small: '{"a":1}' }, n: ['none'] },
    });
    const { outcome, published } = await runOne(p, input);
    expect(outcome).toEqual({ kind: 'done' });
    expect(only(published)).toMatchObject({ success: true, attemptNo: 3 });
    const env = Object.fromEntries(
      (await readFile(`${dump}.env`, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({
      JOBQ_WORKFLOW_ID: 'wf-env',
      JOBQ_WORKFLOW_TASK: 'child',
      JOBQ_WORKFLOW_ATTEMPT: '3',
      JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}`,
      JOBQ_WORKFLOW_QUEUES: 'devstoreaccount1',
      JOBQ_WORKFLOW_BLOBS: 'devstoreaccount1/wfproc-outputs',
      MY_VAR: 'from kwargs',
    });
    expect(env.JOBQ_OUTPUT_FILE).toMatch(/output\.json$/);
    expect(env.JOBQ_WORKFLOW_UPSTREAM_REFS).toMatch(/upstream-refs\.json$/);
    expect(existsSync(env.JOBQ_OUTPUT_FILE!)).toBe(false); // cleaned up
    expect(JSON.parse(await readFile(`${dump}.refs`, 'utf8'))).toEqual({
      big: 'blob:wfproc-outputs/wf-env/big.json',
      small: '{"a":1}',
      none: null,
    });
    expect(process.env.MY_VAR).toBeUndefined();
  });

  it('reads the upstream refs from an overflow blob', async () => {
    const location = await outputs.putUpstreamOverflow('wf-over', 'fanin', 1, { s: ['p1', 'p2'], n: ['p3'] });
    const dump = join(work, 'overflow.refs');
    const cmd = `cat "$JOBQ_WORKFLOW_UPSTREAM_REFS" > '${dump}'`;
    const { outcome } = await runOne(processor(), task('wf-over', 'fanin', cmd, { upstreamBlob: location }));
    expect(outcome).toEqual({ kind: 'done' });
    expect(JSON.parse(await readFile(dump, 'utf8'))).toEqual({
      p1: 'blob:wfproc-outputs/wf-over/p1.json',
      p2: 'blob:wfproc-outputs/wf-over/p2.json',
      p3: null,
    });
  });

  it('completes a merge node without running anything', async () => {
    const marker = join(work, 'merge-ran');
    const input = task('wf-merge', '__merge_T_0', null, {
      kwargs: { __batch_merge: true, __target: 'T', __batch: 0, cmd: `touch '${marker}'` },
    });
    const { outcome, published } = await runOne(processor(), input);
    expect(outcome).toEqual({ kind: 'done' });
    expect(only(published)).toEqual({
      workflowId: 'wf-merge',
      taskName: '__merge_T_0',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
      startedAt: null,
      cancelled: false,
    });
    expect(existsSync(marker)).toBe(false);
  });

  it('backs off through a completion queue outage, then sends', async () => {
    const flaky = flakyQueue(completions, 3);
    const { outcome, published, lines } = await runOne(processor({ completions: flaky }), task('wf-outage', 'a', 'true'));
    expect(outcome).toEqual({ kind: 'done' });
    expect(flaky.sendCalls).toBe(4);
    expect(only(published)).toMatchObject({ success: true });
    expect(lines.filter((l) => l.includes('injected completion queue outage'))).toHaveLength(3);
  });

  it('leaves the message when the completion cannot be sent within the cap', async () => {
    const flaky = flakyQueue(completions, 'always');
    const { outcome, published } = await runOne(
      processor({ completions: flaky, completionSendMaxAttempts: 3 }),
      task('wf-outage', 'b', 'true'),
    );
    expect(outcome).toMatchObject({ kind: 'leave' });
    expect(outcome.kind === 'leave' && outcome.reason).toMatch(/could not be sent after 3 attempt.*injected/);
    expect(flaky.sendCalls).toBe(3);
    expect(published).toEqual([]);
  });

  it("leaves a task of a workflow its deployment does not know (another deployment's, on a shared queue) without running it", async () => {
    const marker = join(work, 'foreign-ran');
    const asked: string[] = [];
    const p = processor({
      isKnownWorkflow: (id) => {
        asked.push(id);
        return Promise.resolve(id === 'wf-ours');
      },
    });
    const foreign = await runOne(p, task('wf-theirs', 'a', `touch '${marker}'`));
    expect(foreign.outcome).toMatchObject({ kind: 'leave' });
    expect(foreign.outcome.kind === 'leave' && foreign.outcome.reason).toMatch(
      /"wf-theirs" is not in this worker's deployment \(devstoreaccount1\/WfProc\)/,
    );
    expect(foreign.published).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    // Ours runs; a known id is asked once, an unknown one every time.
    expect((await runOne(p, task('wf-ours', 'a', 'true'))).outcome).toEqual({ kind: 'done' });
    expect((await runOne(p, task('wf-ours', 'b', 'true'))).outcome).toEqual({ kind: 'done' });
    await runOne(p, task('wf-theirs', 'b', 'true'));
    expect(asked).toEqual(['wf-theirs', 'wf-ours', 'wf-theirs']);
  });

  it('without JOBQ_WORKFLOW_PREFIX the message is left with a clear config error', async () => {
    const errors: string[] = [];
    const marker = join(work, 'noprefix-ran');
    const p = processor({ env: { PATH: process.env.PATH }, onConfigError: (e) => errors.push(`${e.code}: ${e.message}`) });
    const { outcome, published } = await runOne(p, task('wf-noprefix', 'a', `touch '${marker}'`));
    expect(outcome).toMatchObject({ kind: 'leave' });
    expect(outcome.kind === 'leave' && outcome.reason).toMatch(/JOBQ_WORKFLOW_PREFIX is not set/);
    expect(errors).toEqual([expect.stringMatching(/^invalid-config: JOBQ_WORKFLOW_PREFIX is not set/)]);
    expect(p.configError?.code).toBe('invalid-config');
    expect(published).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('cancel: SIGTERM to the running task, SIGKILL after the grace, other workflows untouched, later tasks not started', async () => {
    const cancelled = new Set<string>();
    const p = processor({ isCancelled: (id) => Promise.resolve(cancelled.has(id)), killTimeoutInMs: 500, cancelPollIntervalInMs: 100 });
    const m = (name: string) => join(work, `cancel-${name}`);
    // The trap reports whether the cancel file (what isCancelled() reads in the task) was there first.
    const trapping = `trap 'if test -f "$JOBQ_WORKFLOW_CANCEL_FILE"; then echo cancelled > ${m('a-term')}; else echo term > ${m('a-term')}; fi; exit 3' TERM; echo up > ${m('a-up')}; while true; do sleep 0.1; done`;
    const ignoring = `trap '' TERM; echo up > ${m('b-up')}; sleep 30; echo survived > ${m('b-survived')}`;
    const other = `echo up > ${m('c-up')}; sleep 1.5; echo '{"ok":true}' > "$JOBQ_OUTPUT_FILE"`;
    const contexts = [
      workflowContext(task('wf-cancel', 'a', trapping)),
      workflowContext(task('wf-cancel', 'b', ignoring)),
      workflowContext(task('wf-other', 'c', other)),
    ];
    const running = contexts.map((c) => p.process(c));
    await waitFor(() => ['a-up', 'b-up', 'c-up'].every((n) => existsSync(m(n))), 10_000, 'tasks to start');
    cancelled.add('wf-cancel');
    const outcomes = await Promise.all(running);
    expect(outcomes).toEqual([{ kind: 'done', failed: true }, { kind: 'done', failed: true }, { kind: 'done' }]);
    const published = await drainCompletions(completions);
    const byTask = Object.fromEntries(published.map((c) => [c.taskName, c]));
    expect(byTask.a).toMatchObject({
      workflowId: 'wf-cancel',
      success: false,
      error: 'stopped: workflow cancelled',
      cancelled: true,
      startedAt: STARTED_AT,
    });
    expect(byTask.b).toMatchObject({
      workflowId: 'wf-cancel',
      success: false,
      error: 'stopped: workflow cancelled (killed after the grace period)',
      cancelled: true,
    });
    expect(byTask.c).toMatchObject({ workflowId: 'wf-other', success: true, outputRef: '{"ok":true}\n', cancelled: false });
    expect(await readFile(m('a-term'), 'utf8')).toBe('cancelled\n');
    expect(existsSync(m('b-survived'))).toBe(false);

    const late = await runOne(p, task('wf-cancel', 'd', `touch ${m('d-ran')}`));
    expect(late.outcome).toEqual({ kind: 'done', failed: true });
    expect(only(late.published)).toMatchObject({
      taskName: 'd',
      success: false,
      error: 'workflow cancelled',
      outputRef: null,
      cancelled: true,
      startedAt: null,
    });
    expect(existsSync(m('d-ran'))).toBe(false);
  });

  it('a lost lock stops the task and leaves the message without a completion', async () => {
    const controller = new AbortController();
    const context = workflowContext(task('wf-lock', 'a', 'echo up; sleep 20'), controller.signal);
    const running = processor({ killTimeoutInMs: 200 }).process(context);
    await waitFor(() => context.lines.includes('up'), 10_000, 'the task to start');
    controller.abort(new Error('lock lost'));
    const outcome = await running;
    expect(outcome).toMatchObject({ kind: 'leave' });
    expect(outcome.kind === 'leave' && outcome.reason).toMatch(/lock lost/);
    expect(await drainCompletions(completions)).toEqual([]);
  });
});

describe.each(realQueueBackends())('WorkflowProcessor with its completions on $label', (backend) => {
  beforeAll(() => backend.start());
  afterAll(() => backend.stop());

  it("decides inline or blob on the completion queue's own limit; the completion arrives whole", async () => {
    const queue = await backend.open();
    // 25 006 bytes of JSON strings full of quotes, about 95 KB once escaped in the completion: it
    // fits a Service Bus message (258 048 bytes with room for properties), not a Storage Queue one (64 KiB).
    const output = JSON.stringify(Array.from({ length: 2_500 }, () => '"q"'));
    expect(queue.maxMessageBytes).toBe(backend.kind === 'servicebus' ? 258_048 : 65_536);
    const context = workflowContext(task('wf-quotes', 'quotes', `printf '%s' '${output}' > "$JOBQ_OUTPUT_FILE"`));
    expect(await processor({ completions: queue }).process(context)).toEqual({ kind: 'done' });
    const sent = only(await drainCompletions(queue, 5_000));
    expect(sent.success).toBe(true);
    if (backend.kind === 'servicebus') {
      expect(sent.outputRef).toBe(output);
    } else {
      expect(sent.outputRef).toMatch(/^blob:wfproc-outputs\/outputs\/wf-quotes\/quotes\/1\.json:/);
      expect(await outputs.getOutput(sent.outputRef)).toEqual(JSON.parse(output));
    }
  });
});
