import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJobqError } from '@jobq/ports';
import {
  configureTaskHelpers,
  getFile,
  getRealUpstreamTasks,
  getUpstreamOutput,
  getUpstreamOutputs,
  isCancelled,
  setOutput,
  stashFile,
} from './index';

let dir: string;
let counter = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-task-helpers-'));
});

afterAll(async () => {
  configureTaskHelpers();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  configureTaskHelpers();
});

interface TaskSetup {
  refs?: Record<string, string | null>;
  realUpstream?: string[];
  extra?: NodeJS.ProcessEnv;
}

/** A task environment in a fresh directory: an empty output file and the refs files. */
async function taskEnv(setup: TaskSetup = {}): Promise<{ env: NodeJS.ProcessEnv; outputFile: string; taskDir: string }> {
  counter++;
  const taskDir = join(dir, `t${counter}`);
  await mkdir(taskDir, { recursive: true });
  const outputFile = join(taskDir, 'output.json');
  await writeFile(outputFile, '');
  const refsFile = join(taskDir, 'refs.json');
  await writeFile(refsFile, JSON.stringify(setup.refs ?? {}));
  const env: NodeJS.ProcessEnv = {
    JOBQ_WORKFLOW_ID: 'wf1',
    JOBQ_WORKFLOW_TASK: 'child',
    JOBQ_WORKFLOW_ATTEMPT: '1',
    JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/Tasks',
    JOBQ_OUTPUT_FILE: outputFile,
    JOBQ_WORKFLOW_UPSTREAM_REFS: refsFile,
    ...setup.extra,
  };
  if (setup.realUpstream) {
    const realFile = join(taskDir, 'real.json');
    await writeFile(realFile, JSON.stringify(setup.realUpstream));
    env.JOBQ_WORKFLOW_REAL_UPSTREAM = realFile;
  }
  configureTaskHelpers({ env });
  return { env, outputFile, taskDir };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('outside a workflow task', () => {
  const calls: Array<[string, string, () => Promise<unknown>]> = [
    ['setOutput', 'JOBQ_OUTPUT_FILE', () => setOutput({ a: 1 })],
    ['getUpstreamOutput', 'JOBQ_WORKFLOW_ID', () => getUpstreamOutput('a')],
    ['getUpstreamOutputs', 'JOBQ_WORKFLOW_ID', () => getUpstreamOutputs()],
    ['getRealUpstreamTasks', 'JOBQ_WORKFLOW_ID', () => getRealUpstreamTasks()],
    ['isCancelled', 'JOBQ_WORKFLOW_ID', () => isCancelled()],
    ['stashFile', 'JOBQ_WORKFLOW_ID', () => stashFile(join(dir, 'nothing'))],
    ['getFile', 'JOBQ_WORKFLOW_ID', () => getFile('a', 'k')],
  ];

  it.each(calls)('%s() throws a clear invalid-config error', async (helper, variable, call) => {
    configureTaskHelpers({ env: {} });
    const error = await rejection(call());
    expect(isJobqError(error, 'invalid-config')).toBe(true);
    expect((error as Error).message).toBe(`${helper}() can only be called inside a jobq workflow task (${variable} is not set)`);
  });

  it('an empty variable counts as unset', async () => {
    configureTaskHelpers({ env: { JOBQ_OUTPUT_FILE: '  ' } });
    expect(((await rejection(setOutput(1))) as Error).message).toMatch(/JOBQ_OUTPUT_FILE is not set/);
  });
});

describe('setOutput', () => {
  it('writes the value as JSON, replacing any earlier output, and leaves no temporary file', async () => {
    const { outputFile, taskDir } = await taskEnv();
    await setOutput({ loss: 0.5, tags: ['a', 'b'], skip: undefined, nested: { ok: true } });
    expect(JSON.parse(await readFile(outputFile, 'utf8'))).toEqual({ loss: 0.5, tags: ['a', 'b'], nested: { ok: true } });
    await setOutput('second');
    expect(await readFile(outputFile, 'utf8')).toBe('"second"');
    await setOutput(null);
    expect(await readFile(outputFile, 'utf8')).toBe('null');
    expect((await readdir(taskDir)).sort()).toEqual(['output.json', 'refs.json']);
  });

  it('is atomic: concurrent writes leave one complete output', async () => {
    const { outputFile, taskDir } = await taskEnv();
    const big = (n: number) => ({ n, data: 'x'.repeat(200_000) });
    await Promise.all([1, 2, 3, 4, 5].map((n) => setOutput(big(n))));
    const parsed = JSON.parse(await readFile(outputFile, 'utf8')) as { n: number; data: string };
    expect(parsed.data).toHaveLength(200_000);
    expect([1, 2, 3, 4, 5]).toContain(parsed.n);
    expect((await readdir(taskDir)).sort()).toEqual(['output.json', 'refs.json']);
  });

  it.each([
    ['undefined', undefined, /got undefined/],
    ['a function', () => 1, /got function/],
    ['a symbol', Symbol('s'), /got symbol/],
    ['a nested function', { a: { b: () => 1 } }, /the output at \/a\/b is a function/],
    ['a BigInt', { n: BigInt(1) }, /cannot serialise the output to JSON/],
  ])('rejects %s with invalid-argument and writes nothing', async (_what, value, message) => {
    const { outputFile } = await taskEnv();
    const error = await rejection(setOutput(value));
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toMatch(message);
    expect(await readFile(outputFile, 'utf8')).toBe('');
  });

  it('rejects a cycle with a clear message', async () => {
    const { outputFile } = await taskEnv();
    const value: Record<string, unknown> = { a: 1 };
    value.self = value;
    const error = await rejection(setOutput(value));
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toMatch(/has a cycle/);
    expect(await readFile(outputFile, 'utf8')).toBe('');
  });

  it('fails clearly when the output directory does not exist', async () => {
    await taskEnv({ extra: { JOBQ_OUTPUT_FILE: join(dir, 'missing-dir', 'out.json') } });
    const error = await rejection(setOutput(1));
    expect(isJobqError(error, 'internal')).toBe(true);
    expect((error as Error).message).toMatch(/could not write/);
  });
});

describe('upstream outputs (inline)', () => {
  const refs = { prep: '{"rows":3,"file":"a.csv"}', quiet: null, skipped: null, num: '42' };

  it('getUpstreamOutput decodes inline outputs and returns null for no output or skipped', async () => {
    await taskEnv({ refs, realUpstream: ['prep', 'quiet', 'skipped', 'num', 'failed'] });
    expect(await getUpstreamOutput('prep')).toEqual({ rows: 3, file: 'a.csv' });
    expect(await getUpstreamOutput('num')).toBe(42);
    expect(await getUpstreamOutput('quiet')).toBeNull();
    expect(await getUpstreamOutput('skipped')).toBeNull();
  });

  it('inline outputs need no store (nothing is configured for storage)', async () => {
    await taskEnv({ refs, extra: { JOBQ_WORKFLOW_PREFIX: '' } });
    expect(await getUpstreamOutput('prep')).toEqual({ rows: 3, file: 'a.csv' });
  });

  it('a name that is not upstream is invalid-argument, listing the upstream tasks', async () => {
    await taskEnv({ refs, realUpstream: ['prep', 'quiet', 'skipped', 'num', 'failed'] });
    const error = await rejection(getUpstreamOutput('other'));
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toBe(
      'getUpstreamOutput(): "other" is not an upstream task of "child"; its upstream tasks: "prep", "quiet", "skipped", "num", "failed"',
    );
    expect(isJobqError(await rejection(getUpstreamOutput('')), 'invalid-argument')).toBe(true);
  });

  it('an upstream task that did not complete is not-found', async () => {
    await taskEnv({ refs, realUpstream: ['prep', 'quiet', 'skipped', 'num', 'failed'] });
    const error = await rejection(getUpstreamOutput('failed'));
    expect(isJobqError(error, 'not-found')).toBe(true);
    expect((error as Error).message).toMatch(/upstream task "failed" of "child" did not complete/);
  });

  it('without JOBQ_WORKFLOW_REAL_UPSTREAM, a name outside the refs is "not a completed upstream task"', async () => {
    await taskEnv({ refs });
    const error = await rejection(getUpstreamOutput('failed'));
    expect(isJobqError(error, 'invalid-argument')).toBe(true);
    expect((error as Error).message).toMatch(/its upstream tasks that completed or were skipped: "prep", "quiet", "skipped", "num"/);
  });

  it('a merge node name gets a hint that merges are transparent', async () => {
    await taskEnv({ refs, realUpstream: ['prep'] });
    expect(((await rejection(getUpstreamOutput('__merge_child_0'))) as Error).message).toMatch(/merge nodes are transparent/);
  });

  it('getUpstreamOutputs returns every completed or skipped parent', async () => {
    await taskEnv({ refs, realUpstream: ['prep', 'quiet', 'skipped', 'num', 'failed'] });
    expect(await getUpstreamOutputs()).toEqual({ prep: { rows: 3, file: 'a.csv' }, quiet: null, skipped: null, num: 42 });
  });

  it('a task without parents sees none', async () => {
    await taskEnv({ refs: {} });
    expect(await getUpstreamOutputs()).toEqual({});
    expect(await getRealUpstreamTasks()).toEqual([]);
  });

  it('getRealUpstreamTasks keeps the order of JOBQ_WORKFLOW_REAL_UPSTREAM, else of the refs file', async () => {
    await taskEnv({ refs, realUpstream: ['zeta', 'prep', 'alpha', 'quiet', 'skipped', 'num'] });
    expect(await getRealUpstreamTasks()).toEqual(['zeta', 'prep', 'alpha', 'quiet', 'skipped', 'num']);
    await taskEnv({ refs });
    expect(await getRealUpstreamTasks()).toEqual(['prep', 'quiet', 'skipped', 'num']);
  });

  it('a malformed refs file is corrupt', async () => {
    const { env } = await taskEnv();
    await writeFile(env.JOBQ_WORKFLOW_UPSTREAM_REFS!, '{"a": 1}');
    expect(isJobqError(await rejection(getUpstreamOutputs()), 'corrupt')).toBe(true);
    await writeFile(env.JOBQ_WORKFLOW_UPSTREAM_REFS!, 'not json');
    expect(isJobqError(await rejection(getUpstreamOutput('a')), 'corrupt')).toBe(true);
  });

  it('getFile names the keys that hold stashed files when there is none at the key', async () => {
    await taskEnv({ refs });
    const error = await rejection(getFile('prep', 'model'));
    expect(isJobqError(error, 'not-found')).toBe(true);
    expect((error as Error).message).toBe(
      'getFile(): upstream task "prep" has no stashed file under key "model"; keys holding a stashed file: none',
    );
  });
});

describe('isCancelled', () => {
  it('is false without a cancel file or checker, with no store involved', async () => {
    await taskEnv();
    await expect(isCancelled()).resolves.toBe(false);
  });

  it('follows JOBQ_WORKFLOW_CANCEL_FILE: true once the worker creates the file', async () => {
    const cancelFile = join(dir, `cancel-${counter + 1}`);
    await taskEnv({ extra: { JOBQ_WORKFLOW_CANCEL_FILE: cancelFile } });
    await expect(isCancelled()).resolves.toBe(false);
    await writeFile(cancelFile, '');
    await expect(isCancelled()).resolves.toBe(true);
  });

  it('uses the injected checker, given the workflow id', async () => {
    const { env } = await taskEnv();
    const asked: string[] = [];
    configureTaskHelpers({
      env,
      isCancelled: (workflowId) => {
        asked.push(workflowId);
        return Promise.resolve(true);
      },
    });
    await expect(isCancelled()).resolves.toBe(true);
    expect(asked).toEqual(['wf1']);
  });
});
