import { describe, expect, it } from '@jest/globals';
import { parseWorkflow } from './parse';
import { validateDefinition, validateWorkflow } from './validate';
import { sequentializeFanIn } from '../transform/fan-in';
import type { WorkflowDefinition } from './types';
import type { Issue } from '../result';

function issuesOf(value: unknown): Issue[] {
  const result = validateWorkflow(value);
  if (result.ok) throw new Error('expected issues, got a valid definition');
  return result.issues;
}

function task(name: string, extra: Record<string, unknown> = {}) {
  return { name, kwargs: { cmd: `echo ${name}` }, ...extra };
}

const diamond = {
  name: 'diamond',
  tasks: [task('a'), task('b', { depends_on: ['a'] }), task('c', { depends_on: ['a'] }), task('d', { depends_on: ['b', 'c'] })],
};

describe('validateWorkflow', () => {
  it('accepts a valid definition and fills every default', () => {
    const result = validateWorkflow(diamond);
    expect(result).toEqual({
      ok: true,
      warnings: [],
      value: {
        name: 'diamond',
        defaultQueue: 'default',
        defaultTaskTimeoutS: null,
        maxParallelism: null,
        resultPolicy: 'all_sinks_succeed',
        defaultRetryDelayS: 0,
        defaultRetryBackoff: 1,
        defaultRetryMaxDelayS: null,
        timeoutS: null,
        tasks: [
          {
            name: 'a',
            kwargs: { cmd: 'echo a' },
            dependsOn: [],
            queue: null,
            depPolicy: 'all',
            condition: null,
            numRetries: 0,
            timeoutS: null,
            retryDelayS: null,
            retryBackoff: null,
            retryMaxDelayS: null,
          },
          {
            name: 'b',
            kwargs: { cmd: 'echo b' },
            dependsOn: ['a'],
            queue: null,
            depPolicy: 'all',
            condition: null,
            numRetries: 0,
            timeoutS: null,
            retryDelayS: null,
            retryBackoff: null,
            retryMaxDelayS: null,
          },
          {
            name: 'c',
            kwargs: { cmd: 'echo c' },
            dependsOn: ['a'],
            queue: null,
            depPolicy: 'all',
            condition: null,
            numRetries: 0,
            timeoutS: null,
            retryDelayS: null,
            retryBackoff: null,
            retryMaxDelayS: null,
          },
          {
            name: 'd',
            kwargs: { cmd: 'echo d' },
            dependsOn: ['b', 'c'],
            queue: null,
            depPolicy: 'all',
            condition: null,
            numRetries: 0,
            timeoutS: null,
            retryDelayS: null,
            retryBackoff: null,
            retryMaxDelayS: null,
          },
        ],
      },
    });
  });

  it('keeps every field that was set', () => {
    const result = validateWorkflow({
      $schema: './schema.json',
      name: 'x',
      default_queue: 'cpu',
      default_task_timeout_s: 60,
      max_parallelism: 2,
      result_policy: 'all_tasks_succeed',
      tasks: [
        task('a', { queue: 'gpustore/gpu-a100', num_retries: 3, timeout_s: 5 }),
        task('b', { depends_on: ['a'], dep_policy: 1, condition: 'inputs.a.ok', queue: 'sb://myns/train.q' }),
      ],
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({
      defaultQueue: 'cpu',
      defaultTaskTimeoutS: 60,
      maxParallelism: 2,
      resultPolicy: 'all_tasks_succeed',
    });
    expect(result.value.tasks[0]).toMatchObject({ queue: 'gpustore/gpu-a100', numRetries: 3, timeoutS: 5 });
    expect(result.value.tasks[1]).toMatchObject({ depPolicy: 1, condition: 'inputs.a.ok', queue: 'sb://myns/train.q' });
  });

  it('warns about a task without kwargs.cmd, and still accepts it', () => {
    const result = validateWorkflow({ name: 'w', tasks: [{ name: 'a' }, { name: 'b', kwargs: { env: {} } }] });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.warnings.map((w) => [w.code, w.path])).toEqual([
      ['no-cmd', 'tasks[0]'],
      ['no-cmd', 'tasks[1].kwargs'],
    ]);
  });

  // One invalid case per stable code; the valid counterpart of each is in the tests above.
  const cases: Array<[code: string, value: unknown, path: string, fragment: string]> = [
    ['not-an-object', [1, 2], '', 'must be an object'],
    ['unknown-field', { ...diamond, owner: 'me' }, 'owner', 'unknown field "owner"'],
    ['unknown-field', { name: 'w', tasks: [{ ...task('a'), dependson: [] }] }, 'tasks[0].dependson', 'unknown field'],
    ['type', { name: 'w', tasks: [task('a', { num_retries: true })] }, 'tasks[0].num_retries', 'must be an integer, got the boolean true'],
    ['type', { name: 'w', tasks: [task('a', { kwargs: 'echo' })] }, 'tasks[0].kwargs', 'must be an object'],
    ['type', { name: 'w', tasks: [task('a', { depends_on: 'b' })] }, 'tasks[0].depends_on', 'must be a list'],
    ['type', { name: 5, tasks: [task('a')] }, 'name', 'must be a string'],
    ['missing-field', { tasks: [task('a')] }, 'name', '"name" is required'],
    ['missing-field', { name: 'w', tasks: [{ kwargs: { cmd: 'x' } }] }, 'tasks[0].name', 'required'],
    ['out-of-range', { name: 'w', tasks: [task('a', { num_retries: -1 })] }, 'tasks[0].num_retries', 'at least 0'],
    ['out-of-range', { name: 'w', tasks: [task('a', { timeout_s: 0 })] }, 'tasks[0].timeout_s', 'at least 1'],
    ['type', { name: 'w', tasks: [task('a', { timeout_s: 1.5 })] }, 'tasks[0].timeout_s', 'integer'],
    ['empty-tasks', { name: 'w', tasks: [] }, 'tasks', 'at least one task'],
    ['bad-name', { name: ' ', tasks: [task('a')] }, 'name', 'non-space'],
    ['bad-name', { name: 'w', tasks: [task('a#1')] }, 'tasks[0].name', 'may not contain "#"'],
    ['bad-name', { name: 'w', tasks: [task('/a')] }, 'tasks[0].name', 'may not start with "/"'],
    ['bad-name', { name: 'w', tasks: [task('a//b')] }, 'tasks[0].name', 'empty path segment'],
    ['bad-name', { name: 'w', tasks: [task('a/../b')] }, 'tasks[0].name', '".." path segment'],
    ['bad-name', { name: 'w', tasks: [task('./x')] }, 'tasks[0].name', '"." or ".." path segment'],
    ['bad-name', { name: 'w', tasks: [task('a/.')] }, 'tasks[0].name', '"." or ".." path segment'],
    ['bad-name', { name: 'w', tasks: [task('__x')] }, 'tasks[0].name', 'reserved'],
    ['bad-name', { name: 'w', tasks: [task('a\u0001')] }, 'tasks[0].name', 'control characters'],
    ['bad-name', { name: 'w', tasks: [task('x'.repeat(257))] }, 'tasks[0].name', 'at most 256'],
    ['duplicate-task', { name: 'w', tasks: [task('a'), task('a')] }, 'tasks[1].name', 'first used by tasks[0]'],
    [
      'unknown-dependency',
      { name: 'w', tasks: [task('a', { depends_on: ['zz'] })] },
      'tasks[0].depends_on[0]',
      '"zz", which is not a task',
    ],
    ['self-dependency', { name: 'w', tasks: [task('a', { depends_on: ['a'] })] }, 'tasks[0].depends_on[0]', 'depends on itself'],
    [
      'duplicate-dependency',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a', 'a'] })] },
      'tasks[1].depends_on[1]',
      'listed twice',
    ],
    [
      'bad-dep-policy',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], dep_policy: 'most' })] },
      'tasks[1].dep_policy',
      'dep_policy must be',
    ],
    [
      'bad-dep-policy',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], dep_policy: 2 })] },
      'tasks[1].dep_policy',
      'needs at least 2 dependencies',
    ],
    [
      'bad-dep-policy',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], dep_policy: 0 })] },
      'tasks[1].dep_policy',
      'integer ≥ 1',
    ],
    [
      'bad-dep-policy',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], dep_policy: true })] },
      'tasks[1].dep_policy',
      'boolean',
    ],
    ['bad-max-parallelism', { ...diamond, max_parallelism: 0 }, 'max_parallelism', 'integer ≥ 1'],
    ['bad-max-parallelism', { ...diamond, max_parallelism: true }, 'max_parallelism', 'integer ≥ 1'],
    ['bad-result-policy', { ...diamond, result_policy: 'majority' }, 'result_policy', 'all_sinks_succeed'],
    ['bad-queue', { name: 'w', tasks: [task('a', { queue: 'GPU' })] }, 'tasks[0].queue', 'lowercase'],
    ['bad-queue', { name: 'w', tasks: [task('a', { queue: 'a--b' })] }, 'tasks[0].queue', 'single hyphens'],
    ['bad-queue', { name: 'w', tasks: [task('a', { queue: 'x'.repeat(57) })] }, 'tasks[0].queue', '3–56'],
    ['bad-queue', { ...diamond, default_queue: 'Bad_Account/q1q' }, 'default_queue', 'storage account'],
    ['bad-queue', { name: 'w', tasks: [task('a', { queue: 'sb://ns' })] }, 'tasks[0].queue', 'needs a queue name'],
    [
      'reserved-kwarg',
      { name: 'w', tasks: [task('a', { kwargs: { cmd: 'x', __workflow_id: 'y' } })] },
      'tasks[0].kwargs.__workflow_id',
      'reserved',
    ],
    [
      'cycle',
      { name: 'w', tasks: [task('a', { depends_on: ['c'] }), task('b', { depends_on: ['a'] }), task('c', { depends_on: ['b'] })] },
      'tasks[0].depends_on',
      'a -> c -> b -> a',
    ],
    [
      'condition-without-deps',
      { name: 'w', tasks: [task('a', { condition: 'inputs.a.x' })] },
      'tasks[0].condition',
      'at least one dependency',
    ],
    [
      'condition-syntax',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], condition: 'inputs.a.x ==' })] },
      'tasks[1].condition',
      'column',
    ],
    [
      'condition-disallowed',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], condition: 'inputs.a.x + 1 > 2' })] },
      'tasks[1].condition',
      'column 12',
    ],
    [
      'condition-unknown-input',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], condition: 'inputs.z.ok' })] },
      'tasks[1].condition',
      'z',
    ],
    [
      'condition-no-input',
      { name: 'w', tasks: [task('a'), task('b', { depends_on: ['a'], condition: '1 < 2' })] },
      'tasks[1].condition',
      '',
    ],
    [
      'condition-with-fan-in',
      {
        name: 'w',
        tasks: [task('a', { depends_on: [] }), task('b', { depends_on: ['__merge_x_0'], condition: 'inputs["__merge_x_0"].ok' })],
      },
      'tasks[1].condition',
      '--max-fan-in',
    ],
  ];

  it.each(cases)('reports %s at the path (%#)', (code, value, path, fragment) => {
    const found = issuesOf(value).find((i) => i.code === code);
    expect(found).toBeDefined();
    expect(found?.path).toBe(path);
    expect(found?.message).toContain(fragment);
  });

  it('reports every problem in one pass, type errors and graph errors together', () => {
    const issues = issuesOf({
      name: 'w',
      extra: 1,
      tasks: [task('a', { num_retries: 'three' }), task('b', { depends_on: ['nope', 'b'] }), task('a')],
    });
    expect(issues.map((i) => `${i.code}@${i.path}`).sort()).toEqual(
      [
        'unknown-field@extra',
        'type@tasks[0].num_retries',
        'unknown-dependency@tasks[1].depends_on[0]',
        'self-dependency@tasks[1].depends_on[1]',
        'duplicate-task@tasks[2].name',
      ].sort(),
    );
  });

  it('accepts names with path segments, spaces and unicode', () => {
    const result = validateWorkflow({
      name: 'w',
      tasks: [task('prep/featurize'), task('train model ✓', { depends_on: ['prep/featurize'] })],
    });
    expect(result.ok).toBe(true);
  });

  it('accepts every queue spec form', () => {
    for (const queue of ['cpu', 'gpu-a100', 'acct1/cpu-64core', 'sb://myns/gpu', 'sb://local/q_1.x', 'a1b']) {
      expect(validateWorkflow({ name: 'w', tasks: [task('a', { queue })] }).ok).toBe(true);
    }
  });

  it('finds a cycle in a 100 000-task chain without overflowing the stack', () => {
    const tasks = Array.from({ length: 100_000 }, (_, i) => task(`t${i}`, { depends_on: [`t${(i + 1) % 100_000}`] }));
    const issues = issuesOf({ name: 'w', tasks });
    expect(issues.map((i) => i.code)).toEqual(['cycle']);
  });
});

describe('parseWorkflow', () => {
  it('parses YAML and JSON to the same definition', () => {
    const yaml =
      'name: diamond\ntasks:\n  - name: a\n    kwargs: {cmd: echo a}\n  - name: b\n    depends_on: [a]\n    kwargs: {cmd: echo b}\n';
    const json = JSON.stringify({ name: 'diamond', tasks: [task('a'), task('b', { depends_on: ['a'] })] });
    const fromYaml = parseWorkflow(yaml, { filename: 'dag.yaml' });
    const fromJson = parseWorkflow(json, { filename: 'dag.json' });
    expect(fromYaml.ok && fromJson.ok).toBe(true);
    if (fromYaml.ok && fromJson.ok) expect(fromYaml.value).toEqual(fromJson.value);
  });

  it('gives YAML issues their line and column', () => {
    const yaml = [
      'name: w',
      'tasks:',
      '  - name: a',
      '    kwargs: {cmd: x}',
      '  - name: b',
      '    depends_on: [a, zz]',
      '    colour: red',
      '    kwargs: {cmd: x}',
    ].join('\n');
    const result = parseWorkflow(yaml, { filename: 'w.yml' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'unknown-field', path: 'tasks[1].colour', line: 7, column: 5 }),
        expect.objectContaining({ code: 'unknown-dependency', path: 'tasks[1].depends_on[1]', line: 6, column: 21 }),
      ]),
    );
  });

  it('points a condition error at its column in the file when the condition is on one line', () => {
    const yaml = [
      'name: w',
      'tasks:',
      '  - {name: a, kwargs: {cmd: x}}',
      '  - name: b',
      '    depends_on: [a]',
      '    condition: "inputs.a.x + 1"',
      '    kwargs: {cmd: x}',
    ].join('\n');
    const result = parseWorkflow(yaml, { filename: 'w.yaml' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    // `+` is column 12 of the expression, which starts after the quote, at column 17.
    expect(result.issues[0]).toMatchObject({ code: 'condition-disallowed', line: 6, column: 28 });
  });

  it('points a missing field at its parent', () => {
    const result = parseWorkflow('name: w\ntasks:\n  - kwargs: {cmd: x}\n', { filename: 'w.yaml' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toEqual([expect.objectContaining({ code: 'missing-field', path: 'tasks[0].name', line: 3, column: 5 })]);
  });

  it('gives JSON issues positions too', () => {
    const json = '{\n  "name": "w",\n  "tasks": [\n    {"name": "a", "num_retries": -2}\n  ]\n}';
    const result = parseWorkflow(json, { filename: 'w.json' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]).toMatchObject({ code: 'out-of-range', path: 'tasks[0].num_retries', line: 4, column: 34 });
  });

  it('reports YAML syntax errors with their position', () => {
    const result = parseWorkflow('name: w\ntasks: [\n  {name: a\n', { filename: 'w.yaml' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]?.code).toBe('syntax');
    expect(result.issues[0]?.line).toBeGreaterThanOrEqual(2);
    expect(result.issues[0]?.message).toMatch(/^YAML: /);
  });

  it('reports duplicate YAML keys and several documents as syntax errors', () => {
    const dup = parseWorkflow('name: w\nname: v\ntasks: []\n', { filename: 'w.yaml' });
    expect(!dup.ok && dup.issues[0]).toMatchObject({ code: 'syntax', line: 2 });
    const multi = parseWorkflow('name: w\n---\nname: v\n', { filename: 'w.yaml' });
    expect(!multi.ok && multi.issues[0]?.code).toBe('syntax');
  });

  it('reports a JSON syntax error with line and column', () => {
    const result = parseWorkflow('{\n  "name": "w",\n}', { filename: 'w.json' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]).toMatchObject({ code: 'syntax', line: 3, column: 1 });
  });

  it('stops a YAML alias bomb with an issue, not an out-of-memory', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    const result = parseWorkflow(levels.join('\n'), { filename: 'bomb.yaml' });
    expect(result).toEqual({ ok: false, issues: [expect.objectContaining({ code: 'alias-limit' })] });
  });

  it('refuses a YAML alias that contains itself and data nested past the depth limit, without overflowing the stack', () => {
    const self = parseWorkflow('name: w\ntasks:\n  - name: a\n    kwargs: &k {cmd: "true", again: *k}\n', { filename: 'self.yaml' });
    expect(self.ok).toBe(false);
    expect(!self.ok && self.issues[0]?.message).toMatch(/contains itself|alias/);
    const deep = (n: number) => `{"name":"w","tasks":[{"name":"a","kwargs":{"cmd":"true","x":${'['.repeat(n)}${']'.repeat(n)}}}]}`;
    expect(parseWorkflow(deep(50), { filename: 'ok.json' }).ok).toBe(true);
    const tooDeep = parseWorkflow(deep(200), { filename: 'deep.json' });
    expect(!tooDeep.ok && tooDeep.issues).toEqual([
      { code: 'type', path: '', message: expect.stringMatching(/nests deeper than 64 levels/) },
    ]);
    const hostile = parseWorkflow(deep(200_000), { filename: 'hostile.json' });
    expect(hostile.ok).toBe(false);
    expect(!hostile.ok && hostile.issues[0]?.message.length).toBeLessThan(300);
  });

  it('keeps parser messages short: one line of at most 200 characters, no control characters', () => {
    const result = parseWorkflow(`name: w\ntasks: ]${'a'.repeat(100_000)}\u0001\n`, { filename: 'long.yaml' });
    expect(result.ok).toBe(false);
    for (const issue of result.ok ? [] : result.issues) {
      expect(issue.message.length).toBeLessThanOrEqual(210);
      expect([...issue.message].some((c) => c.charCodeAt(0) < 32)).toBe(false);
    }
  });

  it('expands ordinary shared anchors', () => {
    const tasks = Array.from({ length: 2000 }, (_, i) => `  - {name: t${i}, kwargs: *common}`).join('\n');
    const result = parseWorkflow(`name: w\nx-common: &common {cmd: "echo hi", env: {A: "1"}}\ntasks:\n${tasks}\n`, { filename: 'w.yaml' });
    // The anchor holder is an unknown field; everything else, aliases included, is fine.
    expect(!result.ok && result.issues.map((i) => i.code)).toEqual(['unknown-field']);
  });

  it('accepts a byte-order mark, and sniffs the format without a file name', () => {
    expect(parseWorkflow('\uFEFFname: w\ntasks: [{name: a, kwargs: {cmd: x}}]\n', { filename: 'w.yaml' }).ok).toBe(true);
    expect(parseWorkflow('{"name": "w", "tasks": [{"name": "a", "kwargs": {"cmd": "x"}}]}').ok).toBe(true);
    expect(parseWorkflow('name: w\ntasks: [{name: a, kwargs: {cmd: x}}]\n').ok).toBe(true);
  });

  it('treats an empty file as a definition that is not an object', () => {
    const result = parseWorkflow('', { filename: 'w.yaml' });
    expect(!result.ok && result.issues[0]?.code).toBe('not-an-object');
  });
});

describe('validateDefinition (a definition in hand, before submit)', () => {
  const user = (): WorkflowDefinition => {
    const r = validateWorkflow({
      name: 'w',
      tasks: [
        { name: 'p1', kwargs: { cmd: 'x' } },
        { name: 'p2', kwargs: { cmd: 'x' } },
        { name: 'p3', kwargs: { cmd: 'x' } },
        { name: 'sink', depends_on: ['p1', 'p2', 'p3'], kwargs: { cmd: 'x' } },
      ],
    });
    if (!r.ok) throw new Error('invalid test definition');
    return r.value;
  };

  it("checks a user's definition with the user rules", () => {
    expect(validateDefinition(user())).toMatchObject({ ok: true });
    const bad = { ...user(), tasks: user().tasks.map((t) => (t.name === 'sink' ? { ...t, dependsOn: ['p1', 'nope'] } : t)) };
    const checked = validateDefinition(bad);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.issues[0]).toMatchObject({ code: 'unknown-dependency', path: 'tasks[3].depends_on[1]' });
  });

  it('checks a definition the fan-in transform made with the engine rules, and refuses one changed into an invalid DAG', () => {
    const split = sequentializeFanIn(user(), 2);
    if (!split.ok) throw new Error('split failed');
    expect(validateDefinition(split.value)).toMatchObject({ ok: true, value: split.value });
    // A cycle through a merge node: no longer "already checked".
    const first = split.value.tasks[0]!.name;
    const merge = split.value.tasks.find((t) => t.name.startsWith('__'))!;
    const cyclic = { ...split.value, tasks: split.value.tasks.map((t) => (t.name === first ? { ...t, dependsOn: [merge.name] } : t)) };
    const checked = validateDefinition(cyclic);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.issues.map((i) => i.code)).toContain('cycle');
  });

  it('answers a value that is not a definition with an issue, never a throw', () => {
    const checked = validateDefinition({ name: 'w' } as unknown as WorkflowDefinition);
    expect(checked.ok).toBe(false);
  });
});
