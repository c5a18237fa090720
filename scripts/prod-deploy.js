// The production install of the CLI, as the container image makes it (deploy/README.md#images):
//
//   pnpm --filter @jobq/cli --prod deploy --legacy --no-optional OUT
//
// and how big it is. Used by the install budget test (apps/jobq/src/prod-install.test.ts) and the
// bench (bench/src/deploy-size.ts). Needs the workspace built (`pnpm build`): the @jobq packages
// are copied with their dist folders.
'use strict';
const { spawnSync } = require('node:child_process');
const { lstatSync, readdirSync } = require('node:fs');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');

/** The deploy command's arguments; `optional: false` is the image's `--no-optional`. */
function deployArgs(out, { optional = false } = {}) {
  return ['--filter', '@jobq/cli', '--prod', 'deploy', '--legacy', ...(optional ? [] : ['--no-optional']), out];
}

/** Runs the deploy into `out` (which must not exist); throws with pnpm's output on failure. */
function deployCli(out, options = {}) {
  const result = spawnSync('pnpm', deployArgs(out, options), { cwd: root, encoding: 'utf8', env: { ...process.env, CI: 'true' } });
  if (result.error) throw result.error;
  if (result.status !== 0)
    throw new Error(`pnpm deploy exited ${result.status}: ${(result.stderr || result.stdout).trim().split('\n').slice(-5).join(' | ')}`);
}

/**
 * The size of a deploy: `bytes` = the sum of its regular files' sizes (each inode once; what an
 * image layer holds, unlike `du`'s disk blocks), `packages` = the package folders of
 * `node_modules/.pnpm` (one per package version), and the names of those packages.
 */
function measureDeploy(out) {
  const seen = new Set();
  let bytes = 0;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const stat = lstatSync(path);
        if (seen.has(stat.ino)) continue;
        seen.add(stat.ino);
        bytes += stat.size;
      }
    }
  };
  walk(out);
  const store = join(out, 'node_modules', '.pnpm');
  const folders = readdirSync(store, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'node_modules')
    .map((e) => e.name);
  // `@scope+name@version…` → `@scope/name`, `name@version…` → `name`.
  const names = [...new Set(folders.map((f) => f.replace(/^(@?[^@]+)@.*$/, '$1').replace(/^@([^+]+)\+/, '@$1/')))].sort();
  return { bytes, packages: folders.length, names };
}

module.exports = { deployArgs, deployCli, measureDeploy };
