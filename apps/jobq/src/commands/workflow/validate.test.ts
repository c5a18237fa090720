import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../test-helpers/cli';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-validate-'));
  await writeFile(join(dir, 'ok.yaml'), 'name: ok\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: echo b}\n');
  await writeFile(join(dir, 'cycle.yaml'), 'name: c\ntasks:\n  - name: a\n    depends_on: [b]\n    kwargs: {cmd: x}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: x}\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('jobq workflow validate', () => {
  it('accepts a valid file: exit 0, OK line', async () => {
    const result = await runCli(['workflow', 'validate', join(dir, 'ok.yaml')]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('OK');
    expect(result.stdout).toBe('');
  });
  it('reports every problem as file:line:column: code: message and exits 1', async () => {
    const result = await runCli(['workflow', 'validate', join(dir, 'ok.yaml'), join(dir, 'cycle.yaml')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`${join(dir, 'cycle.yaml').replace(/[.]/g, '\\.')}:\\d+:\\d+: cycle: `));
    expect(result.stderr).toContain('FAIL');
  });
  it('prints exactly one JSON document with --json', async () => {
    const result = await runCli(['workflow', 'validate', '--json', join(dir, 'ok.yaml'), join(dir, 'missing.yaml')]);
    expect(result.code).toBe(1);
    const doc = JSON.parse(result.stdout) as Array<{ ok: boolean }>;
    expect(doc.map((d) => d.ok)).toEqual([true, false]);
  });
  it('exits 2 on a usage error with one line', async () => {
    const result = await runCli(['workflow', 'validate', '--no-such-flag', join(dir, 'ok.yaml')]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
