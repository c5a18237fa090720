import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ENV_VALUE_PATTERN, workflowJsonSchema } from './schema';
import { validateWorkflow } from './validate';

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
    const schema = workflowJsonSchema() as {
      properties: { tasks: { items: { properties: Record<string, { pattern?: string; anyOf?: Array<{ pattern?: string }> }> } } };
    };
    const task = schema.properties.tasks.items.properties;
    const namePattern = new RegExp(task.name!.pattern!);
    expect(namePattern.test('prep/featurize')).toBe(true);
    for (const bad of ['__x', '/a', 'a//b', 'a/../b', 'a/./b', '.', 'a#b', 'a?', 'a\\b', ' ']) expect(namePattern.test(bad)).toBe(false);
    const queuePattern = new RegExp(task.queue!.anyOf![0]!.pattern!);
    for (const good of ['cpu', 'acct/gpu-a100', 'sb://ns/q']) expect(queuePattern.test(good)).toBe(true);
    for (const bad of ['CPU', 'a--b', 'ab', 'x/y/z']) expect(queuePattern.test(bad)).toBe(false);
  });

  it('carries the kwargs rules and the name limit the validator applies', () => {
    type Node = {
      properties?: Record<string, Node>;
      items?: Node;
      anyOf?: Node[];
      additionalProperties?: Node;
      propertyNames?: { pattern: string };
      pattern?: string;
      maxLength?: number;
    };
    const schema = workflowJsonSchema() as Node;
    expect(schema.properties!.name!.maxLength).toBe(1000);
    const kwargs = schema.properties!.tasks!.items!.properties!.kwargs!;
    expect(new RegExp(kwargs.propertyNames!.pattern).test('__x')).toBe(false);
    expect(Object.keys(kwargs.properties!).sort()).toEqual(['bg_dirsync_to', 'cmd', 'cwd', 'env']);
    const env = kwargs.properties!.env!.anyOf![0]!;
    const envName = new RegExp(env.propertyNames!.pattern);
    for (const [name, ok] of [
      ['PATH', true],
      ['', false],
      ['A=B', false],
      ['A\u0000', false],
    ] as const)
      expect(envName.test(name)).toBe(ok);
    expect(env.additionalProperties!.anyOf![0]!.pattern).toBe(ENV_VALUE_PATTERN);
  });

  it('has the env value pattern accept exactly the values the validator accepts', () => {
    const pattern = new RegExp(ENV_VALUE_PATTERN);
    const value = fc.oneof(
      fc.string({ unit: fc.constantFrom('$', '{', '}', ' ', 'secrets', '.', 'A', '1', '_', '\u0000', 'x', '\t', 'secret') }),
      fc.constantFrom('${{ secrets.A }}', 'a${{secrets._b1}}c', '${{ secrets.1 }}', '${{ secrets.A', '$${{ secrets.A }}', '${ {', '\u0000'),
    );
    fc.assert(
      fc.property(value, (v) => {
        const accepted = validateWorkflow({ name: 'w', tasks: [{ name: 'a', kwargs: { cmd: 'true', env: { V: v } } }] }).ok;
        expect(pattern.test(v)).toBe(accepted);
      }),
      { numRuns: 1000 },
    );
  });
});
