#!/usr/bin/env node
// Writes the command reference of docs/cli.md (between its <!-- commands --> markers) with oclif's
// readme generator, from the built commands (run after the build, which writes the manifest).
// With --check [FILE] it writes nothing and exits 1 when docs/cli.md (or FILE) differs from what it
// would write.
const { spawnSync } = require('node:child_process');
const { copyFileSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');

const root = join(__dirname, '..');
const reference = join(root, '..', '..', 'docs', 'cli.md');
const oclif = join(dirname(require.resolve('oclif/package.json')), 'bin', 'run.js');

/**
 * Runs the readme generator on `path`: a fixed width so the text is the same on every terminal, and
 * without oclif's own check for a newer oclif (a background request), so it runs offline.
 */
function generate(path) {
  const result = spawnSync(process.execPath, [oclif, 'readme', '--readme-path', path, '--no-source-links', '--no-aliases'], {
    cwd: root,
    env: { ...process.env, COLUMNS: '120', OCLIF_SKIP_NEW_VERSION_CHECK: 'true' },
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    process.stderr.write(result.stderr || result.stdout);
    throw new Error(`oclif readme failed with exit code ${result.status}`);
  }
}

const checkAt = process.argv.indexOf('--check');
if (checkAt >= 0) {
  const target = process.argv[checkAt + 1] ?? reference;
  const dir = mkdtempSync(join(tmpdir(), 'jobq-cli-reference-'));
  try {
    const copy = join(dir, 'cli.md');
    copyFileSync(target, copy);
    generate(copy);
    if (readFileSync(copy, 'utf8') !== readFileSync(target, 'utf8')) {
      process.stderr.write('docs/cli.md is stale: run "pnpm --filter @jobq/cli run docs:cli" after "pnpm build" and commit it\n');
      process.exitCode = 1;
    } else {
      process.stdout.write('docs/cli.md is up to date\n');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  generate(reference);
  process.stdout.write('docs/cli.md written\n');
}
