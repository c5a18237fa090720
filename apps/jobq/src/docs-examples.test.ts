import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { workflowJsonSchema } from '@jobq/dag-core';
import { resolveConfig } from './config';
import { loadWorkflowFile } from './workflow-file';
import { runCli } from './test-helpers/cli';
import type { RunReport } from './commands/workflow/run';

// Every YAML of the guide is checked (docs/README.md, "Keeping the guide true"): a ```yaml block is
// a whole workflow and validates; ```yaml run also runs on the embedded stack; ```yaml jobq.yaml is
// a configuration file and loads. YAML files under docs/ are workflows.

const ROOT = join(__dirname, '..', '..', '..');
const DOCS = join(ROOT, 'docs');

type Kind = 'workflow' | 'run' | 'config';

interface Example {
  /** `docs/FILE.md:LINE` of the opening fence, or the file's path. */
  where: string;
  kind: Kind;
  text: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

/** The YAML of a markdown file: fenced blocks whose info string starts with `yaml` or `yml`. */
function yamlBlocks(markdown: string, name: string): Example[] {
  const blocks: Example[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(\S*)\s*(.*)$/.exec(lines[i] ?? '');
    if (!open) continue;
    const [, indent = '', fence = '```', lang = '', rest = ''] = open;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i] ?? '').trimStart().startsWith(fence); i++) body.push((lines[i] ?? '').slice(indent.length));
    if (lang !== 'yaml' && lang !== 'yml') continue;
    const info = rest.trim();
    const kind: Kind | undefined = info === '' ? 'workflow' : info === 'run' ? 'run' : info === 'jobq.yaml' ? 'config' : undefined;
    if (kind === undefined)
      throw new Error(`${name}:${start + 1}: unknown yaml block kind "${info}" (expected none, "run" or "jobq.yaml")`);
    blocks.push({ where: `${name}:${start + 1}`, kind, text: `${body.join('\n')}\n` });
  }
  return blocks;
}

function collectExamples(): Example[] {
  const examples: Example[] = [];
  for (const path of filesUnder(DOCS).sort()) {
    const name = relative(ROOT, path);
    if (path.endsWith('.md')) examples.push(...yamlBlocks(readFileSync(path, 'utf8'), name));
    else if (/\.ya?ml$/.test(path)) examples.push({ where: name, kind: 'workflow', text: readFileSync(path, 'utf8') });
  }
  return examples;
}

let dir: string;
let examples: Example[];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'jobq-docs-'));
  examples = collectExamples();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fileFor(example: Example): string {
  const path = join(dir, `${basename(example.where).replace(/[^A-Za-z0-9.-]/g, '_')}.yaml`);
  writeFileSync(path, example.text);
  return path;
}

describe('the YAML of docs/', () => {
  it('finds the blocks of a page and tells their kinds apart', () => {
    const page = [
      '# t',
      '```yaml',
      'name: a',
      '```',
      '```yaml run',
      'name: b',
      '```',
      '```yaml jobq.yaml',
      'connection: {}',
      '```',
      '```json',
      '{}',
      '```',
    ].join('\n');
    expect(yamlBlocks(page, 'p.md').map((b) => [b.where, b.kind, b.text])).toEqual([
      ['p.md:2', 'workflow', 'name: a\n'],
      ['p.md:5', 'run', 'name: b\n'],
      ['p.md:8', 'config', 'connection: {}\n'],
    ]);
    expect(() => yamlBlocks('```yaml fragment\nx: 1\n```\n', 'p.md')).toThrow('p.md:1: unknown yaml block kind "fragment"');
  });

  it('every workflow validates', () => {
    const workflows = examples.filter((e) => e.kind !== 'config');
    expect(workflows.length).toBeGreaterThanOrEqual(6);
    const problems = workflows.flatMap((example) => {
      const loaded = loadWorkflowFile(fileFor(example));
      return loaded.ok ? [] : [`${example.where}: ${loaded.lines.join('; ')}`];
    });
    expect(problems).toEqual([]);
  });

  it('a broken workflow block is reported with its page and line', () => {
    const [broken] = yamlBlocks('text\n```yaml\nname: x\ntasks:\n  - name: a\n    depends_on: [b]\n```\n', 'docs/x.md');
    const loaded = loadWorkflowFile(fileFor(broken as Example));
    expect(loaded.ok).toBe(false);
    expect(loaded.lines.join('\n')).toContain('unknown-dependency');
  });

  it('every configuration file loads', () => {
    const configs = examples.filter((e) => e.kind === 'config');
    expect(configs.length).toBeGreaterThanOrEqual(1);
    for (const example of configs) {
      const config = resolveConfig({ configPath: fileFor(example) }, {}, dir);
      expect(config.prefix).not.toBeNull();
    }
  });

  it('the workflow language reference names every field of the schema', () => {
    const reference = readFileSync(join(DOCS, 'workflow-language.md'), 'utf8');
    const schema = workflowJsonSchema() as {
      properties: Record<string, unknown> & { tasks: { items: { properties: Record<string, unknown> } } };
    };
    const fields = [...Object.keys(schema.properties), ...Object.keys(schema.properties.tasks.items.properties)];
    expect(fields).toEqual(expect.arrayContaining(['name', 'tasks', 'depends_on', 'retry_backoff', 'timeout_s']));
    expect(fields.filter((field) => !reference.includes(`| \`${field}\` |`))).toEqual([]);
  });

  it('the runnable workflows run to completion on the embedded stack', async () => {
    const runnable = examples.filter((e) => e.kind === 'run');
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    // Side by side: each run is its own embedded stack on random loopback ports.
    const outcomes = await Promise.all(
      runnable.map(async (example) => {
        const result = await runCli(['workflow', 'run', fileFor(example), '--json', '--workers', '1'], { cwd: dir });
        const report = JSON.parse(result.stdout || 'null') as RunReport | null;
        return { where: example.where, code: result.code, status: report?.status, stderr: result.code === 0 ? '' : result.stderr };
      }),
    );
    expect(outcomes).toEqual(runnable.map((e) => ({ where: e.where, code: 0, status: 'completed', stderr: '' })));
  });
});
