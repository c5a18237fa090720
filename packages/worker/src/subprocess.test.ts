import { runShell } from './subprocess';

const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };

describe('runShell', () => {
  it.each([
    ['the command', { command: 'echo a\0b' }, /args\[1\].*null bytes/],
    ['the cwd', { command: 'true', cwd: '/tmp\0x' }, /options\.cwd.*null bytes/],
    ['the environment', { command: 'true', env: { ...env, A: 'x\0' } }, /options\.env\['A'\].*null bytes/],
  ])('reports a NUL byte in %s as a start failure (never rejects)', async (_what, options, message) => {
    const result = await runShell({ env, killTimeoutInMs: 100, ...options });
    expect(result.spawnError).toMatch(/^could not start bash: /);
    expect(result.spawnError).toMatch(message);
    expect(result.exitCode).toBeNull();
  });

  it('reports the exit code and the output lines', async () => {
    const lines: string[] = [];
    const result = await runShell({
      command: 'echo one; echo two >&2; exit 4',
      env,
      killTimeoutInMs: 100,
      onLine: (_s, line) => lines.push(line),
    });
    expect(result).toMatchObject({ exitCode: 4, spawnError: null, stopped: false, timedOut: false });
    expect(lines.sort()).toEqual(['one', 'two']);
  });
});
