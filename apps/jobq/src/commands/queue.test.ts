import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { openStorageQueue, type StorageTaskQueue } from '@jobq/queue-storage';
import { ShellProcessor, Worker } from '@jobq/worker';
import { cleanEnv, runCli } from '../test-helpers/cli';

let azurite: LocalStorage;
let env: NodeJS.ProcessEnv;
let dir: string;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  env = cleanEnv({ JOBQ_STORAGE_CONNECTION_STRING: azurite.connectionString });
  dir = await mkdtemp(join(tmpdir(), 'jobq-cli-queue-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await azurite.stop();
});

/** A fresh queue name on Azurite, as `devstoreaccount1/NAME`. */
function freshQueue(): { spec: string; name: string } {
  counter++;
  const name = `plain-${process.pid}-${counter}`;
  return { spec: `devstoreaccount1/${name}`, name };
}

function openQueue(name: string): Promise<StorageTaskQueue> {
  return openStorageQueue({ connection: { connectionString: azurite.connectionString }, queueName: name });
}

interface MessageDoc {
  id: string;
  kwargs: Record<string, unknown>;
  num_retries: number;
  message_id: string;
  delivery_count: number;
  locked_until?: string;
}

describe('push, size, peek, pull', () => {
  it('push 3 → size 3 → peek shows them → pull --complete removes one', async () => {
    const { spec } = freshQueue();
    const push = await runCli([spec, 'push', '-c', 'echo one', '-c', 'echo two', '-c', 'echo three'], { env });
    expect(push.code).toBe(0);
    const ids = push.stdout.trim().split('\n');
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);

    const [size, peek, peekJson] = await Promise.all([
      runCli([spec, 'size'], { env }),
      runCli([spec, 'peek'], { env }),
      runCli([spec, 'peek', '--json', '-n', '2'], { env }),
    ]);
    expect(size.code).toBe(0);
    expect(size.stdout).toBe('3\n');
    expect(peek.stdout.trim().split('\n')).toEqual([`${ids[0]}  echo one`, `${ids[1]}  echo two`, `${ids[2]}  echo three`]);
    const peeked = JSON.parse(peekJson.stdout) as MessageDoc[];
    expect(peeked.map((m) => [m.id, m.kwargs])).toEqual([
      [ids[0], { cmd: 'echo one' }],
      [ids[1], { cmd: 'echo two' }],
    ]);

    const pull = await runCli([spec, 'pull', '--complete'], { env });
    expect(pull.code).toBe(0);
    const pulled = JSON.parse(pull.stdout) as MessageDoc;
    expect(pulled).toMatchObject({ id: ids[0], kwargs: { cmd: 'echo one' }, num_retries: 0, delivery_count: 1 });
    expect(pulled.locked_until).toBeUndefined();

    const [after, sizeJson] = await Promise.all([
      runCli([spec, 'peek', '--json'], { env }),
      runCli(['size', '--queue', spec, '--json'], { env }),
    ]);
    expect((JSON.parse(after.stdout) as MessageDoc[]).map((m) => m.id)).toEqual([ids[1], ids[2]]);
    expect(JSON.parse(sizeJson.stdout)).toEqual({ queue: spec, approximate_count: 2 });
  });

  it('pull without --complete hides the message for its lock, after which it is visible again', async () => {
    const { spec } = freshQueue();
    const push = await runCli([spec, 'push', '-c', 'true'], { env });
    const [id] = push.stdout.trim().split('\n');
    // A lock of 8 s: the next command (a CLI start, about 1 s) must run while it is held, on a loaded CI machine too.
    const pull = await runCli([spec, 'pull', '--visibility-timeout', '8s'], { env });
    expect(pull.code).toBe(0);
    const pulled = JSON.parse(pull.stdout) as MessageDoc;
    expect(pulled.id).toBe(id);
    expect(typeof pulled.locked_until).toBe('string');
    expect(pull.stderr).toMatch(/becomes visible again/);

    const hidden = await runCli([spec, 'peek', '--json'], { env });
    expect(JSON.parse(hidden.stdout)).toEqual([]);

    // The lock ends on its own: the message comes back, with its delivery counted.
    const queue = await openQueue(spec.split('/')[1]!);
    let visible: Awaited<ReturnType<StorageTaskQueue['peek']>> = [];
    for (let i = 0; i < 150 && visible.length === 0; i++) {
      visible = await queue.peek(1);
      if (visible.length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(visible).toHaveLength(1);
    expect(visible[0]!.deliveryCount).toBe(1);
    const again = await runCli([spec, 'pull', '--complete'], { env });
    expect((JSON.parse(again.stdout) as MessageDoc).delivery_count).toBe(2);
  });

  it('pushes lines of stdin and JSON kwargs per line, as ai4s-jobq envelopes with --num-retries', async () => {
    const { spec, name } = freshQueue();
    const lines = await runCli([spec, 'push', '--num-retries', '2', '--env', 'A=1'], { env, input: 'echo a\n\n# a comment\necho b\n' });
    expect(lines.code).toBe(0);
    const json = await runCli([spec, 'push', '--json-lines', '--json'], { env, input: '{"cmd":"make","cwd":"/tmp","env":{"J":"4"}}\n' });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { queue: string; pushed: number; ids: string[] };
    expect(doc).toMatchObject({ queue: spec, pushed: 1 });

    const queue = await openQueue(name);
    const bodies = (await queue.peek(10)).map((m) => m.body);
    expect(bodies).toHaveLength(3);
    const envelopes = bodies.map((body) => JSON.parse(body) as Record<string, unknown>);
    for (const envelope of envelopes) expect(Object.keys(envelope)).toEqual(['version', 'reply_requested', 'kwargs', 'num_retries', 'id']);
    expect(
      envelopes.map((e): unknown[] => [e.version, e.reply_requested, JSON.parse(e.kwargs as string) as unknown, e.num_retries]),
    ).toEqual([
      [1, false, { cmd: 'echo a', env: { A: '1' } }, 2],
      [1, false, { cmd: 'echo b', env: { A: '1' } }, 2],
      [1, false, { cmd: 'make', cwd: '/tmp', env: { J: '4' } }, 0],
    ]);
    expect(envelopes[2]!.id).toBe(doc.ids[0]);
  });

  it('usage errors exit 2 with one line; an empty queue and a missing queue exit 1', async () => {
    const { spec } = freshQueue();
    await runCli([spec, 'push', '-c', 'true'], { env });
    const { spec: missing } = freshQueue();
    const { spec: emptySpec, name: emptyName } = freshQueue();
    await openQueue(emptyName);
    const [noQueue, badJson, nothing, empty, absent] = await Promise.all([
      runCli(['push', '-c', 'true'], { env }),
      runCli([spec, 'push', '--json-lines'], { env, input: '{"cmd":\n' }),
      runCli([spec, 'push'], { env, input: '\n\n' }),
      runCli([emptySpec, 'pull', '--json'], { env }),
      runCli([missing, 'peek'], { env }),
    ]);
    for (const result of [noQueue, badJson, nothing]) {
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(badJson.stderr).toMatch(/stdin line 1: not valid JSON/);
    expect(empty.code).toBe(1);
    expect(empty.stdout).toBe('null\n');
    expect(empty.stderr).toMatch(/no message in /);
    expect(absent.code).toBe(1);
    expect(absent.stderr.trim().split('\n')).toHaveLength(1);
    expect(absent.stderr).toMatch(/does not exist/);
  });
});

describe('a pushed command runs under jobq worker', () => {
  it('a real Worker with the shell processor runs it and the queue empties', async () => {
    const { spec, name } = freshQueue();
    const marker = join(dir, 'ran.txt');
    const push = await runCli([spec, 'push', '-c', `echo "hello from jobq" > '${marker}'`], { env });
    expect(push.code).toBe(0);

    const queue = await openQueue(name);
    const lines: string[] = [];
    const worker = new Worker({
      queue,
      numWorkers: 1,
      idleTimeoutInMs: 500,
      maxIdleBackoffInMs: 200,
      receiveWaitInMs: 200,
      log: (line) => lines.push(line),
      processors: [new ShellProcessor({ killTimeoutInMs: 5_000, baseEnv: cleanEnv() })],
    });
    const summary = await worker.run();
    expect(summary).toMatchObject({ processed: 1, succeeded: 1, failed: 0, deadLettered: 0 });
    expect(await readFile(marker, 'utf8')).toBe('hello from jobq\n');
    expect(await queue.approximateMessageCount()).toBe(0);
  });
});
