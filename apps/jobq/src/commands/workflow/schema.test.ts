import { describe, expect, it } from '@jest/globals';
import { cleanEnv, runCli } from '../../test-helpers/cli';

describe('jobq workflow schema', () => {
  it('prints the JSON Schema of workflow files with no configuration', async () => {
    const result = await runCli(['workflow', 'schema'], { env: cleanEnv() });
    expect(result.code).toBe(0);
    const schema = JSON.parse(result.stdout) as { $schema: string; type: string; properties: Record<string, unknown> };
    expect(schema.$schema).toContain('json-schema.org');
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['name', 'tasks']));
    expect(result.stderr).toBe('');
  });
});
