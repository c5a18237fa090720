// Every workflow in docs/matrix-and-params.md is validated here, and the tasks the text says it
// makes are the ones it makes, so the document cannot drift from the expansion.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseWorkflow } from './parse';

const DOC = join(__dirname, '..', '..', '..', '..', 'docs', 'matrix-and-params.md');

/** The YAML blocks of the document that are whole workflows (they start with `name:`), by name. */
function workflows(): Map<string, string> {
  const text = readFileSync(DOC, 'utf8');
  const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.startsWith('name:'));
  return new Map(blocks.map((b) => [/^name: (\S+)/.exec(b)![1]!, b]));
}

function taskNames(name: string): string[] {
  const result = parseWorkflow(workflows().get(name)!, { filename: `${name}.yaml` });
  if (!result.ok) throw new Error(result.issues.map((i) => `${i.line}:${i.column}: ${i.message}`).join('\n'));
  expect(result.warnings).toEqual([]);
  return result.value.tasks.map((t) => t.name);
}

describe('docs/matrix-and-params.md', () => {
  it('has only workflows that validate', () => {
    expect([...workflows().keys()]).toEqual(['sweep', 'report', 'grid', 'include-exclude']);
    for (const name of workflows().keys()) expect(taskNames(name).length).toBeGreaterThan(0);
  });

  it('says which tasks each matrix makes', () => {
    const text = readFileSync(DOC, 'utf8');
    const sweep = taskNames('sweep');
    expect(sweep).toHaveLength(8);
    expect(text).toContain(`six trainers named \`${sweep[1]}\` … \`${sweep[6]}\``);
    const flat = text.replace(/\s+/g, ' ');
    for (const name of ['grid', 'include-exclude']) {
      const names = taskNames(name).map((n) => `\`${n}\``);
      expect(flat).toContain(`makes ${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);
    }
  });
});
