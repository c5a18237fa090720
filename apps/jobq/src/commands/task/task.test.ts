import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { decodeCoordinatorMessage, encodeTaskMessage, type Completion } from '@jobq/dag-core/wire';
import { openOutputStore, type AzureOutputStore } from '@jobq/store-azure';
import { Worker, WorkflowProcessor, startTaskChannel, type TaskChannel } from '@jobq/worker';
import { resolveConfig } from '../../config';
import { openDeployment, type Deployment } from '../../deployment';
import { CLI, cleanEnv, runCli, type CliResult } from '../../test-helpers/cli';
import TaskGetFile from './get-file';
import TaskGetRealUpstreamTasks from './get-real-upstream-tasks';
import TaskGetUpstream from './get-upstream';
import TaskGetUpstreamOutputs from './get-upstream-outputs';
import TaskInfo from './info';
import TaskIsCancelled from './is-cancelled';
import TaskSetOutput from './set-output';
import TaskStashFile from './stash-file';

const PREFIX = `Cli${process.pid}`;
const WORKFLOW = 'wf-cli-task';

let azurite: LocalStorage;
let outputs: AzureOutputStore;
let dir: string;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  outputs = await openOutputStore({ connection: { connectionString: azurite.connectionString }, prefix: PREFIX });
  dir = await mkdtemp(join(tmpdir(), 'jobq-cli-task-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await azurite.stop();
});

interface TaskEnv {
  env: NodeJS.ProcessEnv;
  outputFile: string;
  taskDir: string;
}

/** The environment the workflow processor gives a task: an empty output file and the upstream refs file. */
async function taskEnv(
  task: string,
  refs: Record<string, string | null> = {},
  options: { workflowId?: string; realUpstream?: string[]; extra?: NodeJS.ProcessEnv } = {},
): Promise<TaskEnv> {
  counter++;
  const taskDir = join(dir, `${task}-${counter}`);
  await mkdir(taskDir, { recursive: true });
  const outputFile = join(taskDir, 'output.json');
  await writeFile(outputFile, '');
  const refsFile = join(taskDir, 'upstream-refs.json');
  await writeFile(refsFile, JSON.stringify(refs));
  const env = cleanEnv({
    JOBQ_WORKFLOW_ID: options.workflowId ?? WORKFLOW,
    JOBQ_WORKFLOW_TASK: task,
    JOBQ_WORKFLOW_ATTEMPT: '1',
    JOBQ_WORKFLOW_PREFIX: `devstoreaccount1/${PREFIX}`,
    JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString,
    JOBQ_OUTPUT_FILE: outputFile,
    JOBQ_WORKFLOW_UPSTREAM_REFS: refsFile,
    JOBQ_WORKFLOW_CANCEL_FILE: join(taskDir, 'cancelled'),
    ...options.extra,
  });
  if (options.realUpstream) {
    const realFile = join(taskDir, 'real-upstream.json');
    await writeFile(realFile, JSON.stringify(options.realUpstream));
    env.JOBQ_WORKFLOW_REAL_UPSTREAM = realFile;
  }
  return { env, outputFile, taskDir };
}

/** Runs `jobq task ARGS…` once per argument list, all at once; results in the same order. */
function runTasks<const T extends ReadonlyArray<readonly string[]>>(
  argsList: T,
  env: NodeJS.ProcessEnv,
): Promise<{ [K in keyof T]: CliResult }> {
  return Promise.all(argsList.map((args) => runCli(['task', ...args], { env }))) as Promise<{ [K in keyof T]: CliResult }>;
}

const COMMANDS: Array<[string, string[]]> = [
  ['set-output', ['x']],
  ['get-upstream', ['a']],
  ['get-upstream-outputs', []],
  ['get-real-upstream-tasks', []],
  ['is-cancelled', []],
  ['stash-file', ['file.txt']],
  ['get-file', ['a', 'k', 'dest']],
];

describe('outside a workflow task', () => {
  it('every jobq task command exits 2 with one clear line', async () => {
    const results = await Promise.all(COMMANDS.map(([command, args]) => runCli(['task', command, ...args], { env: cleanEnv() })));
    results.forEach((result, index) => {
      const command = COMMANDS[index]![0];
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toEqual([
        `jobq: jobq task ${command} can only run inside a jobq workflow task (JOBQ_WORKFLOW_TASK is not set)`,
      ]);
    });
  });

  it('every command has a summary, a description and examples for --help', async () => {
    const classes = [
      TaskSetOutput,
      TaskGetUpstream,
      TaskGetUpstreamOutputs,
      TaskGetRealUpstreamTasks,
      TaskIsCancelled,
      TaskStashFile,
      TaskGetFile,
      TaskInfo,
    ];
    for (const command of classes) {
      expect(command.summary).toBeTruthy();
      expect(command.description).toBeTruthy();
      expect(command.examples?.length).toBeGreaterThan(0);
    }
    const help = await runCli(['task', 'get-file', '--help'], { env: cleanEnv() });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('EXAMPLES');
  });

  it('task info says it is not in a task; --check exits 2', async () => {
    const [info, check] = await Promise.all([
      runCli(['task', 'info'], { env: cleanEnv() }),
      runCli(['task', 'info', '--check'], { env: cleanEnv() }),
    ]);
    expect(info.code).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ in_task: false, workflow_id: null, task: null });
    expect(check.code).toBe(2);
  });
});

describe('set-output', () => {
  it('takes text as a string, --json as JSON, and --stdin', async () => {
    const { env, outputFile } = await taskEnv('producer');
    let result = await runCli(['task', 'set-output', 'hello world'], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
    expect(await readFile(outputFile, 'utf8')).toBe('"hello world"');

    result = await runCli(['task', 'set-output', '--json', '{"accuracy":0.93,"tags":["a"]}'], { env });
    expect(result.code).toBe(0);
    expect(JSON.parse(await readFile(outputFile, 'utf8'))).toEqual({ accuracy: 0.93, tags: ['a'] });

    result = await runCli(['task', 'set-output', '--stdin'], { env, input: 'line one\nline two\n' });
    expect(result.code).toBe(0);
    expect(JSON.parse(await readFile(outputFile, 'utf8'))).toBe('line one\nline two');

    result = await runCli(['task', 'set-output', '--stdin', '--json'], { env, input: '[1, 2, null]\n' });
    expect(result.code).toBe(0);
    expect(JSON.parse(await readFile(outputFile, 'utf8'))).toEqual([1, 2, null]);
  });

  it('refuses invalid JSON and a missing value with exit 2, leaving the output alone', async () => {
    const { env, outputFile } = await taskEnv('producer');
    await writeFile(outputFile, '"kept"');
    const bad = await runCli(['task', 'set-output', '--json', '{nope'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not valid JSON/);
    const missing = await runCli(['task', 'set-output'], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect(await readFile(outputFile, 'utf8')).toBe('"kept"');
  });
});

describe('upstream outputs', () => {
  const big = { rows: Array.from({ length: 1000 }, (_, i) => ({ i, text: 'z'.repeat(40) })) };
  let bigRef: string;

  beforeAll(async () => {
    const put = await outputs.putOutput(WORKFLOW, 'big', 1, JSON.stringify(big));
    expect(put.placement).toBe('blob');
    bigRef = put.ref!;
  });

  async function consumer(): Promise<TaskEnv> {
    return taskEnv(
      'consumer',
      { prep: '{"rows":3,"name":"x"}', label: '"a label"', big: bigRef, skipped: null },
      { realUpstream: ['prep', 'label', 'big', 'skipped', 'failed'] },
    );
  }

  it('get-upstream prints the output as JSON (blob outputs downloaded), --raw prints strings unquoted, null for skipped', async () => {
    const { env } = await consumer();
    const [prep, label, raw, rawObject, blob, skipped] = await runTasks(
      [
        ['get-upstream', 'prep'],
        ['get-upstream', 'label'],
        ['get-upstream', 'label', '--raw'],
        ['get-upstream', 'prep', '--raw'],
        ['get-upstream', 'big'],
        ['get-upstream', 'skipped'],
      ],
      env,
    );
    expect(prep.code).toBe(0);
    expect(JSON.parse(prep.stdout)).toEqual({ rows: 3, name: 'x' });
    expect(prep.stdout.trim().split('\n')).toHaveLength(1);
    expect(label.stdout).toBe('"a label"\n');
    expect(raw.stdout).toBe('a label\n');
    expect(JSON.parse(rawObject.stdout)).toEqual({ rows: 3, name: 'x' });
    expect(blob.code).toBe(0);
    expect(JSON.parse(blob.stdout)).toEqual(big);
    expect(skipped.stdout).toBe('null\n');
  });

  it('get-upstream: a failed parent is an error (exit 1), a task that is not upstream a usage error (exit 2)', async () => {
    const { env } = await consumer();
    const [failed, stranger] = await Promise.all([
      runCli(['task', 'get-upstream', 'failed'], { env }),
      runCli(['task', 'get-upstream', 'stranger'], { env }),
    ]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect(failed.stderr).toMatch(/jobq task get-upstream: upstream task "failed" of "consumer" did not complete/);

    expect(stranger.code).toBe(2);
    expect(stranger.stderr).toMatch(/"stranger" is not an upstream task of "consumer"/);
  });

  it('get-upstream-outputs prints one JSON object of the parents that completed or were skipped', async () => {
    const { env } = await consumer();
    const result = await runCli(['task', 'get-upstream-outputs'], { env });
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(['prep', 'label', 'big', 'skipped']);
    expect(doc).toEqual({ prep: { rows: 3, name: 'x' }, label: 'a label', big, skipped: null });
  });

  it('get-real-upstream-tasks prints a JSON array, or lines with --lines', async () => {
    const { env } = await consumer();
    // Without the full list from the worker: the parents that completed or were skipped.
    const { env: plain } = await taskEnv('consumer', { a: null, b: '1' });
    const [json, lines, fallback] = await Promise.all([
      runCli(['task', 'get-real-upstream-tasks'], { env }),
      runCli(['task', 'get-real-upstream-tasks', '--lines'], { env }),
      runCli(['task', 'get-real-upstream-tasks'], { env: plain }),
    ]);
    expect(JSON.parse(json.stdout)).toEqual(['prep', 'label', 'big', 'skipped', 'failed']);
    expect(lines.stdout).toBe('prep\nlabel\nbig\nskipped\nfailed\n');
    expect(JSON.parse(fallback.stdout)).toEqual(['a', 'b']);
  });
});

describe('stash-file and get-file', () => {
  it('round trip: stash a file, put its marker in the output, download it downstream by key, alone, and by marker', async () => {
    const producer = await taskEnv('train');
    const bytes = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7) % 256));
    const source = join(producer.taskDir, 'model.bin');
    await writeFile(source, bytes);

    const [stashed, named] = await Promise.all([
      runCli(['task', 'stash-file', source], { env: producer.env }),
      runCli(['task', 'stash-file', source, '--name', 'weights.bin'], { env: producer.env }),
    ]);
    expect(stashed.code).toBe(0);
    const marker = JSON.parse(stashed.stdout) as { __jobq_stash__: { blob_name: string; size: number } };
    expect(marker.__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/train/1/model.bin`);
    expect(marker.__jobq_stash__.size).toBe(50_000);

    expect((JSON.parse(named.stdout) as typeof marker).__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/train/1/weights.bin`);

    const set = await runCli(['task', 'set-output', '--json', JSON.stringify({ model: marker, loss: 0.1 })], { env: producer.env });
    expect(set.code).toBe(0);
    const producerOutput = await readFile(producer.outputFile, 'utf8');

    const consumer = await taskEnv('eval', { train: producerOutput, whole: stashed.stdout.trim() });
    const dest = join(consumer.taskDir, 'model.bin');
    const intoDir = join(consumer.taskDir, 'inputs');
    await mkdir(intoDir);
    const [byKey, whole, byMarker, upstream, noKey] = await runTasks(
      [
        ['get-file', 'train', 'model', dest],
        ['get-file', 'whole', intoDir],
        ['get-file', stashed.stdout.trim(), join(consumer.taskDir, 'copy.bin')],
        ['get-upstream', 'train'],
        ['get-file', 'train', 'loss', join(consumer.taskDir, 'x')],
      ],
      consumer.env,
    );
    expect(byKey.code).toBe(0);
    expect(byKey.stdout.trim()).toBe(dest);
    expect((await readFile(dest)).equals(bytes)).toBe(true);
    expect(whole.code).toBe(0);
    expect((await readFile(join(intoDir, 'model.bin'))).equals(bytes)).toBe(true);
    expect(byMarker.code).toBe(0);
    expect((await readFile(join(consumer.taskDir, 'copy.bin'))).equals(bytes)).toBe(true);
    expect(JSON.parse(upstream.stdout)).toEqual({ model: marker, loss: 0.1 });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/keys holding a stashed file: "model"/);
  });

  it('a missing local file is a failure with one line', async () => {
    const { env, taskDir } = await taskEnv('train');
    const result = await runCli(['task', 'stash-file', join(taskDir, 'missing.bin')], { env });
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe("through the worker's task channel (no storage credential in the task)", () => {
  const channels: TaskChannel[] = [];
  const bytes = Buffer.from(Array.from({ length: 40_000 }, (_, i) => (i * 11) % 256));
  let marker: string;
  let bigRef: string;
  const big = { rows: Array.from({ length: 1000 }, (_, i) => ({ i, text: 'c'.repeat(40) })) };

  beforeAll(async () => {
    const stashed = await outputs.putFile(WORKFLOW, 'train', 1, 'model.bin', bytes);
    marker = JSON.stringify({
      __jobq_stash__: { v: 1, state: 'ready', blob_name: stashed.blobName, md5: stashed.md5, size: stashed.size },
    });
    bigRef = (await outputs.putOutput(WORKFLOW, 'chanbig', 1, JSON.stringify(big))).ref!;
  });

  afterAll(async () => {
    await Promise.all(channels.map((channel) => channel.close()));
  });

  /** Task "eval" with parents train (inline, holding the marker) and chanbig (blob), served by a channel; no connection string. */
  async function channelTask(): Promise<TaskEnv> {
    const refs = { train: `{"model":${marker},"loss":0.1}`, chanbig: bigRef };
    const task = await taskEnv('eval', refs);
    const channel = await startTaskChannel({
      dir: task.taskDir,
      workflowId: WORKFLOW,
      taskName: 'eval',
      attemptNo: 1,
      upstreamRefs: refs,
      outputs,
    });
    channels.push(channel);
    delete task.env.JOBQ_STORAGE_CONNECTION_STRING;
    Object.assign(task.env, channel.env);
    return task;
  }

  it('get-upstream, get-upstream-outputs, get-file and stash-file work through the channel', async () => {
    const task = await channelTask();
    const source = join(task.taskDir, 'report.csv');
    await writeFile(source, 'a,b\n1,2\n');
    const dest = join(task.taskDir, 'model.bin');
    const [blob, all, byKey, byMarker, stash] = await runTasks(
      [
        ['get-upstream', 'chanbig'],
        ['get-upstream-outputs'],
        ['get-file', 'train', 'model', dest],
        ['get-file', marker, join(task.taskDir, 'copy.bin')],
        ['stash-file', source],
      ],
      task.env,
    );
    expect(blob.code).toBe(0);
    expect(JSON.parse(blob.stdout)).toEqual(big);
    expect(Object.keys(JSON.parse(all.stdout) as object)).toEqual(['train', 'chanbig']);
    expect(byKey.code).toBe(0);
    expect((await readFile(dest)).equals(bytes)).toBe(true);
    expect(byMarker.code).toBe(0);
    expect((await readFile(join(task.taskDir, 'copy.bin'))).equals(bytes)).toBe(true);
    expect(stash.code).toBe(0);
    const stashed = JSON.parse(stash.stdout) as { __jobq_stash__: { blob_name: string; md5: string; size: number } };
    expect(stashed.__jobq_stash__.blob_name).toBe(`workflow-files/${WORKFLOW}/eval/1/report.csv`);
    const back = await outputs.getFile({
      blobName: stashed.__jobq_stash__.blob_name,
      md5: stashed.__jobq_stash__.md5,
      size: stashed.__jobq_stash__.size,
    });
    expect(Buffer.from(back).toString()).toBe('a,b\n1,2\n');
  });

  it("get-file of a marker in no parent's output is refused by the worker (exit 1, one line); is-cancelled reads no storage", async () => {
    const task = await channelTask();
    const other = await outputs.putFile(WORKFLOW, 'sibling', 1, 'secret.bin', Buffer.from('not yours'));
    const foreign = JSON.stringify({
      __jobq_stash__: { v: 1, state: 'ready', blob_name: other.blobName, md5: other.md5, size: other.size },
    });
    const [refused, cancelled] = await runTasks([['get-file', foreign, join(task.taskDir, 'stolen.bin')], ['is-cancelled']], task.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toEqual([
      `jobq: auth: stashed file "${other.blobName}" is not in the output of a direct parent of task "eval": a task may fetch only files its direct parents' outputs hold`,
    ]);
    // No index read (it would need a credential): the worker's cancel mark is the answer, without a warning.
    expect(cancelled).toEqual({ code: 0, stdout: 'false\n', stderr: '' });
  });
});

describe('is-cancelled', () => {
  let deployment: Deployment;

  beforeAll(async () => {
    const config = resolveConfig(
      { prefix: `devstoreaccount1/${PREFIX}` },
      { JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString },
      dir,
    );
    deployment = await openDeployment(config);
  });

  afterAll(async () => {
    await deployment.completions.close();
  });

  it('reflects a cancel requested through WorkflowClient.cancel; --exit-code answers with the exit code', async () => {
    const workflowId = 'wf-cancel-me';
    await deployment.client.submit(
      { definition: { name: 'c', tasks: [{ name: 'a', kwargs: { cmd: 'sleep 100' } }] } as never },
      { id: workflowId },
    );
    const { env } = await taskEnv('a', {}, { workflowId });

    const [before, beforeCode] = await Promise.all([
      runCli(['task', 'is-cancelled'], { env }),
      runCli(['task', 'is-cancelled', '--exit-code'], { env }),
    ]);
    expect(before.code).toBe(0);
    expect(before.stdout).toBe('false\n');
    expect(beforeCode.code).toBe(1);
    expect(beforeCode.stdout).toBe('');
    expect(beforeCode.stderr).toBe('');

    const requested = await deployment.client.cancel(workflowId);
    expect(requested.requested).toBe(true);

    const [after, afterCode, offline] = await runTasks(
      [['is-cancelled'], ['is-cancelled', '--exit-code'], ['is-cancelled', '--offline']],
      env,
    );
    expect(after.code).toBe(0);
    expect(after.stdout).toBe('true\n');
    expect(afterCode.code).toBe(0);
    expect(afterCode.stdout).toBe('');
    // --offline only looks at the worker's cancel mark, which is not there yet.
    expect(offline.stdout).toBe('false\n');
  });

  it("is true when the worker's cancel mark exists, without reading storage", async () => {
    const { env, taskDir } = await taskEnv(
      'a',
      {},
      {
        workflowId: 'wf-unknown',
        extra: {
          JOBQ_STORAGE_CONNECTION_STRING:
            'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=bm9wZQ==;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;',
        },
      },
    );
    await writeFile(join(taskDir, 'cancelled'), '');
    const result = await runCli(['task', 'is-cancelled'], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('true\n');
  });
});

describe('inside a real workflow task (WorkflowProcessor)', () => {
  let deployment: Deployment;
  const jobq = `"${process.execPath}" "${CLI}"`;

  beforeAll(async () => {
    const config = resolveConfig(
      { prefix: `devstoreaccount1/E2e${process.pid}` },
      { JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString },
      dir,
    );
    deployment = await openDeployment(config);
  });

  afterAll(async () => {
    await deployment.completions.close();
  });

  /** Runs the task messages through a worker with the workflow processor; the completions of `workflowId` by task, and the log. */
  async function runTasksOnWorker(workflowId: string, messages: Parameters<typeof encodeTaskMessage>[0][]) {
    const queue = await deployment.queue(`devstoreaccount1/wf-e2e-${process.pid}`);
    await queue.send(messages.map((message) => ({ body: encodeTaskMessage(message) })));
    const lines: string[] = [];
    const worker = new Worker({
      queue,
      numWorkers: 2,
      idleTimeoutInMs: 500,
      maxIdleBackoffInMs: 200,
      receiveWaitInMs: 200,
      log: (line) => lines.push(line),
      processors: [
        new WorkflowProcessor({
          outputs: deployment.outputs,
          completions: deployment.completions,
          isCancelled: () => Promise.resolve(false),
          env: { ...cleanEnv(), ...deployment.taskEnvironment },
          killTimeoutInMs: 5_000,
        }),
      ],
    });
    const summary = await worker.run();
    expect(summary).toMatchObject({ processed: messages.length });

    const completions: Completion[] = [];
    for (;;) {
      const batch = await deployment.completions.receive({ maxMessages: 32, maxWaitTimeInMs: 500 });
      if (batch.length === 0) break;
      for (const message of batch) {
        const decoded = decodeCoordinatorMessage(message.body);
        if (decoded.kind === 'completion' && decoded.completion.workflowId === workflowId) completions.push(decoded.completion);
        await deployment.completions.complete(message);
      }
    }
    return { byTask: Object.fromEntries(completions.map((c) => [c.taskName, c])), lines };
  }

  it('the helpers read the environment the worker gives a task: outputs reach the completion, upstream outputs the child', async () => {
    const workflowId = 'wf-e2e';
    const { byTask, lines } = await runTasksOnWorker(workflowId, [
      {
        workflowId,
        taskName: 'producer',
        attemptNo: 1,
        kwargs: { cmd: `${jobq} task set-output --json '{"n":41}' && ${jobq} task is-cancelled` },
      },
      {
        workflowId,
        taskName: 'consumer',
        attemptNo: 1,
        kwargs: { cmd: `${jobq} task get-upstream-outputs | ${jobq} task set-output --stdin --json` },
        upstream: { i: { producer: '{"n":41}' }, n: ['skipped'] },
      },
    ]);
    expect(byTask.producer).toMatchObject({ success: true, error: null });
    expect(JSON.parse(byTask.producer!.outputRef!)).toEqual({ n: 41 });
    expect(byTask.consumer).toMatchObject({ success: true, error: null });
    expect(JSON.parse(byTask.consumer!.outputRef!)).toEqual({ producer: { n: 41 }, skipped: null });
    expect(lines.some((line) => /\bfalse$/.test(line))).toBe(true);
  });

  it("stash-file, get-upstream and get-file work through the worker's channel; the task finds no credential to open the store with", async () => {
    const workflowId = 'wf-e2e-channel';
    // A workflow of this deployment that a task must not be able to list.
    await deployment.client.submit(
      { definition: { name: 'visible', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] } as never },
      { id: 'wf-not-yours' },
    );
    const producerCmd = [
      'd=$(dirname "$JOBQ_OUTPUT_FILE")',
      'seq 1 20000 > "$d/model.txt"',
      `m=$(${jobq} task stash-file "$d/model.txt") || exit 11`,
      `${jobq} task set-output --json "{\\"model\\": $m, \\"padding\\": \\"$(head -c 40000 /dev/zero | tr '\\0' p)\\"}"`,
    ].join('; ');
    const { byTask: produced } = await runTasksOnWorker(workflowId, [
      { workflowId, taskName: 'producer', attemptNo: 1, kwargs: { cmd: producerCmd } },
    ]);
    expect(produced.producer).toMatchObject({ success: true, error: null });
    const producerRef = produced.producer!.outputRef!;
    expect(producerRef).toMatch(/^blob:/);

    const consumerCmd = [
      'd=$(dirname "$JOBQ_OUTPUT_FILE")',
      `${jobq} task get-file producer model "$d/model.txt" > /dev/null || exit 12`,
      `${jobq} task get-upstream producer > "$d/upstream.json" || exit 13`,
      `${jobq} workflow list --json > "$d/list.out" 2> "$d/list.err"; echo $? > "$d/list.code"`,
      `${jobq} config show --json > "$d/config.json" || exit 14`,
      `node -e '${CONSUMER_REPORT}' "$d" > "$JOBQ_OUTPUT_FILE"`,
    ].join('; ');
    const { byTask } = await runTasksOnWorker(workflowId, [
      { workflowId, taskName: 'consumer', attemptNo: 1, kwargs: { cmd: consumerCmd }, upstream: { i: { producer: producerRef } } },
    ]);
    expect(byTask.consumer).toMatchObject({ success: true, error: null });
    const report = (await deployment.outputs.getOutput(byTask.consumer!.outputRef)) as ConsumerReport;
    const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
    expect(report.model).toBe(expected);
    expect(report.paddingLength).toBe(40000);
    expect(report.credentialVariables).toEqual([]);
    expect(report.connectionString).toBeNull();
    // Opening the store from the task's environment reaches nothing of this deployment.
    expect(report.list.out).not.toContain('wf-not-yours');
    expect(report.list.out).not.toContain(workflowId);
  });
});

/** What the consumer task reports (see CONSUMER_REPORT). */
interface ConsumerReport {
  model: string;
  paddingLength: number;
  credentialVariables: string[];
  connectionString: string | null;
  list: { code: string; out: string; err: string };
}

/** Node script run by the consumer task: gathers what it fetched and what it could find, as JSON on stdout. */
const CONSUMER_REPORT = [
  'const fs = require("fs"); const d = process.argv[1]; const read = (f) => fs.readFileSync(d + "/" + f, "utf8");',
  'const credentialVariables = Object.entries(process.env).filter(([k, v]) => /CONNECTION_STRING|ACCOUNT_KEY|_KEY$|SAS|^AZURE_|^IDENTITY_|^MSI_/.test(k) || /AccountKey=|SharedAccessSignature=/i.test(v)).map(([k]) => k);',
  'const config = JSON.parse(read("config.json"));',
  'process.stdout.write(JSON.stringify({ model: read("model.txt"), paddingLength: JSON.parse(read("upstream.json")).padding.length, credentialVariables,',
  '  connectionString: config.settings.connection_string.value, list: { code: read("list.code").trim(), out: read("list.out"), err: read("list.err") } }));',
].join(' ');
