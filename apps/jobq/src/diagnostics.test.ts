import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { diagnosticHeader, renderDiagnostics, sortDiagnostics, type Diagnostic } from './diagnostics';
import { loadWorkflowFile } from './workflow-file';

// A workflow with a mistake of each kind "did you mean" covers, and two kwargs of the wrong type.
const FIXTURE = join(__dirname, 'testdata', 'mistakes.yaml');

function loadFixture() {
  const loaded = loadWorkflowFile(FIXTURE);
  expect(loaded.ok).toBe(false);
  return { ...loaded, path: 'mistakes.yaml' };
}

/** The golden text: what `workflow validate` prints for the fixture when stderr is not a terminal (validate.test.ts checks the CLI prints it). */
const MISTAKES_PLAIN = readFileSync(join(__dirname, 'testdata', 'mistakes.stderr.txt'), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('mistakes.yaml:'));

describe('diagnostics of a workflow file', () => {
  it('not in a terminal: one file:line:col: severity: code: message (hint) line each, sorted by line', () => {
    expect(MISTAKES_PLAIN).toHaveLength(8);
    expect(renderDiagnostics(loadFixture(), { tty: false })).toEqual(MISTAKES_PLAIN);
  });

  it('in a terminal: each followed by its source line and a caret under the column', () => {
    expect(renderDiagnostics(loadFixture(), { tty: true }).join('\n')).toBe(
      [
        MISTAKES_PLAIN[0],
        '  5 |       command: python prepare.py',
        '    |       ^',
        '',
        MISTAKES_PLAIN[1],
        '  7 |     depend_on: [prepare]',
        '    |     ^',
        '',
        MISTAKES_PLAIN[2],
        '  8 |     kwargs: {cmd: python featurize.py, environment: {N: "3"}}',
        '    |                                        ^',
        '',
        MISTAKES_PLAIN[3],
        ' 10 |     depends_on: [featurise]',
        '    |                  ^',
        '',
        MISTAKES_PLAIN[4],
        ' 12 |       cmd: [python, train.py]',
        '    |            ^',
        '',
        MISTAKES_PLAIN[5],
        ' 13 |       env: {LR: [0.1]}',
        '    |                 ^',
        '',
        MISTAKES_PLAIN[6],
        ' 16 |     condition: inputs.train.ok && !inputs.train.skipped',
        '    |                                ^',
        '',
        MISTAKES_PLAIN[7],
        ' 16 |     condition: inputs.train.ok && !inputs.train.skipped',
        '    |                                   ^',
        '',
      ].join('\n'),
    );
  });
});

const d = (extra: Partial<Diagnostic>): Diagnostic => ({
  severity: 'error',
  code: 'x',
  message: 'm',
  path: '',
  line: null,
  column: null,
  hint: null,
  ...extra,
});

describe('rendering', () => {
  it('keeps a problem without a place readable, naming its path', () => {
    expect(diagnosticHeader('w.yaml', d({ code: 'unreadable', message: 'no such file' }))).toBe('w.yaml: error: unreadable: no such file');
    expect(diagnosticHeader('w.yaml', d({ code: 'bad-fan-in', message: 'too wide', path: 'tasks[2]' }))).toBe(
      'w.yaml: error: bad-fan-in: too wide (at tasks[2])',
    );
    expect(renderDiagnostics({ path: 'w.yaml', diagnostics: [d({})], source: 'name: w\n' }, { tty: true })).toEqual([
      'w.yaml: error: x: m',
    ]);
  });

  it('sorts by line then column, placeless first, an error before a warning at the same place', () => {
    const sorted = sortDiagnostics([
      d({ code: 'c', line: 3, column: 9 }),
      d({ code: 'w', severity: 'warning', line: 2, column: 5 }),
      d({ code: 'e', line: 2, column: 5 }),
      d({ code: 'a', line: 2, column: 1 }),
      d({ code: 'file' }),
    ]);
    expect(sorted.map((x) => x.code)).toEqual(['file', 'a', 'e', 'w', 'c']);
  });

  it('lines the caret up under tabs, and shows control characters as ?', () => {
    const source = 'a\n\tkey:\u001b[31m x\n';
    expect(renderDiagnostics({ path: 'f', diagnostics: [d({ line: 2, column: 12 })], source }, { tty: true })).toEqual([
      'f:2:12: error: x: m',
      ' 2 | \tkey:?[31m x',
      '   | \t          ^',
      '',
    ]);
  });

  it('cuts a long source line to a window around the column', () => {
    const source = `${'a'.repeat(300)}X${'b'.repeat(300)}`;
    const [, shown, caret] = renderDiagnostics({ path: 'f', diagnostics: [d({ line: 1, column: 301 })], source }, { tty: true });
    expect(shown!.length).toBeLessThan(180);
    expect(shown![caret!.indexOf('^')]).toBe('X');
  });
});

describe('docs/workflow-language.md#diagnostics', () => {
  it('shows the diagnostics of the fixture as the terminal prints them', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'workflow-language.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Diagnostics'));
    const block = /```text\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    const rendered = renderDiagnostics(loadFixture(), { tty: true }).join('\n');
    // Whole diagnostics (header, source line, caret) in the order the CLI prints them.
    const shown = block!.trimEnd().split('\n\n');
    expect(shown.length).toBeGreaterThanOrEqual(3);
    let from = 0;
    for (const diagnostic of shown) {
      const at = rendered.indexOf(diagnostic, from);
      expect(at).toBeGreaterThanOrEqual(from);
      from = at + diagnostic.length;
    }
  });
});
