import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../test-helpers/cli';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-validate-'));
  await writeFile(
    join(dir, 'ok.yaml'),
    'name: ok\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: echo b}\n',
  );
  await writeFile(
    join(dir, 'cycle.yaml'),
    'name: c\ntasks:\n  - name: a\n    depends_on: [b]\n    kwargs: {cmd: x}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: x}\n',
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('jobq workflow validate', () => {
  it('accepts a valid file: exit 0, OK line', async () => {
    const result = await runCli(['workflow', 'validate', join(dir, 'ok.yaml')]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('OK');
    expect(result.stdout).toBe('');
  });
  it('reports every problem as file:line:column: severity: code: message and exits 1', async () => {
    const result = await runCli(['workflow', 'validate', join(dir, 'ok.yaml'), join(dir, 'cycle.yaml')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`${join(dir, 'cycle.yaml').replace(/[.]/g, '\\.')}:\\d+:\\d+: error: cycle: `));
    expect(result.stderr).toContain('FAIL');
  });
  it('prints exactly one JSON document with --json', async () => {
    const result = await runCli(['workflow', 'validate', '--json', join(dir, 'ok.yaml'), join(dir, 'missing.yaml')]);
    expect(result.code).toBe(1);
    const doc = JSON.parse(result.stdout) as { files: Array<{ ok: boolean }> };
    expect(doc.files.map((d) => d.ok)).toEqual([true, false]);
    expect(doc.files[1]).toEqual({
      file: join(dir, 'missing.yaml'),
      ok: false,
      issues: [{ severity: 'error', code: 'unreadable', message: 'no such file', path: '', line: null, column: null, hint: null }],
    });
    expect(result.stderr).toContain(`${join(dir, 'missing.yaml')}: error: unreadable: no such file\n`);
  });
  it('refuses what a worker or the storage would refuse later, each at its line and column', async () => {
    // A 40 000-character name used to validate and then fail submit with PropertyValueTooLarge.
    await writeFile(
      join(dir, 'late.yaml'),
      `name: ${'n'.repeat(40_000)}\ntasks:\n  - name: a\n    kwargs: {cmd: "echo \\0", __proto__: {x: 1}}\n`,
    );
    const result = await runCli(['workflow', 'validate', join(dir, 'late.yaml')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/late\.yaml:1:7: error: bad-name: a workflow name has at most 1000 characters \(this one has 40000\)/);
    expect(result.stderr).toMatch(/late\.yaml:4:19: error: bad-kwarg: kwargs\.cmd contains a NUL character/);
    expect(result.stderr).toMatch(/late\.yaml:4:30: error: reserved-kwarg: /);
  });
  it('resolves parameters (--param, --params-file) and expands matrices; reports their problems at line and column', async () => {
    const sweep = join(dir, 'sweep.yaml');
    await writeFile(
      sweep,
      [
        'name: sweep',
        'params:',
        '  epochs: {type: integer}',
        'tasks:',
        '  - name: train',
        '    matrix: {lr: [0.1, 0.01], seed: []}',
        '    kwargs: {cmd: "train --epochs ${{ params.epochs }} --lr ${{ matrix.rate }}"}',
        '',
      ].join('\n'),
    );
    const bad = await runCli(['workflow', 'validate', sweep, '--param', 'epoch=3']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `${sweep}:2:1: error: unknown-param: --param epoch: the workflow has no parameter "epoch" (its parameters: epochs)`,
    );
    expect(bad.stderr).toContain(`${sweep}:3:11: error: missing-param: `);
    expect(bad.stderr).toContain(`${sweep}:6:37: error: bad-matrix: matrix axis "seed" is empty`);
    await writeFile(sweep, (await readFile(sweep, 'utf8')).replace(', seed: []', '').replace('matrix.rate', 'matrix.lr'));
    await writeFile(join(dir, 'p.yaml'), 'epochs: "3"\n');
    const typed = await runCli(['workflow', 'validate', sweep, '--params-file', join(dir, 'p.yaml')]);
    expect(typed.stderr).toContain(
      `${sweep}:3:11: error: bad-param: ${join(dir, 'p.yaml')}: parameter "epochs" must be an integer, got the string "3"`,
    );
    await writeFile(join(dir, 'p.yaml'), 'epochs: 3\n');
    const good = await runCli(['workflow', 'validate', sweep, '--params-file', join(dir, 'p.yaml'), '--param', 'epochs=4', '--json']);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout)).toEqual({ files: [{ file: sweep, ok: true, tasks: 2, issues: [] }] });
    expect((await runCli(['workflow', 'validate', sweep, '--param', 'epochs'])).code).toBe(2);
  });

  it('prints the diagnostics of a file with several mistakes exactly: plain lines on stderr, the same in --json', async () => {
    const testdata = join(__dirname, '..', '..', 'testdata');
    const plain = await runCli(['workflow', 'validate', 'mistakes.yaml'], { cwd: testdata });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toBe(await readFile(join(testdata, 'mistakes.stderr.txt'), 'utf8'));
    const json = await runCli(['workflow', 'validate', 'mistakes.yaml', '--json'], { cwd: testdata });
    expect(json.code).toBe(1);
    expect(json.stdout).toBe(await readFile(join(testdata, 'mistakes.json'), 'utf8'));
  });

  it('exits 2 on a usage error with one line', async () => {
    const result = await runCli(['workflow', 'validate', '--no-such-flag', join(dir, 'ok.yaml')]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
