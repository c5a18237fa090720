import { describe, expect, it } from '@jest/globals';
import { encodeDefinition } from '../runtime/definition-codec';
import { toRawDefinition } from './convert';
import { MAX_RETRY_DELAY_S } from './limits';
import { parseWorkflow } from './parse';
import { workflowJsonSchema } from './schema';
import { delayBeforeAttempt, retryDelayS } from './types';
import { validateWorkflow } from './validate';

function parse(text: string) {
  return parseWorkflow(text, { filename: 'w.yaml' });
}

describe('retry delays and the workflow deadline in definitions', () => {
  it('reads the task fields, the workflow defaults and timeout_s, and fills the defaults', () => {
    const result = parse(
      [
        'name: w',
        'default_retry_delay_s: 30',
        'default_retry_backoff: 1.5',
        'default_retry_max_delay_s: 600',
        'timeout_s: 3600',
        'tasks:',
        '  - { name: a, kwargs: { cmd: "true" }, num_retries: 3, retry_delay_s: 10, retry_backoff: 2, retry_max_delay_s: 25 }',
        '  - { name: b, kwargs: { cmd: "true" }, num_retries: 3 }',
        '',
      ].join('\n'),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const d = result.value;
    expect(d).toMatchObject({ defaultRetryDelayS: 30, defaultRetryBackoff: 1.5, defaultRetryMaxDelayS: 600, timeoutS: 3600 });
    expect(d.tasks[0]).toMatchObject({ retryDelayS: 10, retryBackoff: 2, retryMaxDelayS: 25 });
    expect(d.tasks[1]).toMatchObject({ retryDelayS: null, retryBackoff: null, retryMaxDelayS: null });
    // Attempt k waits min(delay × backoff^(k−2), max): nothing before the first attempt.
    expect([1, 2, 3, 4].map((k) => retryDelayS(d, d.tasks[0]!, k))).toEqual([0, 10, 20, 25]);
    // b takes the workflow's defaults.
    expect([1, 2, 3, 4].map((k) => retryDelayS(d, d.tasks[1]!, k))).toEqual([0, 30, 45, 67.5]);
    const plain = validateWorkflow({ name: 'w', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });
    if (!plain.ok) throw new Error('invalid');
    expect(plain.value).toMatchObject({ defaultRetryDelayS: 0, defaultRetryBackoff: 1, defaultRetryMaxDelayS: null, timeoutS: null });
    expect(retryDelayS(plain.value, plain.value.tasks[0]!, 2)).toBe(0);
  });

  it('round-trips through the stored form, which leaves the new fields out while they hold their defaults', () => {
    const used = validateWorkflow({
      name: 'w',
      timeout_s: 60,
      default_retry_backoff: 3,
      tasks: [{ name: 'a', kwargs: { cmd: 'true' }, num_retries: 1, retry_delay_s: 5, retry_max_delay_s: 9 }],
    });
    if (!used.ok) throw new Error('invalid');
    expect(validateWorkflow(toRawDefinition(used.value))).toMatchObject({ ok: true, value: used.value });

    // A definition that uses none of them is stored (and hashed) exactly as before they existed.
    const plain = validateWorkflow({ name: 'w', tasks: [{ name: 'a', kwargs: { cmd: 'true' } }] });
    if (!plain.ok) throw new Error('invalid');
    expect(encodeDefinition(plain.value)).toBe(
      '{"default_queue":"default","default_task_timeout_s":null,"max_parallelism":null,"name":"w","result_policy":"all_sinks_succeed",' +
        '"tasks":[{"condition":null,"dep_policy":"all","depends_on":[],"kwargs":{"cmd":"true"},"name":"a","num_retries":0,"queue":null,"timeout_s":null}]}',
    );
  });

  it('reports bad values with the file position: negative, backoff below 1, over 7 days, not numbers', () => {
    const result = parse(
      [
        'name: w',
        'default_retry_max_delay_s: 604801',
        'timeout_s: 0',
        'tasks:',
        '  - name: a',
        '    kwargs: { cmd: "true" }',
        '    retry_delay_s: -1',
        '    retry_backoff: 0.5',
        '    retry_max_delay_s: 700000',
        '  - name: b',
        '    kwargs: { cmd: "true" }',
        '    retry_delay_s: 1.5',
        '    retry_backoff: fast',
        '',
      ].join('\n'),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const found = result.issues.map(({ code, path, line, column }) => ({ code, path, line, column }));
    expect(found).toEqual(
      expect.arrayContaining([
        { code: 'bad-retry-delay', path: 'default_retry_max_delay_s', line: 2, column: 28 },
        { code: 'out-of-range', path: 'timeout_s', line: 3, column: 12 },
        { code: 'bad-retry-delay', path: 'tasks[0].retry_delay_s', line: 7, column: 20 },
        { code: 'bad-retry-delay', path: 'tasks[0].retry_backoff', line: 8, column: 20 },
        { code: 'bad-retry-delay', path: 'tasks[0].retry_max_delay_s', line: 9, column: 24 },
        { code: 'bad-retry-delay', path: 'tasks[1].retry_delay_s', line: 12, column: 20 },
        { code: 'bad-retry-delay', path: 'tasks[1].retry_backoff', line: 13, column: 20 },
      ]),
    );
    expect(found).toHaveLength(7);
    const message = (path: string) => result.issues.find((i) => i.path === path)?.message;
    expect(message('tasks[0].retry_delay_s')).toBe(
      'retry_delay_s must be an integer from 0 to 604800 (7 days, the longest a queue delays a message) or null, got the integer -1',
    );
    expect(message('tasks[0].retry_backoff')).toBe('retry_backoff must be a number ≥ 1 or null, got the number 0.5');
    expect(message('tasks[0].retry_max_delay_s')).toContain('got the integer 700000');
    expect(message('tasks[1].retry_backoff')).toContain('got the string "fast"');
  });

  it('refuses retries whose backoff would take them past 7 days, at the field that makes it so', () => {
    const text = (extra: string) =>
      [
        'name: w',
        'tasks:',
        '  - name: a',
        '    kwargs: { cmd: "true" }',
        '    num_retries: 5',
        '    retry_delay_s: 86400',
        `    ${extra}`,
        '',
      ].join('\n');
    // 86 400 × 2^4 = 1 382 400 s for the fifth retry.
    const grown = parse(text('retry_backoff: 2'));
    expect(grown.ok).toBe(false);
    if (!grown.ok) {
      expect(grown.issues).toEqual([
        expect.objectContaining({
          code: 'bad-retry-delay',
          path: 'tasks[0].retry_backoff',
          line: 7,
          column: 20,
          message: expect.stringMatching(
            /^task "a": retry 5 would wait 1382400 s \(retry_delay_s 86400 × retry_backoff 2\^4\), longer than a queue can delay a message \(604800 s, 7 days\)/,
          ),
        }),
      ]);
    }
    // A cap keeps every retry within the bound; so does a backoff small enough.
    expect(parse(text('retry_max_delay_s: 604800')).ok).toBe(true);
    expect(parse(text('retry_backoff: 1.5')).ok).toBe(true);
    // The workflow's defaults count too; the issue points at the task's own field, else at its num_retries.
    const byDefault = validateWorkflow({
      name: 'w',
      default_retry_backoff: 10,
      tasks: [{ name: 'a', kwargs: { cmd: 'true' }, num_retries: 3, retry_delay_s: 7000 }],
    });
    expect(byDefault.ok).toBe(false);
    if (!byDefault.ok)
      expect(byDefault.issues).toEqual([expect.objectContaining({ code: 'bad-retry-delay', path: 'tasks[0].retry_delay_s' })]);
    const onlyDefaults = validateWorkflow({
      name: 'w',
      default_retry_delay_s: 7000,
      default_retry_backoff: 10,
      tasks: [{ name: 'a', kwargs: { cmd: 'true' }, num_retries: 3 }],
    });
    expect(!onlyDefaults.ok && onlyDefaults.issues[0]).toMatchObject({ code: 'bad-retry-delay', path: 'tasks[0].num_retries' });
    // Without retries nothing waits.
    expect(
      validateWorkflow({
        name: 'w',
        default_retry_delay_s: MAX_RETRY_DELAY_S,
        default_retry_backoff: 10,
        tasks: [{ name: 'a', kwargs: { cmd: 'true' } }],
      }).ok,
    ).toBe(true);
  });

  it('caps every delay at 7 days at run time, whatever the settings', () => {
    expect(delayBeforeAttempt({ delayS: 100, backoff: 1e308, maxDelayS: null }, 5)).toBe(MAX_RETRY_DELAY_S);
    expect(delayBeforeAttempt({ delayS: 100, backoff: 2, maxDelayS: 0 }, 3)).toBe(0);
    expect(delayBeforeAttempt({ delayS: 0, backoff: 2, maxDelayS: null }, 3)).toBe(0);
  });

  it('states the new fields and their bounds in the JSON Schema', () => {
    type Node = { properties: Record<string, Node>; items: Node; anyOf?: Array<{ type?: string; minimum?: number; maximum?: number }> };
    const schema = workflowJsonSchema() as unknown as Node;
    const task = schema.properties.tasks!.items.properties;
    expect(task.retry_delay_s!.anyOf![0]).toMatchObject({ type: 'integer', minimum: 0, maximum: MAX_RETRY_DELAY_S });
    expect(task.retry_max_delay_s!.anyOf![0]).toMatchObject({ type: 'integer', minimum: 0, maximum: MAX_RETRY_DELAY_S });
    expect(task.retry_backoff!.anyOf![0]).toMatchObject({ type: 'number', minimum: 1 });
    for (const key of ['default_retry_delay_s', 'default_retry_backoff', 'default_retry_max_delay_s', 'timeout_s'])
      expect(schema.properties[key]).toBeDefined();
    expect(schema.properties.timeout_s!.anyOf![0]).toMatchObject({ type: 'integer', minimum: 1 });
  });
});
