import { describe, expect, it } from '@jest/globals';
import { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminPolicy } from './admin-policy';
import { parseCommandLine, UsageError } from './command-line';
import { answerRequest } from './control';
import { startServiceBus } from './emulator';
import { startServiceBusProcess } from './process';
import { QueueRegistryError, type QueueProperties } from './types';
import { until } from './test-helpers/clock';

describe('startServiceBusProcess', () => {
  it('runs the broker and its admin endpoint in a child process the SDK reaches; stop() ends it, twice is fine', async () => {
    const sb = await startServiceBusProcess({ queues: [{ name: 'declared', properties: { maxDeliveryCount: 4 } }] });
    try {
      expect(sb.connectionString).toBe(
        `Endpoint=sb://127.0.0.1:${sb.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`,
      );
      const client = new ServiceBusClient(sb.connectionString);
      await client.createSender('declared').sendMessages({ body: 'hello', messageId: 'm1' });
      const [message] = await client
        .createReceiver('declared', { receiveMode: 'receiveAndDelete' })
        .receiveMessages(1, { maxWaitTimeInMs: 5_000 });
      expect(message?.body).toBe('hello');
      await client.close();
      // The counters of the broker in the child, asked over its stdin; two requests at once are answered in order.
      const [stats, again] = await Promise.all([sb.stats(), sb.stats()]);
      expect(stats.queues.declared).toMatchObject({ messagesIn: 1, framesIn: 1, deliveries: 1, active: 0 });
      expect(stats.cbsPuts).toBeGreaterThanOrEqual(1);
      expect(again.queues.declared?.messagesIn).toBe(1);
      const admin = new ServiceBusAdministrationClient(sb.connectionString);
      admin.pipeline.addPolicy(adminPolicy(sb.adminEndpoint!));
      expect((await admin.getQueue('declared')).maxDeliveryCount).toBe(4);
    } finally {
      await sb.stop();
      await sb.stop();
    }
    expect(() => process.kill(sb.pid, 0)).toThrow();
    await expect(sb.stats()).rejects.toThrow('the Service Bus emulator process is stopped');
  }, 60_000);

  it('a request line the child does not know is answered with an error naming it', () => {
    const emulator = { stats: () => ({ connections: 2, cbsPuts: 3, queues: {} }) };
    expect(answerRequest('stats', emulator)).toEqual({ stats: { connections: 2, cbsPuts: 3, queues: {} } });
    expect(answerRequest('status', emulator)).toEqual({ error: 'unknown request "status" on stdin (known: stats)' });
  });

  it('a taken port: the start fails naming the port', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const listeners = process.listenerCount('exit');
      await expect(startServiceBusProcess({ port })).rejects.toThrow(new RegExp(`ended before it listened.*${port}`, 's'));
      expect(process.listenerCount('exit')).toBe(listeners);
    } finally {
      server.close();
    }
  }, 30_000);

  it('a child that does not print its ready line is killed, and no exit listener is left behind', async () => {
    // A preload script prints a line that is not JSON before the bin runs, and notes the child's pid.
    const dir = mkdtempSync(join(tmpdir(), 'sb-proc-'));
    const pidFile = join(dir, 'pid');
    const preload = join(dir, 'garble.js');
    writeFileSync(
      preload,
      `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); process.stdout.write('not json\\n');`,
    );
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${saved ?? ''} --require ${preload}`;
    const listeners = process.listenerCount('exit');
    try {
      await expect(startServiceBusProcess({ adminPort: null })).rejects.toThrow(/printed "not json\\n.*instead of its ready line/);
    } finally {
      if (saved === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = saved;
    }
    expect(process.listenerCount('exit')).toBe(listeners);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
  }, 30_000);
});

describe('option values', () => {
  it('startServiceBus refuses a value of the wrong type, naming the property', async () => {
    await expect(startServiceBus({ defaults: { duplicateDetectionHistoryTimeWindowMs: '60000' as unknown as number } })).rejects.toThrow(
      /duplicateDetectionHistoryTimeWindowMs must be a number \(got "60000"\)/,
    );
    await expect(
      startServiceBus({ queues: [{ name: 'q', properties: { maxSizeInMegabytes: '1' as unknown as number } }] }),
    ).rejects.toThrow(QueueRegistryError);
    await expect(startServiceBus({ defaults: { lockDuration: 5_000 } as unknown as Partial<QueueProperties> })).rejects.toThrow(
      /unknown queue property "lockDuration"/,
    );
    await expect(startServiceBus({ limits: { maxConnections: '10' as unknown as number } })).rejects.toThrow(
      /limits.maxConnections must be a number above 0 \(got "10"\)/,
    );
  });

  it('a child process takes Infinity (never) for a time to live', async () => {
    const sb = await startServiceBusProcess({
      adminPort: null,
      queues: [{ name: 'forever', properties: { defaultMessageTimeToLiveMs: Infinity } }],
      limits: { maxMessageTimeToLiveMs: Infinity },
    });
    await sb.stop();
  }, 30_000);

  it('the bin exits 2 for a value the broker refuses in a config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    const file = join(dir, 'sb.json');
    writeFileSync(file, JSON.stringify({ defaults: { duplicateDetectionHistoryTimeWindowMs: '60000' } }));
    const run = spawnSync(
      process.execPath,
      [join(__dirname, '..', 'dist', 'bin.js'), '--config', file, '--port', '0', '--admin-port', '0'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(run.stderr).toMatch(/duplicateDetectionHistoryTimeWindowMs must be a number/);
    expect(run.status).toBe(2);
  });
});

describe('the command line', () => {
  it('reads flags over a config file over the environment, with Azure ports by default', () => {
    expect(parseCommandLine([])).toEqual({ help: false, readyLine: false, options: { port: 5672, adminPort: 5300 } });
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    const file = join(dir, 'sb.json');
    writeFileSync(file, JSON.stringify({ profile: 'emulator', port: 7000, queues: ['a'] }));
    expect(parseCommandLine(['--config', file, '--port=0', '--ready-line'])).toEqual({
      help: false,
      readyLine: true,
      options: { profile: 'emulator', queues: ['a'], port: 0, adminPort: 5300 },
    });
    expect(parseCommandLine(['--admin-port', '0'], { JOBQ_SERVICEBUS_EMULATOR_CONFIG: '{"sasKey":"k"}' }).options).toEqual({
      sasKey: 'k',
      port: 5672,
      adminPort: 0,
    });
    expect(parseCommandLine(['--help']).help).toBe(true);
    // JSON has no Infinity: "Infinity" anywhere, and null for a time to live, mean never.
    const never = {
      defaults: { defaultMessageTimeToLiveMs: null },
      limits: { maxMessageTimeToLiveMs: 'Infinity' },
      queues: [{ name: 'q', properties: { defaultMessageTimeToLiveMs: null } }],
    };
    expect(parseCommandLine([], { JOBQ_SERVICEBUS_EMULATOR_CONFIG: JSON.stringify(never) }).options).toMatchObject({
      defaults: { defaultMessageTimeToLiveMs: Infinity },
      limits: { maxMessageTimeToLiveMs: Infinity },
      queues: [{ name: 'q', properties: { defaultMessageTimeToLiveMs: Infinity } }],
    });
  });

  it('refuses what it does not understand, in one line that says what and where', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"prot": 1}');
    const junk = join(dir, 'junk.json');
    writeFileSync(junk, '{nope');
    let n = 0;
    const write = (text: string) => {
      const file = join(dir, `case-${n++}.json`);
      writeFileSync(file, text);
      return file;
    };
    const cases: [string[], RegExp][] = [
      [['--port', 'x'], /--port needs a port number \(0–65535\), got "x"/],
      [['--port'], /--port needs a port number .* got nothing/],
      [['--admin-port', '70000'], /--admin-port needs a port number/],
      [['--verbose'], /unknown argument "--verbose"/],
      [['--config', join(dir, 'missing.json')], /--config .*missing\.json: cannot be read \(ENOENT\)/],
      [['--config', bad], /bad\.json: unknown option "prot"/],
      [['--config', junk], /junk\.json: not JSON/],
      [['--config', write('{"autoCreateQueues": "no"}')], /"autoCreateQueues" must be true or false \(got "no"\)/],
      [['--config', write('{"profile": "azur"}')], /"profile" must be "azure" or "emulator"/],
      [['--config', write('{"queues": [{"nom": "a"}]}')], /"queues" must be a list of names/],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseCommandLine(argv)).toThrow(UsageError);
      expect(() => parseCommandLine(argv)).toThrow(message);
    }
  });
});
