import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The layers of the repository are one table (scripts/layers.mjs); eslint.config.mjs builds each
// package's import rules from it. Check that every rule fires on what its package may not import
// and lets through what it may, that the table covers every package and allows every declared
// dependency, and that docs/architecture.md shows it.
const repoRoot = resolve(__dirname, '../..');

interface PackageLayer {
  name: string;
  dir: string;
  layer: string;
  imports: string[] | '*';
  azure: boolean;
  node: boolean;
  tests?: boolean;
  except?: Record<string, string[]>;
}

interface LintMessage {
  ruleId: string | null;
  line: number;
  message: string;
}

/** Runs an ES module script with node (the table and ESLint's config are ES modules, jest runs CommonJS). */
function runModule(script: string, input = ''): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: repoRoot,
    input,
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  }).toString();
}

const { packages, doc } = JSON.parse(
  runModule(`
    import { PACKAGES, architectureTable } from './scripts/layers.mjs';
    process.stdout.write(JSON.stringify({ packages: PACKAGES, doc: architectureTable() }));
  `),
) as { packages: PackageLayer[]; doc: string };

/**
 * Lints each text as if it were the file at its path, with the repository's config, keeping only
 * the `no-restricted-*` rules (so no type information is needed: one process, a few seconds).
 */
function lintAll(cases: Array<{ filePath: string; code: string }>): LintMessage[][] {
  const out = runModule(
    `
    import { ESLint } from 'eslint';
    const cases = JSON.parse(await new Promise((done) => { let t = ''; process.stdin.on('data', (c) => (t += c)); process.stdin.on('end', () => done(t)); }));
    const eslint = new ESLint({
      cwd: process.cwd(),
      overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
      ruleFilter: ({ ruleId }) => ruleId.startsWith('no-restricted-'),
    });
    const results = [];
    for (const c of cases) {
      const [result] = await eslint.lintText(c.code, { filePath: c.filePath });
      results.push(result.messages.map((m) => ({ ruleId: m.ruleId, line: m.line, message: m.message })));
    }
    process.stdout.write(JSON.stringify(results));
  `,
    JSON.stringify(cases),
  );
  return JSON.parse(out) as LintMessage[][];
}

/** A source file of the package that its rule covers (not a test), to lint extra lines as if they were in it. */
function sampleFile(entry: PackageLayer): string {
  const root = entry.dir === 'deploy/k8s' ? entry.dir : `${entry.dir}/src`;
  const file = readdirSync(join(repoRoot, root))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
    .sort()[0];
  if (file === undefined) throw new Error(`no source file in ${root}`);
  return `${root}/${file}`;
}

interface Line {
  code: string;
  forbidden: boolean;
}

/** The lines to try in a file of `entry`, each with whether the table forbids it there. */
function linesFor(entry: PackageLayer, extra: readonly string[] = []): Line[] {
  const allowed = entry.imports === '*' ? null : new Set([entry.name, ...entry.imports, ...extra]);
  const others = packages.map((p) => p.name).filter((name) => name !== entry.name);
  const lines: Line[] = others.map((name) => ({ code: `import '${name}';`, forbidden: allowed !== null && !allowed.has(name) }));
  const firstForbidden = others.find((name) => allowed !== null && !allowed.has(name));
  const firstAllowed = others.find((name) => allowed === null || allowed.has(name));
  if (firstAllowed !== undefined) {
    lines.push({ code: `import '${firstAllowed}/testing';`, forbidden: false });
    if (entry.name !== '@jobq/dag-core') {
      lines.push({ code: `export const allowedRequire = require('${firstAllowed}');`, forbidden: false });
      lines.push({ code: `export const allowedImport = import('${firstAllowed}');`, forbidden: false });
    }
  }
  if (firstForbidden !== undefined) {
    lines.push({ code: `import '${firstForbidden}/testing';`, forbidden: true });
    lines.push({ code: `export const forbiddenRequire = require('${firstForbidden}');`, forbidden: true });
    lines.push({ code: `export const forbiddenImport = import('${firstForbidden}');`, forbidden: true });
  }
  lines.push({ code: "import '@azure/storage-blob';", forbidden: !entry.azure });
  lines.push({ code: "export { TableClient } from '@azure/data-tables';", forbidden: !entry.azure });
  lines.push({ code: "export const azureRequire = require('@azure/identity');", forbidden: !entry.azure });
  lines.push({ code: "import 'node:fs';", forbidden: !entry.node });
  lines.push({ code: "import 'path';", forbidden: !entry.node });
  lines.push({ code: "import './no-such-sibling';", forbidden: false });
  return lines;
}

describe('the layers table and its lint rules', () => {
  it('covers every package of the workspace, in its folder', () => {
    const dirs = ['packages', 'apps']
      .flatMap((parent) => readdirSync(join(repoRoot, parent)).map((d) => `${parent}/${d}`))
      .concat(['bench', 'test-e2e', 'deploy/k8s'])
      .filter((dir) => existsSync(join(repoRoot, dir, 'package.json')));
    const names = dirs.map((dir) => ({
      name: (JSON.parse(readFileSync(join(repoRoot, dir, 'package.json'), 'utf8')) as { name: string }).name,
      dir,
    }));
    expect(packages.map((p) => ({ name: p.name, dir: p.dir })).sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      names.sort((a, b) => a.name.localeCompare(b.name)),
    );
  });

  it('allows every @jobq package a package depends on', () => {
    for (const entry of packages) {
      const manifest = JSON.parse(readFileSync(join(repoRoot, entry.dir, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, string> | undefined
      >;
      const declared = Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }).filter((name) =>
        name.startsWith('@jobq/'),
      );
      const notAllowed = entry.imports === '*' ? [] : declared.filter((name) => !(entry.imports as string[]).includes(name));
      expect({ package: entry.name, notAllowed }).toEqual({ package: entry.name, notAllowed: [] });
    }
  });

  it('is the table of docs/architecture.md', () => {
    expect(readFileSync(join(repoRoot, 'docs/architecture.md'), 'utf8')).toContain(`${doc}\n`);
  });

  it("fires on every import a package's layer forbids (import, export, require, import()) and on nothing else", () => {
    const cases: Array<{ name: string; filePath: string; original: string; lines: Line[] }> = [];
    for (const entry of packages) {
      const files: Array<[string, string[]]> = [
        [sampleFile(entry), []],
        ...Object.entries(entry.except ?? {}).map(([file, extra]): [string, string[]] => [`${entry.dir}/${file}`, extra]),
      ];
      for (const [filePath, extra] of files) {
        const original = readFileSync(join(repoRoot, filePath), 'utf8').replace(/\n*$/, '\n');
        cases.push({ name: entry.name, filePath, original, lines: linesFor(entry, extra) });
      }
    }
    const results = lintAll(
      cases.map((c) => ({ filePath: join(repoRoot, c.filePath), code: `${c.original}${c.lines.map((l) => l.code).join('\n')}\n` })),
    );
    cases.forEach((c, i) => {
      const messages = results[i]!;
      const first = c.original.split('\n').length;
      // Nothing fires on the file's own lines.
      expect({ file: c.filePath, messages: messages.filter((m) => m.line < first) }).toEqual({ file: c.filePath, messages: [] });
      c.lines.forEach((line, j) => {
        const fired = messages.filter((m) => m.line === first + j).map((m) => m.ruleId);
        expect({ file: c.filePath, code: line.code, fires: fired.length > 0 }).toEqual({
          file: c.filePath,
          code: line.code,
          fires: line.forbidden,
        });
      });
    });
    // The worker's deprecated re-export may import @jobq/task; its other files may not.
    const worker = cases.filter((c) => c.name === '@jobq/worker');
    expect(worker.map((c) => c.lines.find((l) => l.code === "import '@jobq/task';")?.forbidden)).toEqual([true, false]);
  }, 120_000);
});
