import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileCondition, evaluateCondition } from '../condition';
import { decodeDefinition, encodeDefinition } from '../runtime/definition-codec';
import type { Issue, Result } from '../result';
import { toRawDefinition } from './convert';
import { parseParamsFile, parseWorkflow } from './parse';
import type { ParamOverrides } from './params';
import type { WorkflowDefinition } from './types';
import { validateWorkflow } from './validate';

function fixture(name: string): string {
  return readFileSync(join(__dirname, 'testdata', name), 'utf8');
}

function valid(result: Result<WorkflowDefinition>): WorkflowDefinition {
  if (!result.ok)
    throw new Error(`expected a valid definition, got:\n${result.issues.map((i) => `${i.path}: ${i.code}: ${i.message}`).join('\n')}`);
  return result.value;
}

function issuesOf(result: Result<WorkflowDefinition>): Issue[] {
  if (result.ok) throw new Error('expected issues, got a valid definition');
  return result.issues;
}

const task = (name: string, extra: Record<string, unknown> = {}) => ({ name, kwargs: { cmd: 'true' }, ...extra });
const workflow = (tasks: unknown[], extra: Record<string, unknown> = {}) => ({ name: 'w', ...extra, tasks });

describe('matrix tasks', () => {
  const sweep = () =>
    valid(parseWorkflow(fixture('matrix-params.yaml'), { filename: 'matrix-params.yaml', params: { text: { epochs: '5' } } }));

  it('make one task per combination, first axis slowest, excludes left out and includes added, with readable names', () => {
    expect(sweep().tasks.map((t) => t.name)).toEqual([
      'prep',
      'train(lr=0.1,seed=1)',
      'train(lr=0.1,seed=2)',
      'train(lr=0.1,seed=3)',
      'train(lr=0.01,seed=1)',
      'train(lr=0.01,seed=2)',
      'train(lr=0.001,seed=1)',
      'compare',
    ]);
  });

  it('put their values in every kwargs string and in JOBQ_MATRIX_*, keep secret references, and depend as the matrix task did', () => {
    const train = sweep().tasks.find((t) => t.name === 'train(lr=0.01,seed=2)')!;
    expect(train.kwargs).toEqual({
      cmd: 'train --lr 0.01 --seed 2 --epochs 5',
      env: {
        TOKEN: '${{ secrets.TOKEN }}',
        JOBQ_PARAM_DATA: 's3://bucket/data',
        JOBQ_PARAM_THRESHOLD: '0.9',
        JOBQ_PARAM_EPOCHS: '5',
        JOBQ_PARAM_QUEUE: 'cpu',
        JOBQ_MATRIX_LR: '0.01',
        JOBQ_MATRIX_SEED: '2',
      },
    });
    expect(train.dependsOn).toEqual(['prep']);
  });

  it('are all depended on by a dependency on the matrix task, and a glob on NAME( selects them in a condition', () => {
    const definition = sweep();
    const compare = definition.tasks.find((t) => t.name === 'compare')!;
    const trainers = definition.tasks.filter((t) => t.name.startsWith('train(')).map((t) => t.name);
    expect(compare.dependsOn).toEqual(trainers);
    expect(compare.condition).toBe('any(inputs["train(*"].accuracy > 0.9)');
    const compiled = compileCondition(compare.condition!, compare.dependsOn);
    expect(compiled.ok && compiled.value.references).toEqual([...trainers].sort());
    const outputs = Object.fromEntries(trainers.map((name, i) => [name, { accuracy: i === 3 ? 0.95 : 0.5 }]));
    expect(compiled.ok && evaluateCondition(compiled.value, outputs)).toMatchObject({ ok: true, value: true });
  });

  it('read include and exclude as GitHub Actions does (its documented example)', () => {
    const definition = valid(
      validateWorkflow(
        workflow([
          task('job', {
            matrix: {
              fruit: ['apple', 'pear'],
              animal: ['cat', 'dog'],
              include: [
                { color: 'green' },
                { color: 'pink', animal: 'cat' },
                { fruit: 'apple', shape: 'circle' },
                { fruit: 'banana' },
                { fruit: 'banana', animal: 'cat' },
              ],
            },
          }),
        ]),
      ),
    );
    expect(definition.tasks.map((t) => t.name)).toEqual([
      'job(fruit=apple,animal=cat,color=pink,shape=circle)',
      'job(fruit=apple,animal=dog,color=green,shape=circle)',
      'job(fruit=pear,animal=cat,color=pink)',
      'job(fruit=pear,animal=dog,color=green)',
      'job(fruit=banana)',
      'job(fruit=banana,animal=cat)',
    ]);
  });

  it('write string values so that a name holds no glob character, "/", "," or "=" and two values never read the same', () => {
    const definition = valid(
      validateWorkflow(workflow([task('t', { matrix: { v: ['a*b', 'c?[d]', 's3://x/y', 'k=v,w', 'x y', '100%', 'ü'] } })])),
    );
    expect(definition.tasks.map((t) => t.name)).toEqual([
      't(v=a%2Ab)',
      't(v=c%3F%5Bd%5D)',
      't(v=s3:%2F%2Fx%2Fy)',
      't(v=k%3Dv%2Cw)',
      't(v=x%20y)',
      't(v=100%25)',
      't(v=%C3%BC)',
    ]);
  });

  it('leave a key only some include entries bring empty where a combination lacks it (None in a condition)', () => {
    const definition = valid(
      validateWorkflow(
        workflow([
          task('a'),
          task('t', {
            depends_on: ['a'],
            matrix: { n: [1, 2], include: [{ n: 2, flag: '--fast' }] },
            condition: 'inputs.a.x != ${{ matrix.flag }}',
            kwargs: { cmd: 'run ${{ matrix.flag }}' },
          }),
        ]),
      ),
    );
    expect(definition.tasks.slice(1).map((t) => [t.name, t.kwargs.cmd, t.condition])).toEqual([
      ['t(n=1)', 'run ', 'inputs.a.x != None'],
      ['t(n=2,flag=--fast)', 'run --fast', "inputs.a.x != '--fast'"],
    ]);
  });

  it('warn about an exclude entry that matches no combination', () => {
    const result = validateWorkflow(workflow([task('t', { matrix: { n: [1, 2], exclude: [{ n: 3 }] } })]));
    expect(result.ok && result.warnings.map((w) => [w.code, w.path])).toEqual([['unused-exclude', 'tasks[0].matrix.exclude[0]']]);
  });

  it(`refuse more than 256 tasks, and names that clash`, () => {
    const big = issuesOf(
      validateWorkflow(
        workflow([task('t', { matrix: { a: Array.from({ length: 17 }, (_, i) => i), b: Array.from({ length: 16 }, (_, i) => i) } })]),
      ),
    );
    expect(big).toEqual([
      {
        code: 'matrix-too-large',
        path: 'tasks[0].matrix',
        message: 'the matrix of task "t" makes 272 tasks (17 × 16); a matrix makes at most 256',
      },
    ]);
    const huge = issuesOf(
      validateWorkflow(
        workflow([task('t', { matrix: { a: Array.from({ length: 300 }, (_, i) => i), b: Array.from({ length: 300 }, (_, i) => i) } })]),
      ),
    );
    expect(huge[0]?.message).toBe('the matrix of task "t" has 300 × 300 = 90000 combinations; a matrix makes at most 256 tasks');
    // Excluding enough brings a product over the limit under it.
    expect(
      validateWorkflow(
        workflow([
          task('t', {
            matrix: { a: Array.from({ length: 17 }, (_, i) => i), b: Array.from({ length: 16 }, (_, i) => i), exclude: [{ a: 0 }] },
          }),
        ]),
      ).ok,
    ).toBe(true);
    const clash = issuesOf(validateWorkflow(workflow([task('t', { matrix: { v: [1, '1'] } })])));
    expect(clash.map((i) => [i.code, i.path])).toEqual([['bad-matrix', 'tasks[0].matrix']]);
    expect(clash[0]?.message).toContain('make the task "t(v=1)"');
  });

  it('report a problem of their tasks once, at the matrix task, with how many more tasks have it', () => {
    const issues = issuesOf(validateWorkflow(workflow([task('t', { matrix: { q: ['A', 'B', 'C'] }, queue: 'Q${{ matrix.q }}' })])));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ code: 'bad-queue', path: 'tasks[0].queue' });
    expect(issues[0]?.message).toMatch(/^queue "QA": .* \(and 2 more tasks of this matrix\)$/);
  });

  it('say how to read a matrix task in a condition that names it', () => {
    const issues = issuesOf(
      validateWorkflow(
        workflow([task('train', { matrix: { n: [1, 2] } }), task('c', { depends_on: ['train'], condition: 'inputs.train.ok' })]),
      ),
    );
    expect(issues).toEqual([
      {
        code: 'condition-unknown-input',
        path: 'tasks[1].condition',
        message:
          '"train" is a matrix task (2 tasks): read them with a glob inside an aggregate, e.g. any(inputs["train(*"].accuracy > 0.9) (column 8 of the condition)',
      },
    ]);
  });

  it('refuse a matrix task depending on itself and a plain task of the same name', () => {
    const issues = issuesOf(validateWorkflow(workflow([task('t', { matrix: { n: [1] }, depends_on: ['t'] }), task('t')])));
    expect(issues.map((i) => [i.code, i.path])).toEqual([
      ['duplicate-task', 'tasks[0].name'],
      ['self-dependency', 'tasks[0].depends_on[0]'],
    ]);
  });
});

describe('parameters', () => {
  const params = (extra: Record<string, unknown>, tasks: unknown[] = [task('a')]) => workflow(tasks, { params: extra });

  it('take their defaults, then the params file, then --param, each read as its type', () => {
    const declared = { s: 'x', n: 0.5, i: { type: 'integer', default: 1 }, b: false, r: { type: 'number' } };
    const overrides: ParamOverrides = { values: { s: 'from file', i: 7, r: 2 }, text: { i: '-3', b: 'true', r: '1e-4' } };
    expect(valid(validateWorkflow(params(declared), { params: overrides })).params).toEqual({
      s: 'from file',
      n: 0.5,
      i: -3,
      b: true,
      r: 0.0001,
    });
  });

  it('are substituted into kwargs, queues and default_queue as text, and reach every task as JOBQ_PARAM_*', () => {
    const definition = valid(
      validateWorkflow(
        workflow(
          [task('a', { queue: 'q-${{ params.pool }}', kwargs: { cmd: 'run ${{params.n}}', args: ['--n', '${{ params.n }}'] } }), task('b')],
          {
            params: { pool: 'gpu', n: 3 },
            default_queue: 'd-${{ params.pool }}',
          },
        ),
      ),
    );
    expect(definition.defaultQueue).toBe('d-gpu');
    expect(definition.tasks[0]).toMatchObject({
      queue: 'q-gpu',
      kwargs: { cmd: 'run 3', args: ['--n', '3'], env: { JOBQ_PARAM_POOL: 'gpu', JOBQ_PARAM_N: '3' } },
    });
    expect(definition.tasks[1]?.kwargs).toEqual({ cmd: 'true', env: { JOBQ_PARAM_POOL: 'gpu', JOBQ_PARAM_N: '3' } });
  });

  it('keep a variable the task sets itself', () => {
    const definition = valid(validateWorkflow(params({ n: 1 }, [task('a', { kwargs: { cmd: 'x', env: { JOBQ_PARAM_N: 'mine' } } })])));
    expect(definition.tasks[0]?.kwargs.env).toEqual({ JOBQ_PARAM_N: 'mine' });
  });

  it('enter a condition as a typed literal, never as code', () => {
    const tricky = "0.9' or True or '";
    const result = validateWorkflow(
      params({ mode: 'fast', bar: 0.9, on: true, tricky }, [
        task('a'),
        task('b', {
          depends_on: ['a'],
          condition: 'inputs.a.m == ${{ params.tricky }} or (inputs.a.on == ${{ params.on }} and inputs.a.x > ${{ params.bar }})',
        }),
      ]),
    );
    const b = valid(result).tasks[1]!;
    expect(b.condition).toBe("inputs.a.m == '0.9\\' or True or \\'' or (inputs.a.on == True and inputs.a.x > 0.9)");
    const compiled = compileCondition(b.condition!, ['a']);
    if (!compiled.ok) throw new Error('does not compile');
    expect(evaluateCondition(compiled.value, { a: { m: tricky, on: false, x: 0 } })).toMatchObject({ value: true });
    expect(evaluateCondition(compiled.value, { a: { m: '0.9', on: true, x: 0.5 } })).toMatchObject({ value: false });
  });

  it('round-trip: the resolved definition validates to itself, and survives the stored form', () => {
    const definition = valid(
      parseWorkflow(fixture('matrix-params.yaml'), { filename: 'matrix-params.yaml', params: { text: { epochs: '5', threshold: '0.8' } } }),
    );
    expect(valid(validateWorkflow(toRawDefinition(definition)))).toEqual(definition);
    expect(decodeDefinition(encodeDefinition(definition))).toEqual(definition);
    expect(definition.params).toEqual({ data: 's3://bucket/data', threshold: 0.8, epochs: 5, queue: 'cpu' });
  });

  it('leave a definition without them as it was', () => {
    const plain = workflow([task('a'), task('b', { depends_on: ['a'], kwargs: { cmd: 'x', env: { A: '${{ secrets.A }}' } } })]);
    const definition = valid(validateWorkflow(plain));
    expect(definition.params).toBeUndefined();
    expect(definition.tasks[1]?.kwargs).toEqual({ cmd: 'x', env: { A: '${{ secrets.A }}' } });
    expect(toRawDefinition(definition)).not.toHaveProperty('params');
  });

  it('refuse an override of an undeclared parameter, a value not of its type, and a missing one', () => {
    const declared = { n: { type: 'integer' }, b: true, s: 'x' };
    const issues = issuesOf(
      validateWorkflow(params(declared), { params: { text: { nope: '1', b: 'yes' }, values: { s: 3, other: 1 }, valuesSource: 'p.yaml' } }),
    );
    expect(issues.map((i) => [i.code, i.path, i.message])).toEqual([
      ['bad-param', 'params.s', 'p.yaml: parameter "s" must be a string, got the number 3'],
      ['unknown-param', 'params', 'p.yaml: the workflow has no parameter "other" (its parameters: n, b, s)'],
      ['unknown-param', 'params', '--param nope: the workflow has no parameter "nope" (its parameters: n, b, s)'],
      ['bad-param', 'params.b', '--param b=yes: "b" is a boolean parameter; "yes" is not a boolean'],
      ['missing-param', 'params.n', 'parameter "n" has no default and was not given: pass --param n=VALUE or set it in a --params-file'],
    ]);
  });

  it('refuse declarations that are not scalars or the long form, and names that clash as variables', () => {
    const issues = issuesOf(
      validateWorkflow(
        params({ l: [1], o: { typ: 'x' }, t: { type: 'float' }, d: { type: 'integer', default: 1.5 }, '1x': 1, ab: 1, AB: 2, z: 'a${{b' }),
      ),
    );
    expect(issues.map((i) => [i.code, i.path])).toEqual([
      ['bad-param', 'params.l'],
      ['bad-param', 'params.o.typ'],
      ['bad-param', 'params.t.type'],
      ['bad-param', 'params.d.default'],
      ['bad-param', 'params["1x"]'],
      ['bad-param', 'params.AB'],
      ['bad-param', 'params.z'],
    ]);
    expect(issues.find((i) => i.path === 'params.AB')?.message).toBe('parameters "ab" and "AB" would both be JOBQ_PARAM_AB: rename one');
  });
});

describe('references and their diagnostics', () => {
  it('report each problem with its file, line and column', () => {
    const issues = issuesOf(
      parseWorkflow(fixture('matrix-params-bad.yaml'), { filename: 'matrix-params-bad.yaml', params: { text: { nope: '1' } } }),
    );
    expect(issues.map((i) => [i.code, i.path, i.line, i.column])).toEqual([
      ['bad-param', 'params.mode', 5, 9],
      ['unknown-param', 'params', 2, 1],
      ['missing-param', 'params.data', 4, 9],
      ['bad-matrix', 'tasks[0].matrix.seed', 9, 13],
      ['bad-matrix', 'tasks[0].matrix.opt[1]', 10, 19],
      // The column of the "${{" inside the value.
      ['bad-reference', 'tasks[0].kwargs.cmd', 11, 31],
      ['matrix-too-large', 'tasks[1].matrix', 14, 7],
      ['bad-reference', 'tasks[2].queue', 19, 15],
      ['bad-reference', 'tasks[2].kwargs.cmd', 20, 25],
    ]);
    const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
    expect(byPath['tasks[0].matrix.seed']).toBe('matrix axis "seed" is empty: it would give no task at all');
    expect(byPath['tasks[0].matrix.opt[1]']).toBe('matrix axis "opt", value 2: must be a string, a number or a boolean, got an object');
    expect(byPath['tasks[0].kwargs.cmd']).toBe(
      'kwargs.cmd: ${{ params.lrr }}: the workflow has no parameter "lrr" (its parameters: lr, data, mode) (column 12 of the value)',
    );
    expect(byPath['tasks[2].queue']).toBe('queue: ${{ matrix.x }}: task "plain" has no matrix (column 3 of the value)');
  });

  it('name an unknown matrix key with the keys there are', () => {
    const issues = issuesOf(
      validateWorkflow(workflow([task('t', { matrix: { lr: [1], seed: [2] }, kwargs: { cmd: 'x ${{ matrix.rl }}' } })])),
    );
    expect(issues.map((i) => i.message)).toEqual([
      'kwargs.cmd: ${{ matrix.rl }}: the matrix of task "t" has no key "rl" (its keys: lr, seed) (column 3 of the value)',
    ]);
  });
});

describe('parseParamsFile', () => {
  it('reads a YAML or JSON object of values, and says where it is not one', () => {
    expect(parseParamsFile('lr: 0.1\nname: x\n', { filename: 'p.yaml' })).toEqual({
      ok: true,
      value: { lr: 0.1, name: 'x' },
      warnings: [],
    });
    expect(parseParamsFile('{"lr": 0.1}', { filename: 'p.json' })).toMatchObject({ ok: true, value: { lr: 0.1 } });
    expect(parseParamsFile('- 1\n', { filename: 'p.yaml' })).toMatchObject({
      ok: false,
      issues: [{ code: 'not-an-object', line: 1, column: 1 }],
    });
    expect(parseParamsFile('a: 1\na: 2\n', { filename: 'p.yaml' })).toMatchObject({
      ok: false,
      issues: [{ code: 'syntax', line: 2, column: 1 }],
    });
  });
});
