import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const PACKAGE = join(__dirname, '..');

/** Runs `script` in a node child (cwd: this package, the built broker in dist/); resolves when it exits or after `limitMs`. */
function runChild(script: string, limitMs: number): Promise<{ exited: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: PACKAGE, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, limitMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ exited: code === 0, stdout, stderr });
    });
  });
}

describe('stop()', () => {
  it('stop() with a client still connected lets the process exit', async () => {
    // A client announcing idle-time-out 60 s makes rhea arm a 30 s heartbeat timer on the broker's side.
    const script = `
      const rhea = require('rhea');
      const { startServiceBus } = require('./dist/index.js');
      (async () => {
        const sb = await startServiceBus({ adminPort: null });
        const connection = rhea.create_container().connect({ port: sb.port, host: '127.0.0.1', reconnect: false, idle_time_out: 60000 });
        connection.on('disconnected', () => undefined);
        connection.on('error', () => undefined);
        await new Promise((resolve) => connection.once('connection_open', resolve));
        await sb.stop();
        process.stdout.write('stopped ' + sb.stats().connections + '\\n');
      })();
    `;
    const result = await runChild(script, 15_000);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('stopped 0\n');
    expect(result.exited).toBe(true);
  }, 30_000);
});
