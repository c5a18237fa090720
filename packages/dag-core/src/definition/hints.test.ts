import { describe, expect, it } from '@jest/globals';
import { compileCondition } from '../condition';
import type { Issue } from '../result';
import { parseWorkflow } from './parse';
import { validateWorkflow } from './validate';

function issuesOf(value: unknown): Issue[] {
  const result = validateWorkflow(value);
  if (result.ok) throw new Error('expected issues, got a valid definition');
  return result.issues;
}

function warningsOf(value: unknown): Issue[] {
  const result = validateWorkflow(value);
  return result.ok ? result.warnings : (result.warnings ?? []);
}

const task = (name: string, extra: Record<string, unknown> = {}) => ({ name, kwargs: { cmd: `echo ${name}` }, ...extra });

describe('did you mean: unknown fields', () => {
  it.each([
    [{ name: 'w', tasks: [task('a'), task('b', { depend_on: ['a'] })] }, 'tasks[1].depend_on', 'did you mean "depends_on"?'],
    [{ name: 'w', tasks: [task('a'), task('b', { needs: ['a'] })] }, 'tasks[1].needs', 'did you mean "depends_on"?'],
    [{ name: 'w', tasks: [task('a', { num_retry: 2 })] }, 'tasks[0].num_retry', 'did you mean "num_retries"?'],
    [{ name: 'w', tasks: [task('a', { timeout: 5 })] }, 'tasks[0].timeout', 'did you mean "timeout_s"?'],
    [{ name: 'w', tasks: [task('a')], default_queu: 'cpu' }, 'default_queu', 'did you mean "default_queue"?'],
    [{ name: 'w', tasks: [task('a')], queue: 'cpu' }, 'queue', 'did you mean "default_queue"?'],
    [
      { name: 'w', tasks: [{ name: 'a', cmd: 'echo a' }] },
      'tasks[0].cmd',
      'did you mean "kwargs.cmd"? (the shell processor reads cmd from kwargs)',
    ],
    [
      { name: 'w', tasks: [{ name: 'a', command: 'echo a' }] },
      'tasks[0].command',
      'did you mean "kwargs.cmd"? (the shell processor reads cmd from kwargs)',
    ],
  ])('%j: %s', (definition, path, hint) => {
    const issue = issuesOf(definition).find((i) => i.code === 'unknown-field');
    expect(issue).toMatchObject({ path, hint });
  });

  it('gives no hint for a field far from every known one', () => {
    const issue = issuesOf({ name: 'w', owner: 'me', tasks: [task('a', { colour: 'red' })] }).filter((i) => i.code === 'unknown-field');
    expect(issue.map((i) => [i.path, i.hint]).sort()).toEqual([
      ['owner', undefined],
      ['tasks[0].colour', undefined],
    ]);
  });
});

describe('did you mean: dependencies and condition inputs', () => {
  it('suggests the task a dependency probably means, never the task itself', () => {
    const issues = issuesOf({ name: 'w', tasks: [task('featurize'), task('train', { depends_on: ['featurise', 'trian'] })] });
    expect(issues.map((i) => [i.code, i.path, i.hint])).toEqual([
      ['unknown-dependency', 'tasks[1].depends_on[0]', 'did you mean "featurize"?'],
      ['unknown-dependency', 'tasks[1].depends_on[1]', undefined],
    ]);
  });

  it('suggests the dependency a condition input probably means', () => {
    const result = compileCondition('inputs.featurise.ok', ['featurize']);
    expect(!result.ok && result.issues[0]).toMatchObject({ code: 'condition-unknown-input', hint: 'did you mean "featurize"?' });
  });
});

describe('did you mean: condition operators', () => {
  it.each([
    ['inputs.a.x & inputs.a.y', 'condition-disallowed', 12, 'did you mean "and"?'],
    ['inputs.a.x | inputs.a.y', 'condition-disallowed', 12, 'did you mean "or"?'],
    ['inputs.a.x && inputs.a.y', 'condition-disallowed', 12, 'did you mean "and"?'],
    ['inputs.a.x || inputs.a.y', 'condition-disallowed', 12, 'did you mean "or"?'],
    ['!inputs.a.x', 'condition-disallowed', 1, 'did you mean "not"?'],
    ['inputs.a.x and !inputs.a.y', 'condition-disallowed', 16, 'did you mean "not"?'],
    ['inputs.a.x == !inputs.a.y', 'condition-disallowed', 15, 'did you mean "not"?'],
  ])('%s', (condition, code, column, hint) => {
    const result = compileCondition(condition, ['a']);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues).toEqual([expect.objectContaining({ code, column, hint })]);
  });

  it('reads && and || as and and or, so the rest of the condition is still checked', () => {
    const result = compileCondition('inputs.a.x && inputs.b.y || inputs.a.z', ['a']);
    expect(!result.ok && result.issues.map((i) => [i.code, i.column])).toEqual([
      ['condition-disallowed', 12],
      ['condition-unknown-input', 22],
      ['condition-disallowed', 26],
    ]);
  });

  it('carries the hint to the workflow issue, at the operator', () => {
    const text =
      'name: w\ntasks:\n  - name: a\n    kwargs: {cmd: x}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: x}\n    condition: inputs.a.ok && inputs.a.n > 1\n';
    const result = parseWorkflow(text, { filename: 'w.yaml' });
    expect(!result.ok && result.issues).toEqual([
      {
        code: 'condition-disallowed',
        path: 'tasks[1].condition',
        message: "'&&' is not an operator of the condition language (column 13 of the condition)",
        hint: 'did you mean "and"?',
        line: 8,
        column: 28,
      },
    ]);
  });
});

describe('near misses of the kwargs the shell processor reads', () => {
  it('warns for a near miss of a shell kwarg, with the hint, at the key; the task stays valid', () => {
    const warnings = warningsOf({ name: 'w', tasks: [{ name: 'a', kwargs: { cmd: 'x', environment: { A: '1' }, working_dir: '/tmp' } }] });
    expect(warnings.map((w) => [w.code, w.path, w.hint])).toEqual([
      ['misspelt-kwarg', 'tasks[0].kwargs.environment', 'did you mean "env"?'],
      ['misspelt-kwarg', 'tasks[0].kwargs.working_dir', 'did you mean "cwd"?'],
    ]);
    expect(validateWorkflow({ name: 'w', tasks: [{ name: 'a', kwargs: { cmd: 'x', environment: {} } }] }).ok).toBe(true);
  });

  it('says once that a near miss of cmd leaves the task without one', () => {
    const warnings = warningsOf({ name: 'w', tasks: [{ name: 'a', kwargs: { command: 'echo a' } }] });
    expect(warnings).toEqual([
      {
        code: 'misspelt-kwarg',
        path: 'tasks[0].kwargs.command',
        message: 'kwargs.command is not read by the shell processor, and without kwargs.cmd it will fail task "a"',
        hint: 'did you mean "cmd"?',
      },
    ]);
  });

  it('leaves alone kwargs a task reads itself: far names, short names one letter off, a near miss written next to the real one', () => {
    const kwargs = { cmd: 'x', end: 3, dir: 'out', seed: 1, learning_rate: 0.1, command: 'both written' };
    expect(warningsOf({ name: 'w', tasks: [{ name: 'a', kwargs }] })).toEqual([]);
  });

  it('reports warnings alongside errors when the definition is invalid', () => {
    const result = validateWorkflow({ name: 'w', tasks: [{ name: 'a', depends_on: ['b'], kwargs: { cmds: 'x' } }] });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues.map((i) => i.code)).toEqual(['unknown-dependency']);
    expect(!result.ok && result.warnings?.map((w) => w.code)).toEqual(['misspelt-kwarg']);
  });
});

describe('kwargs types, at the line and column of the value', () => {
  it('points at each offending value', () => {
    const text = [
      'name: w',
      'tasks:',
      '  - name: a',
      '    kwargs:',
      '      cmd: [echo, a]',
      '      env: {A: [1]}',
      '      cwd: 7',
      '      bg_dirsync_to: {to: x}',
      '  - name: b',
      '    kwargs: {cmd: x, env: A=1}',
      '',
    ].join('\n');
    const result = parseWorkflow(text, { filename: 'w.yaml' });
    expect(!result.ok && result.issues.map((i) => `${i.line}:${i.column} ${i.code} ${i.message}`)).toEqual([
      '5:12 type kwargs.cmd must be a string, got a list',
      '7:12 type kwargs.cwd must be a string, got the integer 7',
      '6:16 type kwargs.env.A must be a string, a number or a boolean, got a list',
      '8:22 type kwargs.bg_dirsync_to must be a string, got an object',
      '10:27 type kwargs.env must be an object of variables, got the string "A=1"',
    ]);
  });
});

describe('did you mean: parameters and matrix keys', () => {
  const sweep = (cmd: string) => ({
    name: 'w',
    params: { epochs: 3, lr: 0.1 },
    tasks: [{ name: 't', matrix: { seed: [1, 2] }, kwargs: { cmd } }],
  });

  it('suggests the parameter an override or a reference probably means', () => {
    const override = validateWorkflow(sweep('x'), { params: { text: { epoch: '4' } } });
    expect(!override.ok && override.issues.map((i) => [i.code, i.hint])).toEqual([['unknown-param', 'did you mean "epochs"?']]);
    expect(issuesOf(sweep('train --lr ${{ params.lrr }}')).map((i) => [i.code, i.hint])).toEqual([['bad-reference', 'did you mean "lr"?']]);
  });

  it('suggests the matrix key a reference probably means', () => {
    expect(issuesOf(sweep('train --seed ${{ matrix.seeds }}')).map((i) => [i.code, i.hint])).toEqual([
      ['bad-reference', 'did you mean "seed"?'],
    ]);
    expect(issuesOf(sweep('train --seed ${{ matrix.rate }}')).map((i) => [i.code, i.hint])).toEqual([['bad-reference', undefined]]);
  });
});
