import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseWorkflow } from './parse';
import { validateWorkflow } from './validate';
import type { Issue } from '../result';

function fixture(name: string): { text: string; filename: string } {
  return { text: readFileSync(join(__dirname, 'testdata', name), 'utf8'), filename: name };
}

function issuesOfFile(name: string): Issue[] {
  const { text, filename } = fixture(name);
  const result = parseWorkflow(text, { filename });
  if (result.ok) throw new Error(`expected issues in ${name}, got a valid definition`);
  return result.issues;
}

function issuesOf(value: unknown): Issue[] {
  const result = validateWorkflow(value);
  if (result.ok) throw new Error('expected issues, got a valid definition');
  return result.issues;
}

const one = (kwargs: unknown) => ({ name: 'w', tasks: [{ name: 'a', kwargs }] });

describe('the kwargs the shell processor reads', () => {
  // What the worker refuses at run time (taskEnvironment, the cwd and cmd checks) is refused here first.
  const cases: Array<[code: string, kwargs: unknown, path: string, fragment: string]> = [
    ['bad-kwarg', { cmd: 'echo \u0000 done' }, 'tasks[0].kwargs.cmd', 'kwargs.cmd contains a NUL character'],
    ['bad-kwarg', { cmd: 'true', cwd: '/tmp\u0000' }, 'tasks[0].kwargs.cwd', 'kwargs.cwd contains a NUL character'],
    ['bad-kwarg', { cmd: 'true', cwd: '' }, 'tasks[0].kwargs.cwd', 'kwargs.cwd must not be empty'],
    ['bad-kwarg', { cmd: 'true', bg_dirsync_to: ' ' }, 'tasks[0].kwargs.bg_dirsync_to', 'kwargs.bg_dirsync_to must not be empty'],
    ['bad-kwarg', { cmd: 'true', bg_dirsync_to: './out\u0000' }, 'tasks[0].kwargs.bg_dirsync_to', 'NUL character'],
    ['bad-kwarg', { cmd: 'true', env: { 'A=B': 'x' } }, 'tasks[0].kwargs.env["A=B"]', 'may not contain "="'],
    ['bad-kwarg', { cmd: 'true', env: { '': 'x' } }, 'tasks[0].kwargs.env[""]', 'may not be empty'],
    ['bad-kwarg', { cmd: 'true', env: { 'A\u0000': 'x' } }, 'tasks[0].kwargs.env["A\\u0000"]', 'NUL character'],
    ['bad-kwarg', { cmd: 'true', env: { A: 'x\u0000y' } }, 'tasks[0].kwargs.env.A', 'kwargs.env.A contains a NUL character'],
    ['type', { cmd: 3 }, 'tasks[0].kwargs.cmd', 'kwargs.cmd must be a string, got the integer 3'],
    ['type', { cmd: ['echo', 'x'] }, 'tasks[0].kwargs.cmd', 'must be a string, got a list'],
    ['type', { cmd: 'true', cwd: 7 }, 'tasks[0].kwargs.cwd', 'must be a string'],
    ['type', { cmd: 'true', bg_dirsync_to: true }, 'tasks[0].kwargs.bg_dirsync_to', 'must be a string'],
    ['type', { cmd: 'true', env: ['A=1'] }, 'tasks[0].kwargs.env', 'kwargs.env must be an object of variables, got a list'],
    ['type', { cmd: 'true', env: 'A=1' }, 'tasks[0].kwargs.env', 'must be an object'],
    ['type', { cmd: 'true', env: { A: null } }, 'tasks[0].kwargs.env.A', 'kwargs.env.A must be a string, a number or a boolean, got null'],
    ['type', { cmd: 'true', env: { A: { x: 1 } } }, 'tasks[0].kwargs.env.A', 'got an object'],
    ['type', { cmd: 'true', env: { A: [1] } }, 'tasks[0].kwargs.env.A', 'got a list'],
    ['type', { cmd: 'true', env: { A: Infinity } }, 'tasks[0].kwargs.env.A', 'a string, a number or a boolean'],
  ];

  it.each(cases)('reports %s at the path (%#)', (code, kwargs, path, fragment) => {
    const issues = issuesOf(one(kwargs));
    expect(issues).toEqual([expect.objectContaining({ code, path })]);
    expect(issues[0]?.message).toContain(fragment);
    expect([...issues[0]!.message].some((c) => c.charCodeAt(0) < 32)).toBe(false);
  });

  it('keeps messages short when a name or key is long (the path holds all of it)', () => {
    const long = 'K'.repeat(10_000);
    const issues = issuesOf(
      one({ cmd: 'true', env: { [`${long}=`]: 'x', [long]: '${{ nope }}' }, data: { [long]: JSON.parse('{"__proto__": 1}') as unknown } }),
    );
    expect(issues.map((i) => i.code).sort()).toEqual(['bad-kwarg', 'bad-kwarg', 'secret-ref-syntax']);
    for (const issue of issues) expect(issue.message.length).toBeLessThan(250);
  });

  it('accepts what the worker accepts and keeps it unchanged', () => {
    const kwargs = {
      cmd: 'echo "$A"',
      cwd: '/tmp',
      env: { A: 'x', N: 3, F: false, EMPTY: '', 'lower.case-name': 'ok', S: 'u:${{ secrets.PASS }}@h' },
      bg_dirsync_to: './out',
      other: { anything: ['goes', null, 1.5] },
    };
    const result = validateWorkflow(one(kwargs));
    expect(result).toMatchObject({ ok: true, warnings: [] });
    expect(result.ok && result.value.tasks[0]?.kwargs).toEqual(kwargs);
    expect(validateWorkflow(one({ cmd: 'true', env: null, cwd: null, bg_dirsync_to: null })).ok).toBe(true);
  });

  it('warns, as for a missing cmd, when cmd is null or blank (the worker fails those too)', () => {
    for (const cmd of [null, '', '   ']) {
      const result = validateWorkflow(one({ cmd }));
      expect(result.ok && result.warnings.map((w) => [w.code, w.path])).toEqual([['no-cmd', 'tasks[0].kwargs']]);
    }
  });

  it('reports every problem of a YAML file at its line and column', () => {
    const issues = issuesOfFile('shell-kwargs.yaml');
    expect(issues.map((i) => [i.code, i.path, i.line, i.column])).toEqual([
      ['bad-kwarg', 'tasks[0].kwargs.cmd', 4, 19],
      ['bad-kwarg', 'tasks[1].kwargs.cwd', 6, 32],
      ['bad-kwarg', 'tasks[2].kwargs.env["A=B"]', 11, 9],
      ['bad-kwarg', 'tasks[2].kwargs.env[""]', 12, 9],
      ['bad-kwarg', 'tasks[2].kwargs.env.NUL_VALUE', 13, 20],
      ['type', 'tasks[2].kwargs.env.LIST', 14, 15],
      // The column of the "${{" inside the value, for a value written on one line.
      ['secret-ref-syntax', 'tasks[2].kwargs.env.BAD', 19, 16],
      ['secret-ref-syntax', 'tasks[2].kwargs.env.BAD_NAME', 20, 20],
    ]);
    expect(issues.find((i) => i.path === 'tasks[2].kwargs.env.BAD')?.message).toBe(
      'kwargs.env.BAD: "${{ secret.API_TOKEN }}" is not a reference: write ${{ params.NAME }}, ${{ matrix.KEY }} or, in kwargs.env, ${{ secrets.NAME }} (column 3 of the value)',
    );
    expect(issues.find((i) => i.path === 'tasks[2].kwargs.env.BAD_NAME')?.message).toContain('"1st" is not a secret name');
  });

  it('accepts secret references in kwargs.env values and keeps them unresolved', () => {
    const { text, filename } = fixture('secrets.yaml');
    const result = parseWorkflow(text, { filename });
    expect(result).toMatchObject({ ok: true, warnings: [] });
    expect(result.ok && result.value.tasks[0]?.kwargs.env).toEqual({
      API_TOKEN: '${{ secrets.API_TOKEN }}',
      DSN: 'postgres://app:${{secrets.DB_PASSWORD}}@db/app',
      REGION: 'westeurope',
      RETRIES: 3,
    });
  });

  it('reads "${{" in every kwargs string as a reference (a secret only in kwargs.env)', () => {
    const issues = issuesOf(one({ cmd: 'echo ${{ not checked }}', note: ['${{'], token: '${{ secrets.TOKEN }}' }));
    expect(issues.map((i) => [i.code, i.path])).toEqual([
      ['bad-reference', 'tasks[0].kwargs.cmd'],
      ['bad-reference', 'tasks[0].kwargs.note[0]'],
      ['bad-reference', 'tasks[0].kwargs.token'],
    ]);
    expect(issues[2]?.message).toMatch(/^kwargs\.token: \$\{\{ secrets\.TOKEN \}\}: a secret is resolved only in a kwargs\.env value/);
  });
});

describe('a "__proto__" key in kwargs', () => {
  // JavaScript drops such a key wherever an object is copied by assignment (the zod model, the
  // worker's environment), so it is reported instead of disappearing.
  const expected = [
    ['reserved-kwarg', 'tasks[0].kwargs.__proto__'],
    ['bad-kwarg', 'tasks[1].kwargs.env.__proto__'],
    ['bad-kwarg', 'tasks[2].kwargs.data.list[0].__proto__'],
  ];

  it('is reported from a YAML file, at the key', () => {
    const issues = issuesOfFile('proto-kwargs.yaml');
    expect(issues.map((i) => [i.code, i.path])).toEqual(expected);
    expect(issues.map((i) => [i.line, i.column])).toEqual([
      [6, 7],
      [11, 9],
      [17, 17],
    ]);
    expect(issues[1]?.message).toBe(
      'kwargs.env.__proto__: a key named "__proto__" would be dropped (JavaScript treats it as the prototype); rename it',
    );
  });

  it('is reported from a JSON file, at the key', () => {
    const issues = issuesOfFile('proto-kwargs.json');
    expect(issues.map((i) => [i.code, i.path])).toEqual(expected);
    expect(issues.map((i) => i.line)).toEqual([4, 5, 6]);
  });

  it('is reported when the value comes from JSON.parse', () => {
    const value: unknown = JSON.parse('{"name":"w","tasks":[{"name":"a","kwargs":{"cmd":"x","__proto__":{"cmd":"rm -rf /"}}}]}');
    expect(issuesOf(value).map((i) => [i.code, i.path])).toEqual([['reserved-kwarg', 'tasks[0].kwargs.__proto__']]);
  });

  it('is an unknown field elsewhere in the definition', () => {
    const value: unknown = JSON.parse('{"name":"w","__proto__":{"x":1},"tasks":[{"name":"a","kwargs":{"cmd":"x"},"__proto__":{}}]}');
    expect(issuesOf(value).map((i) => [i.code, i.path])).toEqual(
      expect.arrayContaining([
        ['unknown-field', '__proto__'],
        ['unknown-field', 'tasks[0].__proto__'],
      ]),
    );
  });
});
