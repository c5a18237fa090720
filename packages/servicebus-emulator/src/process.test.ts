import { describe, expect, it } from '@jest/globals';
import { ServiceBusAdministrationClient, ServiceBusClient } from '@azure/service-bus';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminPolicy } from './admin-policy';
import { parseCommandLine, UsageError } from './command-line';
import { startServiceBusProcess } from './process';
import { until } from './test-helpers/clock';

describe('startServiceBusProcess', () => {
  it('runs the broker and its admin endpoint in a child process the SDK reaches; stop() ends it, twice is fine', async () => {
    const sb = await startServiceBusProcess({ queues: [{ name: 'declared', properties: { maxDeliveryCount: 4 } }] });
    try {
      expect(sb.connectionString).toBe(`Endpoint=sb://127.0.0.1:${sb.port};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true`);
      const client = new ServiceBusClient(sb.connectionString);
      await client.createSender('declared').sendMessages({ body: 'hello', messageId: 'm1' });
      const [message] = await client.createReceiver('declared', { receiveMode: 'receiveAndDelete' }).receiveMessages(1, { maxWaitTimeInMs: 5_000 });
      expect(message?.body).toBe('hello');
      await client.close();
      const admin = new ServiceBusAdministrationClient(sb.connectionString);
      admin.pipeline.addPolicy(adminPolicy(sb.adminEndpoint!));
      expect((await admin.getQueue('declared')).maxDeliveryCount).toBe(4);
    } finally {
      await sb.stop();
      await sb.stop();
    }
    expect(() => process.kill(sb.pid, 0)).toThrow();
  }, 60_000);

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
    writeFileSync(preload, `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); process.stdout.write('not json\\n');`);
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

describe('the command line', () => {
  it('reads flags over a config file over the environment, with Azure ports by default', () => {
    expect(parseCommandLine([])).toEqual({ help: false, readyLine: false, options: { port: 5672, adminPort: 5300 } });
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    const file = join(dir, 'sb.json');
    writeFileSync(file, JSON.stringify({ profile: 'emulator', port: 7000, queues: ['a'] }));
    expect(parseCommandLine(['--config', file, '--port=0', '--ready-line'])).toEqual({ help: false, readyLine: true, options: { profile: 'emulator', queues: ['a'], port: 0, adminPort: 5300 } });
    expect(parseCommandLine(['--admin-port', '0'], { JOBQ_SERVICEBUS_EMULATOR_CONFIG: '{"sasKey":"k"}' }).options).toEqual({ sasKey: 'k', port: 5672, adminPort: 0 });
    expect(parseCommandLine(['--help']).help).toBe(true);
  });

  it('refuses what it does not understand, in one line that says what and where', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"prot": 1}');
    const junk = join(dir, 'junk.json');
    writeFileSync(junk, '{nope');
    const cases: [string[], RegExp][] = [
      [['--port', 'x'], /--port needs a port number \(0–65535\), got "x"/],
      [['--port'], /--port needs a port number .* got nothing/],
      [['--admin-port', '70000'], /--admin-port needs a port number/],
      [['--verbose'], /unknown argument "--verbose"/],
      [['--config', join(dir, 'missing.json')], /--config .*missing\.json: cannot be read \(ENOENT\)/],
      [['--config', bad], /bad\.json: unknown option "prot"/],
      [['--config', junk], /junk\.json: not JSON/],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseCommandLine(argv)).toThrow(UsageError);
      expect(() => parseCommandLine(argv)).toThrow(message);
    }
  });
});
