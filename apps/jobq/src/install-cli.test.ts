import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { cleanEnv, type CliResult } from './test-helpers/cli';

// The README's install from a clone (`pnpm install:cli --prefix DIR`, scripts/install-cli.js): a
// pnpm deploy of @jobq/cli into DIR/lib/jobq, linked as DIR/bin/jobq. --offline proves it needs
// nothing beyond the store the workspace install filled; the package's test script has built it.

const INSTALL = join(__dirname, '..', '..', '..', 'scripts', 'install-cli.js');

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.on('error', (error) => {
      clearTimeout(killer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

let dir: string;
let prefix: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'jobq-install-'));
  prefix = join(dir, 'prefix');
});
// The installed copy has some 40k files; deleting them takes longer than the test itself on a slow
// disk, so a detached rm does it after jest moves on.
afterAll(() => spawn('rm', ['-rf', dir], { detached: true, stdio: 'ignore' }).unref());

describe('pnpm install:cli', () => {
  it('installs a working global jobq into a prefix, offline, that runs a workflow whose task calls jobq', async () => {
    const install = await run(process.execPath, [INSTALL, '--prefix', prefix, '--offline', '--no-build'], cleanEnv(), dir);
    expect(install).toMatchObject({ code: 0, stdout: `${join(prefix, 'bin', 'jobq')}\n` });
    expect(lstatSync(join(prefix, 'bin', 'jobq')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(prefix, 'bin', 'jobq'))).toBe(join('..', 'lib', 'jobq', 'bin', 'run.js'));

    // Only the prefix and node on the PATH: nothing of the clone's node_modules.
    const env = cleanEnv({ PATH: [join(prefix, 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter), HOME: dir });
    const version = await run('jobq', ['--version'], env, dir);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^@jobq\/cli\/\d+\.\d+\.\d+ /);

    const workflow = join(dir, 'hello.yaml');
    writeFileSync(
      workflow,
      [
        'name: hello',
        'tasks:',
        '  - name: count',
        '    kwargs:',
        '      cmd: |',
        '        jobq task set-output --json \'{"words": 9}\'',
        '',
      ].join('\n'),
    );
    const result = await run('jobq', ['workflow', 'run', workflow, '--json'], env, dir);
    expect(result).toMatchObject({ code: 0, stderr: expect.stringContaining('completed') as unknown });
    expect(JSON.stringify(JSON.parse(result.stdout))).toContain('{"words":9}');
  });
});
