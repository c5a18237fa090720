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
  it('refuses what a worker or the storage would refuse later, each at its line and column', async () => {
    // A 40 000-character name used to validate and then fail submit with PropertyValueTooLarge.
    await writeFile(join(dir, 'late.yaml'), `name: ${'n'.repeat(40_000)}\ntasks:\n  - name: a\n    kwargs: {cmd: "echo \\0", __proto__: {x: 1}}\n`);
    const result = await runCli(['workflow', 'validate', join(dir, 'late.yaml')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/late\.yaml:1:7: bad-name: a workflow name has at most 1000 characters \(this one has 40000\)/);
    expect(result.stderr).toMatch(/late\.yaml:4:19: bad-kwarg: kwargs\.cmd contains a NUL character/);
    expect(result.stderr).toMatch(/late\.yaml:4:30: reserved-kwarg: /);
  });
  it('exits 2 on a usage error with one line', async () => {
    const result = await runCli(['workflow', 'validate', '--no-such-flag', join(dir, 'ok.yaml')]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
