import { describe, expect, it } from '@jest/globals';
import { workflowJsonSchema } from './schema';

describe('workflowJsonSchema', () => {
  it('is draft 2020-12 and matches the committed snapshot', () => {
    const schema = workflowJsonSchema();
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema).toMatchSnapshot();
  });

  it('returns a copy each time', () => {
    const first = workflowJsonSchema();
    first.title = 'changed';
    expect(workflowJsonSchema().title).toBe('jobq workflow definition');
  });

  it('carries the same name and queue rules the validator applies', () => {
    const schema = workflowJsonSchema() as { properties: { tasks: { items: { properties: Record<string, { pattern?: string; anyOf?: Array<{ pattern?: string }> }> } } } };
    const task = schema.properties.tasks.items.properties;
    const namePattern = new RegExp(task.name!.pattern!);
    expect(namePattern.test('prep/featurize')).toBe(true);
    for (const bad of ['__x', '/a', 'a//b', 'a/../b', 'a/./b', '.', 'a#b', 'a?', 'a\\b', ' ']) expect(namePattern.test(bad)).toBe(false);
    const queuePattern = new RegExp(task.queue!.anyOf![0]!.pattern!);
    for (const good of ['cpu', 'acct/gpu-a100', 'sb://ns/q']) expect(queuePattern.test(good)).toBe(true);
    for (const bad of ['CPU', 'a--b', 'ab', 'x/y/z']) expect(queuePattern.test(bad)).toBe(false);
  });
});
