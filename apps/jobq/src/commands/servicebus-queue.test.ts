// The plain-queue commands and the worker on Service Bus queues (`sb://local/NAME`), as real
// processes against one in-process broker.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startServiceBus, type ServiceBusEmulator } from '@jobq/local';
import type { Instruments } from '@jobq/ports';
import { configFromFlags } from '../flags';
import { openPlainQueue } from '../plain-queue';
import { cleanEnv, runCli } from '../test-helpers/cli';

let sb: ServiceBusEmulator;
let env: NodeJS.ProcessEnv;
let counter = 0;

beforeAll(async () => {
  sb = await startServiceBus();
  env = cleanEnv({ JOBQ_SERVICEBUS_CONNECTION_STRING: sb.connectionString, JOBQ_SERVICEBUS_ADMIN_ENDPOINT: sb.adminEndpoint! });
});
afterAll(() => sb.stop());

function freshQueue(): string {
  counter++;
  return `sb://local/plain-${counter}`;
}

describe('push, size, peek, pull and worker on sb://', () => {
  it('runs pushed tasks; a failing one goes to the dead-letter queue, which size counts beside the queue', async () => {
    const spec = freshQueue();
    const push = await runCli([spec, 'push', '-c', 'echo fine', '-c', 'echo broken >&2; exit 3', '-c', 'echo later'], { env });
    expect(push.code).toBe(0);
    expect(push.stdout.trim().split('\n')).toHaveLength(3);
    const [peek, sizeBefore] = await Promise.all([runCli([spec, 'peek', '-n', '2'], { env }), runCli([spec, 'size'], { env })]);
    expect(
      peek.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('  ')[1]),
    ).toEqual(['echo fine', 'echo broken >&2; exit 3']);
    expect(sizeBefore).toMatchObject({ code: 0, stdout: '3 (dead-letter 0)\n' });

    const pulled = await runCli([spec, 'pull', '--complete'], { env });
    expect(pulled.code).toBe(0);
    expect((JSON.parse(pulled.stdout) as { kwargs: { cmd: string } }).kwargs.cmd).toBe('echo fine');

    const worker = await runCli([spec, 'worker', '--idle-timeout', '1s', '--visibility-timeout', '10s'], { env });
    expect(worker.code).toBe(0);
    expect(worker.stderr).toContain('2 processed, 1 succeeded, 1 failed, 1 dead-lettered');

    const [size, sizeText, sizeFailed, failed, blind] = await Promise.all([
      runCli([spec, 'size', '--json'], { env }),
      runCli([spec, 'size'], { env }),
      runCli([spec, 'size', '--failed'], { env }),
      runCli([spec, 'peek', '--failed', '--json'], { env }),
      // Without the admin endpoint the counts come from peeking, and size says so.
      runCli([spec, 'size', '--json'], { env: { ...env, JOBQ_SERVICEBUS_ADMIN_ENDPOINT: '' } }),
    ]);
    expect(JSON.parse(size.stdout)).toEqual({ queue: spec, approximate_count: 0, dead_letter_count: 1, counted_by: 'administration' });
    expect(sizeText).toMatchObject({ stdout: '0 (dead-letter 1)\n' });
    expect(sizeFailed).toMatchObject({ stdout: '1\n' });
    const [dead] = JSON.parse(failed.stdout) as Array<{ kwargs: { cmd: string } }>;
    expect(dead?.kwargs.cmd).toBe('echo broken >&2; exit 3');
    expect(JSON.parse(blind.stdout)).toMatchObject({ approximate_count: 0, dead_letter_count: 1, counted_by: 'peek' });
    expect(blind.stderr).toContain('counted by peeking');
  });

  it('refuses a lock duration Service Bus does not take, an illegal sb:// spec and sb://local without a broker: exit 2, one line', async () => {
    const cases: Array<{ args: string[]; env: NodeJS.ProcessEnv; says: RegExp }> = [
      {
        args: [freshQueue(), 'worker', '--visibility-timeout', '2s'],
        env,
        says: /--visibility-timeout must be between 5 s and 5 min for a Service Bus queue/,
      },
      { args: [freshQueue(), 'pull', '--visibility-timeout', '10m'], env, says: /--visibility-timeout must be between 5 s and 5 min/ },
      { args: ['sb://ab/gpu', 'size'], env, says: /"ab" is not a Service Bus namespace name/ },
      { args: ['worker', '--queue', 'sb://my-namespace'], env, says: /needs a queue name: sb:\/\/NAMESPACE\/NAME/ },
      {
        args: ['sb://local/gpu', 'worker'],
        env: cleanEnv(),
        says: /sb:\/\/local names the local Service Bus broker, but none is configured/,
      },
      { args: ['worker', '--queue', 'gpu', '--queues', 'sb://local'], env: cleanEnv(), says: /JOBQ_SERVICEBUS_CONNECTION_STRING/ },
    ];
    const results = await Promise.all(cases.map((c) => runCli(c.args, { env: c.env })));
    results.forEach((result, i) => {
      expect({ code: result.code, lines: result.stderr.trim().split('\n').length }).toEqual({ code: 2, lines: 1 });
      expect(result.stderr).toMatch(cases[i]!.says);
    });
  });
});

describe('storage request metrics on sb://', () => {
  it('counts the calls of a Service Bus queue opened by the CLI in jobq_storage_requests_total, as service servicebus', async () => {
    const counted: string[] = [];
    const instruments: Instruments = {
      enabled: true,
      inc: (name, labels) => void counted.push(`${name} ${Object.values(labels).join(' ')}`),
      observe: () => undefined,
      set: () => undefined,
    };
    const queue = await openPlainQueue(configFromFlags({}, env), freshQueue(), { instruments });
    await queue.send({ body: 'x' });
    const [message] = await queue.receive({ maxMessages: 1, maxWaitTimeInMs: 2_000 });
    await queue.complete(message!);
    await queue.close();
    expect(counted).toEqual([
      'jobq_storage_requests_total servicebus send ok',
      'jobq_storage_requests_total servicebus receive ok',
      'jobq_storage_requests_total servicebus complete ok',
    ]);
  });
});
