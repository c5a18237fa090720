import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeStashMarker, type Completion, type StashMarker, type TaskMessageInput } from '@jobq/dag-core/wire';
import { startAzurite, type LocalStorage } from '@jobq/local';
import type { TaskQueue } from '@jobq/ports';
import { openStorageQueue } from '@jobq/queue-storage';
import { openOutputStore, type AzureOutputStore } from '@jobq/store-azure';
import type { RunShellOptions, ShellResult } from './subprocess';
import { configureTaskHelpers, getFile, getUpstreamOutput } from '@jobq/task';
import { drainCompletions, workflowContext } from './test-helpers/workflow-fixtures';
import { WorkflowProcessor, type WorkflowProcessorOptions } from './workflow-processor';

const PREFIX = `Iso${process.pid}`;
const WORKFLOW = 'wf-iso';
/** The worker's environment: what a task needs to know of its deployment, and no storage credential. */
const BASE_ENV: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}` };
const IS_ROOT = process.getuid?.() === 0;
const NOBODY = { uid: 65534, gid: 65534 };

let storage: LocalStorage;
let outputs: AzureOutputStore;
let completions: TaskQueue;
let scripts: string;
let tempDir: string;
let queueNo = 0;
const bytes = Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 7) % 251));
const big = { rows: Array.from({ length: 1200 }, (_, i) => ({ i, text: 'q'.repeat(30) })) };
let trainRef: string;
let siblingRef: string;
let marker: StashMarker;

/**
 * The task script: talks to the channel the way any language would (HTTP over the socket), reads
 * parent "train" and its stashed file, tries what it may not, and reports as its output.
 */
const TASK_SCRIPT = `
const http = require('node:http');
const crypto = require('node:crypto');
const fs = require('node:fs');
const env = process.env;
function call(path, body, token = env.JOBQ_TASK_TOKEN) {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = http.request({ socketPath: env.JOBQ_TASK_SOCKET, path, method: 'POST', agent: false,
      headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(text);
  });
}
(async () => {
  const refs = JSON.parse(fs.readFileSync(env.JOBQ_WORKFLOW_UPSTREAM_REFS, 'utf8'));
  const train = await call('/v1/output', { ref: refs.train });
  const value = JSON.parse(train.body.toString()).value;
  const file = await call('/v1/file', { marker: value.model });
  const sibling = await call('/v1/output', { ref: env.SIBLING_REF });
  const wrongToken = await call('/v1/output', { ref: refs.train }, '0'.repeat(64));
  let environ;
  try { fs.readFileSync('/proc/' + env.WORKER_PID + '/environ'); environ = 'readable'; } catch (e) { environ = e.code; }
  let attemptDir;
  try { fs.writeFileSync(require('node:path').join(require('node:path').dirname(env.JOBQ_WORKFLOW_UPSTREAM_REFS), 'planted'), 'x'); attemptDir = 'writable'; } catch (e) { attemptDir = e.code; }
  const credentials = Object.entries(env).filter(([k, v]) => /CONNECTION_STRING|ACCOUNT_KEY|_KEY$|SAS|^AZURE_|^IDENTITY_|^MSI_/.test(k) || /AccountKey=|SharedAccessSignature=/i.test(v)).map(([k]) => k);
  const output = {
    uid: process.getuid(), gid: process.getgid(),
    trainStatus: train.status, rows: value.rows.length,
    fileStatus: file.status, fileMd5: crypto.createHash('md5').update(file.body).digest('base64'), fileSize: file.body.length,
    siblingStatus: sibling.status, siblingError: JSON.parse(sibling.body.toString()).error,
    wrongTokenStatus: wrongToken.status, environ, attemptDir, credentials,
  };
  // setOutput's way: a temporary file next to the output file, renamed into place.
  const temp = env.JOBQ_OUTPUT_FILE + '.tmp';
  fs.writeFileSync(temp, JSON.stringify(output));
  fs.renameSync(temp, env.JOBQ_OUTPUT_FILE);
})().catch((error) => { console.error(error); process.exit(3); });
`;

beforeAll(async () => {
  storage = await startAzurite();
  outputs = await openOutputStore({ connection: { connectionString: storage.connectionString }, prefix: PREFIX });
  // Readable by every user (the task may run as nobody); the attempt directories go to their own.
  scripts = await mkdtemp(join(tmpdir(), 'jobq-iso-scripts-'));
  await chmod(scripts, 0o755);
  await writeFile(join(scripts, 'task.js'), TASK_SCRIPT, { mode: 0o644 });
  tempDir = await mkdtemp(join(tmpdir(), 'jobq-iso-tmp-'));
  await chmod(tempDir, 0o755);
  marker = await outputs.putFile(WORKFLOW, 'train', 1, 'model.bin', bytes);
  trainRef = (await outputs.putOutput(WORKFLOW, 'train', 1, JSON.stringify({ ...big, model: makeStashMarker(marker) }))).ref!;
  siblingRef = (await outputs.putOutput(WORKFLOW, 'sibling', 1, JSON.stringify(big))).ref!;
});

afterAll(async () => {
  configureTaskHelpers();
  await storage?.stop();
  if (scripts) await rm(scripts, { recursive: true, force: true });
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

beforeEach(async () => {
  completions = await openStorageQueue({
    connection: { connectionString: storage.connectionString },
    queueName: `iso-completions-${++queueNo}`,
  });
});

const made: WorkflowProcessor[] = [];

afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.close()));
});

function processor(overrides: Partial<WorkflowProcessorOptions> = {}): WorkflowProcessor {
  const p = new WorkflowProcessor({
    outputs,
    completions,
    isCancelled: () => Promise.resolve(false),
    env: BASE_ENV,
    killTimeoutInMs: 1_000,
    completionBackoff: { initialInMs: 10, maxInMs: 40 },
    cancelPollIntervalInMs: 100,
    tempDir,
    ...overrides,
  });
  made.push(p);
  return p;
}

/** Task "eval" of WORKFLOW, child of "train" (its blob output passed in full, md5 included). */
function evalTask(cmd: string, extra: Partial<TaskMessageInput> = {}): TaskMessageInput {
  return {
    workflowId: WORKFLOW,
    taskName: 'eval',
    attemptNo: 1,
    kwargs: { cmd, env: { SIBLING_REF: siblingRef, WORKER_PID: String(process.pid) } },
    upstream: { i: { train: trainRef } },
    ...extra,
  };
}

async function runOne(p: WorkflowProcessor, input: TaskMessageInput): Promise<{ completion: Completion; lines: string[] }> {
  const context = workflowContext(input);
  const outcome = await p.process(context);
  const published = await drainCompletions(completions);
  expect(published).toHaveLength(1);
  expect(outcome).toEqual(published[0]!.success ? { kind: 'done' } : { kind: 'done', failed: true });
  return { completion: published[0]!, lines: context.lines };
}

/** After an attempt: the slot directories hold only the task's empty directory; close() removes them. */
async function expectCleanThenClosed(p: WorkflowProcessor): Promise<void> {
  for (const slot of await readdir(tempDir)) {
    expect(await readdir(join(tempDir, slot))).toEqual(['task']);
    expect(await readdir(join(tempDir, slot, 'task'))).toEqual([]);
  }
  await p.close();
  expect(await readdir(tempDir)).toEqual([]);
}

interface TaskReport {
  uid: number;
  gid: number;
  trainStatus: number;
  rows: number;
  fileStatus: number;
  fileMd5: string;
  fileSize: number;
  siblingStatus: number;
  siblingError: { code: string; message: string };
  wrongTokenStatus: number;
  environ: string;
  attemptDir: string;
  credentials: string[];
}

function md5(data: Uint8Array): string {
  return createHash('md5').update(data).digest('base64');
}

describe('a workflow task reaches storage only through its channel', () => {
  it("a bash task reads its parent's blob output and stashed file through the channel; a non-parent's output is 403, a wrong token 401; no credential in its environment", async () => {
    const p = processor();
    const { completion } = await runOne(p, evalTask(`node '${join(scripts, 'task.js')}'`));
    expect(completion).toMatchObject({ success: true, error: null });
    const report = (await outputs.getOutput(completion.outputRef)) as TaskReport;
    expect(report).toMatchObject({
      trainStatus: 200,
      rows: big.rows.length,
      fileStatus: 200,
      fileMd5: md5(bytes),
      fileSize: bytes.length,
      siblingStatus: 403,
      siblingError: { code: 'auth' },
      wrongTokenStatus: 401,
      credentials: [],
    });
    expect(report.siblingError.message).toMatch(/not the output of a direct parent of task "eval"/);
    // The attempt's files, socket included, are gone.
    await expectCleanThenClosed(p);
  });

  it('a task run in-process through runCommand gets the channel too (the helpers use it)', async () => {
    let seen: NodeJS.ProcessEnv = {};
    const runCommand = async (options: RunShellOptions): Promise<ShellResult> => {
      seen = options.env;
      configureTaskHelpers({ env: options.env });
      try {
        const output = (await getUpstreamOutput('train')) as { rows: unknown[] };
        const file = await (await getFile('train', 'model')).readBytes();
        await writeFile(options.env.JOBQ_OUTPUT_FILE!, JSON.stringify({ rows: output.rows.length, md5: md5(file) }));
        return { exitCode: 0, exitSignal: null, stopped: false, timedOut: false, killed: false, spawnError: null };
      } finally {
        configureTaskHelpers();
      }
    };
    const { completion } = await runOne(processor({ runCommand }), evalTask('in-process'));
    expect(completion).toMatchObject({ success: true });
    expect(JSON.parse(completion.outputRef!)).toEqual({ rows: big.rows.length, md5: md5(bytes) });
    expect(seen.JOBQ_TASK_SOCKET).toMatch(/task\.sock$/);
    expect(seen.JOBQ_TASK_TOKEN).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a task cannot replace the channel variables through kwargs.env', async () => {
    const cmd = `printf '{"socket":"%s"}' "$JOBQ_TASK_SOCKET" > "$JOBQ_OUTPUT_FILE"`;
    const { completion } = await runOne(
      processor(),
      evalTask(cmd, { kwargs: { cmd, env: { JOBQ_TASK_SOCKET: '/tmp/elsewhere', JOBQ_TASK_TOKEN: 'mine' } } }),
    );
    expect((JSON.parse(completion.outputRef!) as { socket: string }).socket).toMatch(/task\.sock$/);
  });
});

if (!IS_ROOT) process.stdout.write('task-isolation.test.ts: skipped the tests that run tasks as another user (they need root)\n');
const asRoot = IS_ROOT ? describe : describe.skip;

asRoot('tasks run as another user (taskUser)', () => {
  it("runs the task as that user: the channel still works, the worker's /proc environ and the attempt directory are out of reach", async () => {
    const p = processor({ taskUser: NOBODY });
    const { completion } = await runOne(p, evalTask(`node '${join(scripts, 'task.js')}'`));
    expect(completion).toMatchObject({ success: true, error: null });
    const report = (await outputs.getOutput(completion.outputRef)) as TaskReport;
    expect(report).toMatchObject({
      uid: NOBODY.uid,
      gid: NOBODY.gid,
      trainStatus: 200,
      fileMd5: md5(bytes),
      siblingStatus: 403,
      wrongTokenStatus: 401,
      environ: 'EACCES',
      attemptDir: 'EACCES',
      credentials: [],
    });
    await expectCleanThenClosed(p);
  });

  it("an output file replaced by a link to the worker's files is refused, not read", async () => {
    const secret = join(tempDir, '..', `jobq-iso-secret-${process.pid}`);
    await writeFile(secret, '{"secret":"of the worker"}', { mode: 0o600 });
    try {
      const cmd = `ln -sf '${secret}' "$JOBQ_OUTPUT_FILE"`;
      const { completion } = await runOne(processor({ taskUser: NOBODY }), evalTask(cmd));
      expect(completion).toMatchObject({ success: false, outputRef: null });
      expect(completion.error).toMatch(/could not read the output file: it is a symbolic link/);
    } finally {
      await rm(secret, { force: true });
    }
  });

  it('files the task leaves in its directory are removed after the attempt', async () => {
    const cmd = `d=$(dirname "$JOBQ_OUTPUT_FILE"); mkdir -p "$d/a/b"; echo x > "$d/a/b/c"; chmod 500 "$d/a/b"; ln -s / "$d/root"`;
    const p = processor({ taskUser: NOBODY });
    const { completion } = await runOne(p, evalTask(cmd));
    expect(completion).toMatchObject({ success: true });
    await expectCleanThenClosed(p);
  });
});
