import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseWorkflow } from '@jobq/dag-core';
import { decodeEnvelope, encodeTaskMessage, type TaskMessageInput } from '@jobq/dag-core/wire';
import type { ReceivedMessage } from '@jobq/ports';
import type { TaskContext } from './processor';
import { ShellProcessor } from './shell-processor';
import { memoryWorkflowProcessor } from './test-helpers/memory-workflow';
import { task } from './test-helpers/worker-helpers';
import { workflowContext } from './test-helpers/workflow-fixtures';

const SECRET = 's3cr3t-Value/42';

/** A worker environment with every kind of credential a task must not inherit. */
const WORKER_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Secrets',
  JOBQ_STORAGE_CONNECTION_STRING:
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5a2V5;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1',
  AZURE_STORAGE_CONNECTION_STRING: 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5',
  AZURE_CLIENT_ID: 'worker-client-id',
  AZURE_CLIENT_SECRET: 'worker-client-secret',
  AZURE_TENANT_ID: 'worker-tenant',
  IDENTITY_ENDPOINT: 'http://localhost:42356/msi/token',
  MSI_SECRET: 'msi-secret',
  JOBQ_SECRET_TOKEN: SECRET,
  JOBQ_SECRET_OTHER: 'other-secret-value',
  WORKER_SETTING: 'kept',
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-secrets-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function workflow() {
  return memoryWorkflowProcessor({ env: WORKER_ENV, tempDir: dir });
}

function shellContext(kwargs: Record<string, unknown>): TaskContext & { lines: string[] } {
  const body = task('plain-1', kwargs).body;
  const decoded = decodeEnvelope(body);
  if (!decoded.ok) throw new Error(decoded.error);
  const message: ReceivedMessage = {
    messageId: 'm1',
    body,
    deliveryCount: 1,
    enqueuedAt: null,
    lockedUntil: new Date(Date.now() + 60_000),
  };
  const lines: string[] = [];
  return { message, envelope: decoded.value, signal: new AbortController().signal, log: (line) => lines.push(line), lines };
}

/** `env` as the task saw it, from a dump file. */
async function dumpedEnv(path: string): Promise<Record<string, string>> {
  const text = await readFile(path, 'utf8');
  return Object.fromEntries(
    text
      .split('\0')
      .filter((entry) => entry !== '')
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

describe('secrets in kwargs.env', () => {
  it('a workflow task gets the secret; its log lines and the error show *** instead; the message keeps the reference', async () => {
    const { completions, processor } = workflow();
    const input: TaskMessageInput = {
      workflowId: 'wf-secret',
      taskName: 'echo',
      attemptNo: 1,
      kwargs: {
        cmd: 'echo "token=$TOKEN"; echo "url=$URL" >&2; printf \'%s\' "$TOKEN" > "$JOBQ_OUTPUT_FILE"',
        env: { TOKEN: '${{ secrets.TOKEN }}', URL: 'https://user:${{secrets.TOKEN}}@example.com' },
      },
    };
    const context = workflowContext(input);
    expect(await processor.process(context)).toEqual({ kind: 'done', failed: true });
    expect(context.lines).toEqual(expect.arrayContaining(['token=***', 'url=https://user:***@example.com']));
    const [completion] = completions.sent;
    expect(completion).toMatchObject({ success: false, error: expect.stringMatching(/^the output file is not JSON: found "\*\*\*";/) });
    const everything = [...context.lines, ...completions.sent.map((c) => JSON.stringify(c))].join('\n');
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain(JSON.stringify(SECRET).slice(1, -1));
    // Never stored resolved: the message (and so the runtime it came from) keeps the reference.
    expect(context.message.body).toBe(encodeTaskMessage(input));
    expect(context.envelope.kwargs.env).toEqual({ TOKEN: '${{ secrets.TOKEN }}', URL: 'https://user:${{secrets.TOKEN}}@example.com' });
  });

  it('a missing secret fails the attempt with the variable to set', async () => {
    const { completions, processor } = workflow();
    const marker = join(dir, 'missing-ran');
    const context = workflowContext({
      workflowId: 'wf-secret',
      taskName: 'db',
      attemptNo: 1,
      kwargs: { cmd: `touch '${marker}'`, env: { DB_PASSWORD: '${{ secrets.DB }}' } },
    });
    expect(await processor.process(context)).toEqual({ kind: 'done', failed: true });
    expect(completions.sent).toEqual([
      expect.objectContaining({
        success: false,
        error:
          'kwargs.env.DB_PASSWORD uses the secret "DB", but this worker has no JOBQ_SECRET_DB: set JOBQ_SECRET_DB in the worker\'s environment',
      }),
    ]);
  });

  it('a matrix task of a workflow with parameters gets its values and the secret; the secret alone is masked, and never stored', async () => {
    const yaml = [
      'name: sweep',
      'params: {data: "s3://bucket/set", epochs: 3}',
      'tasks:',
      '  - name: train',
      '    matrix: {lr: [0.1, 0.01]}',
      '    kwargs:',
      '      cmd: echo "lr=${{ matrix.lr }} epochs=${{ params.epochs }} data=$JOBQ_PARAM_DATA lr=$JOBQ_MATRIX_LR token=$TOKEN"',
      '      env: {TOKEN: "${{ secrets.TOKEN }}"}',
      '',
    ].join('\n');
    const parsed = parseWorkflow(yaml, { filename: 'sweep.yaml', params: { text: { epochs: '5' } } });
    if (!parsed.ok) throw new Error(parsed.issues[0]?.message);
    const train = parsed.value.tasks[1]!;
    expect(train.name).toBe('train(lr=0.01)');
    // The resolved definition (what is stored) has the values and the secret's reference, not the secret.
    expect(JSON.stringify(parsed.value)).not.toContain(SECRET);
    expect(train.kwargs.env).toMatchObject({ TOKEN: '${{ secrets.TOKEN }}', JOBQ_PARAM_EPOCHS: '5', JOBQ_MATRIX_LR: '0.01' });
    const { completions, processor } = workflow();
    const context = workflowContext({ workflowId: 'wf-sweep', taskName: train.name, attemptNo: 1, kwargs: train.kwargs });
    expect(await processor.process(context)).toEqual({ kind: 'done' });
    expect(completions.sent).toEqual([expect.objectContaining({ success: true })]);
    expect(context.lines[0]).toBe('lr=0.01 epochs=5 data=s3://bucket/set lr=0.01 token=***');
    expect(context.lines.join('\n')).not.toContain(SECRET);
    expect(context.envelope.kwargs.env).toMatchObject({ TOKEN: '${{ secrets.TOKEN }}' });
  });

  it('a plain shell task gets secrets too, masked in its log lines', async () => {
    const processor = new ShellProcessor({ killTimeoutInMs: 1_000, baseEnv: WORKER_ENV });
    const context = shellContext({ cmd: 'echo "the token is $TOKEN"; exit 3', env: { TOKEN: '${{ secrets.TOKEN }}' } });
    expect(await processor.process(context)).toEqual({ kind: 'failed', error: 'exit code 3' });
    expect(context.lines).toEqual(['the token is ***']);
  });
});

describe('no credentials in the task environment', () => {
  const hidden = [
    'JOBQ_STORAGE_CONNECTION_STRING',
    'AZURE_STORAGE_CONNECTION_STRING',
    'AZURE_CLIENT_SECRET',
    'AZURE_TENANT_ID',
    'IDENTITY_ENDPOINT',
    'MSI_SECRET',
    'JOBQ_SECRET_TOKEN',
    'JOBQ_SECRET_OTHER',
  ];

  it('a workflow task sees none, except what kwargs.env names', async () => {
    const dump = join(dir, 'wf-env');
    const { completions, processor } = workflow();
    const context = workflowContext({
      workflowId: 'wf-env',
      taskName: 'env',
      attemptNo: 1,
      kwargs: { cmd: `env -0 > '${dump}'`, env: { AZURE_CLIENT_ID: 'task-client-id' } },
    });
    expect(await processor.process(context)).toEqual({ kind: 'done' });
    expect(completions.sent).toEqual([expect.objectContaining({ success: true })]);
    const env = await dumpedEnv(dump);
    for (const name of hidden) expect(env[name]).toBeUndefined();
    expect(env).toMatchObject({
      AZURE_CLIENT_ID: 'task-client-id',
      WORKER_SETTING: 'kept',
      JOBQ_WORKFLOW_ID: 'wf-env',
      JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Secrets',
    });
    expect(Object.keys(env).filter((name) => name.startsWith('JOBQ_SECRET_') || name.startsWith('MSI_'))).toEqual([]);
  });

  it('a plain shell task sees none either', async () => {
    const dump = join(dir, 'plain-env');
    const processor = new ShellProcessor({ killTimeoutInMs: 1_000, baseEnv: WORKER_ENV });
    expect(await processor.process(shellContext({ cmd: `env -0 > '${dump}'` }))).toEqual({ kind: 'done' });
    const env = await dumpedEnv(dump);
    for (const name of [...hidden, 'AZURE_CLIENT_ID']) expect(env[name]).toBeUndefined();
    expect(env.WORKER_SETTING).toBe('kept');
  });
});
