import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { encodeTaskMessage, type TaskMessageInput } from '@jobq/dag-core/wire';
import { MemoryTaskQueue } from '@jobq/memory';
import { runShell, type RunShellOptions, type ShellResult } from './subprocess';
import { memoryWorkflowProcessor } from './test-helpers/memory-workflow';
import { workflowContext } from './test-helpers/workflow-fixtures';
import { Worker } from './worker';
import type { WorkflowProcessor, WorkflowProcessorOptions } from './workflow-processor';

// The tasks' working directories: one per slot, reused by its next attempts, each of which finds it
// holding nothing of the attempts before (see slot-dirs.ts and attempt-files.ts).

const BASE_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Slots' };
const IS_ROOT = process.getuid?.() === 0;
const NOBODY = { uid: 65534, gid: 65534 };
const OK: ShellResult = { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };

let scratch: string;
let observer: string;
let dirNo = 0;

/** What a task sees of its files, written by it (as whatever user it runs as) to `$REPORT`. */
interface Seen {
  slot: string;
  slotEntries: string[] | string;
  taskEntries: string[];
  output: string;
  refs: unknown;
  cancelMark: boolean;
  vars: string[];
  task: string;
}

const OBSERVER = `
const fs = require('node:fs');
const path = require('node:path');
const e = process.env;
const slot = path.dirname(e.JOBQ_WORKFLOW_UPSTREAM_REFS);
let slotEntries;
try { slotEntries = fs.readdirSync(slot).sort(); } catch (error) { slotEntries = error.code; }
fs.writeFileSync(e.REPORT, JSON.stringify({
  slot,
  slotEntries,
  taskEntries: fs.readdirSync(path.dirname(e.JOBQ_OUTPUT_FILE)).sort(),
  output: fs.readFileSync(e.JOBQ_OUTPUT_FILE, 'utf8'),
  refs: JSON.parse(fs.readFileSync(e.JOBQ_WORKFLOW_UPSTREAM_REFS, 'utf8')),
  cancelMark: fs.existsSync(e.JOBQ_WORKFLOW_CANCEL_FILE),
  vars: Object.keys(e).filter((k) => k.startsWith('JOBQ_') || k.startsWith('FIRST_')).sort(),
  task: e.JOBQ_WORKFLOW_TASK,
}));
// As setOutput does: a temporary file next to the output file, renamed into place.
fs.writeFileSync(e.JOBQ_OUTPUT_FILE + '.tmp', JSON.stringify('seen'));
fs.renameSync(e.JOBQ_OUTPUT_FILE + '.tmp', e.JOBQ_OUTPUT_FILE);
`;

/** What the first attempt leaves behind: files and a directory next to its output and its refs, an output. */
const LITTER = [
  'd=$(dirname "$JOBQ_OUTPUT_FILE"); s=$(dirname "$JOBQ_WORKFLOW_UPSTREAM_REFS")',
  'echo junk > "$d/junk"; mkdir "$d/sub"; echo x > "$d/sub/f"; chmod 500 "$d/sub"; ln -s / "$d/root"',
  // The slot directory is the task's own only when no task user is set.
  '{ echo planted > "$s/planted" && mkdir "$s/plantdir"; } 2>/dev/null || true',
  `printf '{"first":true}' > "$JOBQ_OUTPUT_FILE"`,
].join('; ');

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'jobq-slots-'));
  await chmod(scratch, 0o755);
  observer = join(scratch, 'observer.js');
  await writeFile(observer, OBSERVER, { mode: 0o644 });
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A fresh directory for the processor's slots (readable by the task user), and a report path the task may write. */
async function fresh(): Promise<{ tempDir: string; report: string }> {
  const tempDir = join(scratch, `tmp-${++dirNo}`);
  await mkdir(tempDir, { mode: 0o755 });
  const reports = join(scratch, `reports-${dirNo}`);
  await mkdir(reports, { mode: 0o777 });
  await chmod(reports, 0o777);
  return { tempDir, report: join(reports, 'seen.json') };
}

function setup(tempDir: string, overrides: Partial<WorkflowProcessorOptions> = {}) {
  return memoryWorkflowProcessor({ env: BASE_ENV, tempDir, cancelPollIntervalInMs: 20, ...overrides });
}

function attempt(
  workflowId: string,
  taskName: string,
  cmd: string,
  env: Record<string, string>,
  parents: Record<string, string>,
): TaskMessageInput {
  return { workflowId, taskName, attemptNo: 1, kwargs: { cmd, env }, upstream: { i: parents } };
}

/** Runs one attempt; its log lines. */
async function run(processor: WorkflowProcessor, input: TaskMessageInput): Promise<string[]> {
  const context = workflowContext(input);
  expect(await processor.process(context)).toMatchObject({ kind: 'done' }); // failed or not: the message is settled
  return context.lines;
}

async function slotDirs(tempDir: string): Promise<string[]> {
  return (await readdir(tempDir)).filter((name) => name.startsWith('jobq-wf-')).map((name) => join(tempDir, name));
}

/** Everything below `dir`, as relative paths (directories end in "/"). */
async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of (await readdir(join(dir, prefix), { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = join(prefix, entry.name);
    if (entry.isDirectory()) out.push(`${rel}/`, ...(await tree(dir, rel)));
    else out.push(rel);
  }
  return out;
}

async function seen(report: string): Promise<Seen> {
  return JSON.parse(await readFile(report, 'utf8')) as Seen;
}

describe('a slot directory reused by the next attempt holds nothing of the one before', () => {
  it("subprocesses: the files, the directory and the output the first task left are gone; the refs and variables are the second one's", async () => {
    const { tempDir, report } = await fresh();
    const { processor, completions } = setup(tempDir);
    await run(
      processor,
      attempt(
        'wf-a',
        'first',
        `${LITTER}; echo "$JOBQ_WORKFLOW_UPSTREAM_REFS" > '${report}.first'`,
        { FIRST_ONLY: 'secret-of-first' },
        { p1: '"one"' },
      ),
    );
    const firstSlot = dirname((await readFile(`${report}.first`, 'utf8')).trim());
    await run(processor, attempt('wf-a', 'second', `node '${observer}'`, { REPORT: report }, { p2: '"two"' }));
    const second = await seen(report);
    expect(second).toEqual({
      slot: firstSlot, // the same directory, reused
      slotEntries: ['task', 'task.sock', 'upstream-refs.json'],
      taskEntries: ['output.json'],
      output: '',
      refs: { p2: '"two"' },
      cancelMark: false,
      vars: [
        'JOBQ_OUTPUT_FILE',
        'JOBQ_TASK_SOCKET',
        'JOBQ_TASK_TOKEN',
        'JOBQ_WORKFLOW_ATTEMPT',
        'JOBQ_WORKFLOW_CANCEL_FILE',
        'JOBQ_WORKFLOW_ID',
        'JOBQ_WORKFLOW_PREFIX',
        'JOBQ_WORKFLOW_TASK',
        'JOBQ_WORKFLOW_UPSTREAM_REFS',
      ],
      task: 'second',
    });
    expect(completions.sent.map((c) => [c.taskName, c.success, c.outputRef])).toEqual([
      ['first', true, '{"first":true}'],
      ['second', true, '"seen"'],
    ]);
    // Between attempts the slot holds only the task's (empty) directory; close() removes it.
    expect(await tree(tempDir)).toEqual([`${firstSlot.slice(tempDir.length + 1)}/`, `${firstSlot.slice(tempDir.length + 1)}/task/`]);
    await processor.close();
    expect(await readdir(tempDir)).toEqual([]);
  });

  it("in-process: a cancelled first attempt's mark, output and files are gone for the second", async () => {
    const { tempDir } = await fresh();
    const cancelled = new Set<string>();
    const { processor } = setup(tempDir, {
      isCancelled: (workflowId) => Promise.resolve(cancelled.has(workflowId)),
      runCommand: async (options: RunShellOptions): Promise<ShellResult> => {
        const env = options.env;
        if (env.JOBQ_WORKFLOW_TASK === 'first') {
          await writeFile(env.JOBQ_OUTPUT_FILE!, '{"first":true}');
          await writeFile(join(dirname(env.JOBQ_OUTPUT_FILE!), 'junk'), 'x');
          await writeFile(join(dirname(env.JOBQ_WORKFLOW_UPSTREAM_REFS!), 'planted'), 'x');
          cancelled.add('wf-cancel');
          // Until the worker sees the flag: the mark is made, then the command is stopped.
          while (!existsSync(env.JOBQ_WORKFLOW_CANCEL_FILE!)) await new Promise((resolve) => setTimeout(resolve, 5));
          if (!options.signal?.aborted) await new Promise((resolve) => options.signal?.addEventListener('abort', resolve, { once: true }));
          return { ...OK, exitCode: null, stopped: true };
        }
        const slot = dirname(env.JOBQ_WORKFLOW_UPSTREAM_REFS!);
        seenBySecond = {
          slot,
          tree: await tree(slot),
          output: await readFile(env.JOBQ_OUTPUT_FILE!, 'utf8'),
          refs: JSON.parse(await readFile(env.JOBQ_WORKFLOW_UPSTREAM_REFS!, 'utf8')) as unknown,
          cancelMark: existsSync(env.JOBQ_WORKFLOW_CANCEL_FILE!),
        };
        return OK;
      },
    });
    let seenBySecond: Record<string, unknown> = {};
    await run(processor, attempt('wf-cancel', 'first', 'in-process', {}, { p1: '"one"' }));
    const [slot] = await slotDirs(tempDir);
    await run(processor, attempt('wf-other', 'second', 'in-process', {}, { p2: '"two"' }));
    // Made as it asked for them: when the tree was listed it had read only the refs file's variable.
    expect(seenBySecond).toEqual({ slot, tree: ['task/', 'upstream-refs.json'], output: '', refs: { p2: '"two"' }, cancelMark: false });
    await processor.close();
  });

  it('what an attempt that never cleaned up left (a crash) is removed before the next one starts', async () => {
    const { tempDir, report } = await fresh();
    const { processor } = setup(tempDir);
    await run(processor, attempt('wf-crash', 'first', 'true', {}, {}));
    const [slot] = await slotDirs(tempDir);
    // As if the worker had stopped between the task's end and its clean-up.
    await writeFile(join(slot!, 'upstream-refs.json'), '{"p1":"stale"}');
    await writeFile(join(slot!, 'cancelled'), '');
    await mkdir(join(slot!, 'task', 'sub', 'deeper'), { recursive: true });
    await writeFile(join(slot!, 'task', 'output.json'), '{"stale":true}');
    await writeFile(join(slot!, 'task', 'sub', 'deeper', 'f'), 'x');
    await mkdir(join(slot!, '.transfer-1-abc'));
    await run(processor, attempt('wf-crash', 'second', `node '${observer}'`, { REPORT: report }, { p2: '"two"' }));
    expect(await seen(report)).toMatchObject({
      slot,
      slotEntries: ['task', 'task.sock', 'upstream-refs.json'],
      taskEntries: ['output.json'],
      output: '',
      refs: { p2: '"two"' },
      cancelMark: false,
    });
    await processor.close();
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('a slot directory removed under the worker is made again; one put in its place by someone else is left alone', async () => {
    const { tempDir, report } = await fresh();
    const { processor } = setup(tempDir);
    await run(processor, attempt('wf-gone', 'first', 'true', {}, {}));
    const [first] = await slotDirs(tempDir);
    await rm(first!, { recursive: true });
    const log = await run(processor, attempt('wf-gone', 'second', `node '${observer}'`, { REPORT: report }, {}));
    const second = await seen(report);
    expect(second.slot).not.toBe(first);
    expect(second).toMatchObject({ slotEntries: ['task', 'task.sock', 'upstream-refs.json'], taskEntries: ['output.json'], output: '' });
    expect(log).toContain(`the task directory ${first!} was removed or replaced; a new one is made`);

    // Same path, another directory: never written to, never emptied.
    await rm(second.slot, { recursive: true });
    await mkdir(second.slot);
    await writeFile(join(second.slot, 'theirs'), 'x');
    await run(processor, attempt('wf-gone', 'third', `node '${observer}'`, { REPORT: report }, {}));
    const third = await seen(report);
    expect([first, second.slot]).not.toContain(third.slot);
    expect(await readdir(second.slot)).toEqual(['theirs']);
    await processor.close();
    expect((await readdir(tempDir)).sort()).toEqual([second.slot.slice(tempDir.length + 1)]);
  });
});

describe('files are made only when the task can read them', () => {
  it('an in-process command that reads no file variable costs no directory; one that reads only JOBQ_OUTPUT_FILE gets only that file', async () => {
    const { tempDir } = await fresh();
    let during: string[] = [];
    let given: NodeJS.ProcessEnv = {};
    const { processor, completions } = setup(tempDir, {
      runCommand: async (options) => {
        given = options.env;
        if (options.env.JOBQ_WORKFLOW_TASK === 'reads-output') {
          await writeFile(options.env.JOBQ_OUTPUT_FILE!, '{"n":1}');
          during = await tree(tempDir);
        }
        return OK;
      },
    });
    await run(processor, attempt('wf-lazy', 'no-op', 'in-process', {}, { p: '"x"' }));
    expect(await readdir(tempDir)).toEqual([]);
    // The variables are there all the same (nothing is made once the attempt has ended).
    expect(Object.keys(given)).toEqual(
      expect.arrayContaining([
        'JOBQ_OUTPUT_FILE',
        'JOBQ_WORKFLOW_UPSTREAM_REFS',
        'JOBQ_WORKFLOW_CANCEL_FILE',
        'JOBQ_TASK_SOCKET',
        'JOBQ_TASK_TOKEN',
      ]),
    );
    expect(given.JOBQ_OUTPUT_FILE).toBeUndefined();
    expect(await readdir(tempDir)).toEqual([]);

    await run(processor, attempt('wf-lazy', 'reads-output', 'in-process', {}, { p: '"x"' }));
    const [slot] = await slotDirs(tempDir);
    const name = slot!.slice(tempDir.length + 1);
    expect(during).toEqual([`${name}/`, `${name}/task/`, `${name}/task/output.json`]);
    expect(completions.sent.map((c) => [c.taskName, c.success, c.outputRef])).toEqual([
      ['no-op', true, null],
      ['reads-output', true, '{"n":1}'],
    ]);
    expect(given.JOBQ_OUTPUT_FILE).toBe(join(slot!, 'task', 'output.json'));
    await processor.close();
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('a value a command assigns to a file variable replaces it', async () => {
    const { tempDir } = await fresh();
    const { processor } = setup(tempDir, {
      runCommand: (options) => {
        options.env.JOBQ_OUTPUT_FILE = '/elsewhere';
        expect(options.env.JOBQ_OUTPUT_FILE).toBe('/elsewhere');
        return runShell({ ...options, command: 'test "$JOBQ_OUTPUT_FILE" = /elsewhere && test -S "$JOBQ_TASK_SOCKET"' });
      },
    });
    const lines = await run(processor, attempt('wf-assign', 'a', 'x', {}, {}));
    expect(lines.some((line) => /succeeded/.test(line))).toBe(true);
    await processor.close();
  });
});

describe('a worker uses one directory per slot and removes them when it stops', () => {
  it('5 tasks on 2 slots: at most 2 directories, each reused, none left after run()', async () => {
    const { tempDir } = await fresh();
    const used = join(scratch, `used-${dirNo}`);
    const { processor } = setup(tempDir);
    const queue = new MemoryTaskQueue();
    for (let i = 0; i < 5; i++) {
      await queue.send({
        body: encodeTaskMessage(attempt('wf-worker', `t${i}`, `dirname "$JOBQ_WORKFLOW_UPSTREAM_REFS" >> '${used}'; sleep 0.1`, {}, {})),
      });
    }
    const summary = await new Worker({
      queue,
      processors: [processor],
      numWorkers: 2,
      idleTimeoutInMs: 300,
      receiveWaitInMs: 20,
      maxIdleBackoffInMs: 50,
      log: () => undefined,
    }).run();
    expect(summary).toMatchObject({ processed: 5, succeeded: 5 });
    const dirs = new Set((await readFile(used, 'utf8')).trim().split('\n'));
    expect(dirs.size).toBeLessThanOrEqual(2);
    expect(await readdir(tempDir)).toEqual([]);
  });
});

if (!IS_ROOT) process.stdout.write('slot-dirs.test.ts: skipped the tests that run tasks as another user (they need root)\n');
const asRoot = IS_ROOT ? describe : describe.skip;

asRoot('with a task user', () => {
  async function owner(path: string): Promise<[number, number]> {
    const info = await lstat(path);
    return [info.uid, info.mode & 0o777];
  }

  it("the reused slot keeps its owners and modes; the first task's leftovers are gone for the second", async () => {
    const { tempDir, report } = await fresh();
    const { processor, completions } = setup(tempDir, { taskUser: NOBODY });
    await run(processor, attempt('wf-user', 'first', LITTER, { FIRST_ONLY: 'x' }, { p1: '"one"' }));
    const [slot] = await slotDirs(tempDir);
    await run(processor, attempt('wf-user', 'second', `node '${observer}'`, { REPORT: report }, { p2: '"two"' }));
    const seenBySecond = await seen(report);
    expect(seenBySecond).toMatchObject({
      slot,
      slotEntries: 'EACCES', // the slot directory is the worker's: the task cannot list it
      taskEntries: ['output.json'],
      output: '',
      refs: { p2: '"two"' },
      cancelMark: false,
    });
    expect(seenBySecond.vars).not.toContain('FIRST_ONLY');
    expect(completions.sent.map((c) => [c.taskName, c.success, c.outputRef])).toEqual([
      ['first', true, '{"first":true}'],
      ['second', true, '"seen"'],
    ]);
    expect({ slot: await owner(slot!), task: await owner(join(slot!, 'task')) }).toEqual({ slot: [0, 0o711], task: [NOBODY.uid, 0o700] });
    // A task that takes the write permission off its directory: the next one gets it back.
    await run(processor, attempt('wf-user', 'third', 'chmod 500 "$(dirname "$JOBQ_OUTPUT_FILE")"', {}, {}));
    await run(processor, attempt('wf-user', 'fourth', `node '${observer}'`, { REPORT: report }, {}));
    expect(completions.sent.at(-1)).toMatchObject({ taskName: 'fourth', success: true, outputRef: '"seen"' });
    expect(await tree(slot!)).toEqual(['task/']);
    await processor.close();
    expect(await readdir(tempDir)).toEqual([]);
  });

  it('files, refs and socket belong to the task user (0600) while it runs', async () => {
    const { tempDir } = await fresh();
    let owners: Record<string, [number, number]> = {};
    const { processor } = setup(tempDir, {
      taskUser: NOBODY,
      runCommand: async (options) => {
        const env = { ...options.env };
        owners = {
          output: await owner(env.JOBQ_OUTPUT_FILE!),
          refs: await owner(env.JOBQ_WORKFLOW_UPSTREAM_REFS!),
          socket: await owner(env.JOBQ_TASK_SOCKET!),
          task: await owner(dirname(env.JOBQ_OUTPUT_FILE!)),
          slot: await owner(dirname(env.JOBQ_WORKFLOW_UPSTREAM_REFS!)),
        };
        return runShell(options);
      },
    });
    await run(processor, attempt('wf-owners', 'a', 'true', {}, {}));
    expect(owners).toEqual({
      output: [NOBODY.uid, 0o600],
      refs: [NOBODY.uid, 0o600],
      socket: [NOBODY.uid, 0o600],
      task: [NOBODY.uid, 0o700],
      slot: [0, 0o711],
    });
    await processor.close();
  });

  it('a directory the task user cannot let go of is left in place (said in the log) and the slot gets a new one', async () => {
    const { tempDir, report } = await fresh();
    const { processor } = setup(tempDir, { taskUser: NOBODY });
    await run(processor, attempt('wf-stuck', 'first', 'true', {}, {}));
    const [slot] = await slotDirs(tempDir);
    // Left as if by a crash: a directory of the task user that the worker does not remove as root,
    // holding a root-owned file the task user cannot delete.
    await mkdir(join(slot!, 'task', 'stuck'));
    await writeFile(join(slot!, 'task', 'stuck', 'f'), 'x');
    await chown(join(slot!, 'task', 'stuck'), 0, 0);
    const log = await run(processor, attempt('wf-stuck', 'second', `node '${observer}'`, { REPORT: report }, {}));
    const second = await seen(report);
    expect(second.slot).not.toBe(slot);
    expect(second).toMatchObject({ taskEntries: ['output.json'], output: '' });
    expect(log).toContain(
      `could not empty the task directory ${slot!} (it holds directories the worker does not remove as root); it is left in place`,
    );
    expect((await stat(join(slot!, 'task', 'stuck', 'f'))).isFile()).toBe(true);
    await processor.close();
    expect(await readdir(tempDir)).toEqual([slot!.slice(tempDir.length + 1)]);
  });
});
