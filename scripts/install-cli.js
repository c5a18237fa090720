#!/usr/bin/env node
// Installs the jobq command line from this clone as a global `jobq` (README.md#install):
//
//   pnpm install:cli [--prefix DIR] [--offline] [--no-build]
//
// The @jobq/* packages are workspace packages, not published: `pnpm deploy` copies @jobq/cli with
// its production dependencies (the workspace packages as copies, the rest from the pnpm store the
// workspace install filled, no registry needed) into DIR/lib/jobq, and DIR/bin/jobq links to its
// bin/run.js. DIR defaults to npm's global prefix (`npm prefix -g`), where `npm i -g` would put it.
// Running it again replaces the installed copy.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, renameSync, rmSync, symlinkSync, lstatSync, accessSync, constants } = require('node:fs');
const { delimiter, join, relative, resolve } = require('node:path');

const root = resolve(__dirname, '..');

function fail(message) {
  process.stderr.write(`install:cli: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = { prefix: null, offline: false, build: true };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--prefix') {
      if (argv[i + 1] === undefined) fail('--prefix needs a directory');
      options.prefix = argv[(i += 1)];
    } else if (arg.startsWith('--prefix=')) options.prefix = arg.slice('--prefix='.length);
    else if (arg === '--offline') options.offline = true;
    else if (arg === '--no-build') options.build = false;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: pnpm install:cli [--prefix DIR] [--offline] [--no-build]\n');
      process.exit(0);
    } else fail(`unknown argument "${arg}" (usage: pnpm install:cli [--prefix DIR] [--offline] [--no-build])`);
  }
  return options;
}

/** Runs a command in the clone; its output goes to stderr so stdout keeps only the result line. */
function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' });
  if (result.error) fail(`${command} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0) fail(`"${command} ${args.join(' ')}" failed with exit code ${result.status}`);
}

function npmGlobalPrefix() {
  const result = spawnSync('npm', ['prefix', '-g'], { encoding: 'utf8', shell: process.platform === 'win32' });
  const prefix = result.status === 0 ? result.stdout.trim() : '';
  if (prefix === '') fail("could not read npm's global prefix (npm prefix -g): pass --prefix DIR");
  return prefix;
}

const options = parseArgs(process.argv.slice(2));
const prefix = resolve(options.prefix ?? npmGlobalPrefix());
const binDir = join(prefix, 'bin');
const libDir = join(prefix, 'lib');
const target = join(libDir, 'jobq');
const staging = join(libDir, `.jobq-${process.pid}`);
const link = join(binDir, 'jobq');

for (const dir of [binDir, libDir]) {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch {
    fail(`cannot write to ${dir}: pass a writable --prefix (e.g. --prefix ~/.local)`);
  }
}

if (options.build) run('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@jobq/cli...']);
if (!existsSync(join(root, 'apps', 'jobq', 'oclif.manifest.json'))) fail('apps/jobq is not built: run "pnpm build" first');

// pnpm 10 deploys a workspace package with its workspace dependencies injected (copied); the
// workspace itself keeps linking them, so the setting is given to this one command only.
rmSync(staging, { recursive: true, force: true });
run('pnpm', [
  '--config.inject-workspace-packages=true',
  '--filter',
  '@jobq/cli',
  'deploy',
  '--prod',
  ...(options.offline ? ['--offline'] : []),
  staging,
]);
rmSync(target, { recursive: true, force: true });
renameSync(staging, target);

let existing = null;
try {
  existing = lstatSync(link);
} catch {
  // nothing there yet
}
if (existing !== null) {
  if (!existing.isSymbolicLink()) fail(`${link} exists and is not a link: remove it first`);
  rmSync(link);
}
symlinkSync(relative(binDir, join(target, 'bin', 'run.js')), link);

process.stdout.write(`${link}\n`);
const onPath = (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && resolve(dir) === binDir);
process.stderr.write(`jobq installed: ${link} -> ${target}${onPath ? '' : ` (${binDir} is not on your PATH: add it)`}\n`);
