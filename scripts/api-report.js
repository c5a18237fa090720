#!/usr/bin/env node
// The API reports of the published packages (API Extractor): one `etc/<name>.api.md` per entry
// point of each package that is not private (`.` → `<name>.api.md`, `./wire` → `<name>-wire.api.md`);
// an application (`bin` and no `exports`, such as @jobq/cli) has none.
// They are committed, so a change to a public surface shows in review (README.md, "Public API reports").
//
//   node scripts/api-report.js --check    fail when a report is stale, missing or left over (pnpm test)
//   node scripts/api-report.js --update   write them again (pnpm api:update)
//
// Both read the packages' builds (dist/*.d.ts): `pnpm api:check` and `pnpm api:update` build first.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const UPDATE_COMMAND = 'pnpm api:update';
const root = path.resolve(__dirname, '..');
const mode = process.argv[2];
if (mode !== '--check' && mode !== '--update') {
  console.error('usage: node scripts/api-report.js --check|--update');
  process.exit(2);
}

// Loaded after the usage check: API Extractor brings its own TypeScript, which takes a moment.
const { CompilerState, Extractor, ExtractorConfig } = require('@microsoft/api-extractor');

/** The workspace folders of pnpm-workspace.yaml (plain `dir/*` and `dir` entries). */
function workspaceFolders() {
  const text = fs.readFileSync(path.join(root, 'pnpm-workspace.yaml'), 'utf8');
  const block = /^packages:\n((?:\s+-\s+.+\n?)+)/m.exec(text);
  if (!block) throw new Error('pnpm-workspace.yaml: no "packages:" list');
  const globs = block[1]
    .split('\n')
    .map((line) =>
      line
        .replace(/^\s+-\s+/, '')
        .replace(/["']/g, '')
        .trim(),
    )
    .filter(Boolean);
  const folders = [];
  for (const glob of globs) {
    if (glob.endsWith('/*')) {
      const parent = path.join(root, glob.slice(0, -2));
      for (const name of fs.readdirSync(parent).sort()) folders.push(path.join(parent, name));
    } else {
      folders.push(path.join(root, glob));
    }
  }
  return folders.filter((dir) => fs.existsSync(path.join(dir, 'package.json')));
}

/** The entry points of a package with their report names: its `exports` map, else its `types`. */
function entryPoints(dir, pkg) {
  const unscoped = pkg.name.replace(/^@[^/]+\//, '');
  const entries = [];
  if (pkg.exports && typeof pkg.exports === 'object') {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const types = target && typeof target === 'object' ? target.types : undefined;
      if (typeof types !== 'string') continue;
      const suffix = subpath === '.' ? '' : `-${subpath.replace(/^\.\//, '').replace(/[/*]/g, '-')}`;
      entries.push({ subpath, dts: path.join(dir, types), report: `${unscoped}${suffix}.api.md` });
    }
  } else if (typeof pkg.types === 'string') {
    entries.push({ subpath: '.', dts: path.join(dir, pkg.types), report: `${unscoped}.api.md` });
  }
  return entries;
}

function configFor(dir, entry, tempFolder) {
  return {
    projectFolder: dir,
    mainEntryPointFilePath: entry.dts,
    newlineKind: 'lf',
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          module: 'node16',
          moduleResolution: 'node16',
          strict: true,
          skipLibCheck: true,
          esModuleInterop: true,
          types: ['node'],
        },
        files: [entry.dts],
      },
    },
    apiReport: { enabled: true, reportFolder: path.join(dir, 'etc'), reportTempFolder: tempFolder, reportFileName: entry.report },
    docModel: { enabled: false },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      compilerMessageReporting: { default: { logLevel: 'error' } },
      extractorMessageReporting: {
        default: { logLevel: 'none', addToApiReportFile: false },
        // Not written into the report: its note names a source line, so any edit above it would make the report stale.
        'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: false },
        'ae-wrong-input-file-type': { logLevel: 'error' },
      },
      tsdocMessageReporting: { default: { logLevel: 'none' } },
    },
  };
}

const tempRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'jobq-api-report-'));
const problems = [];
let written = 0;
let checked = 0;
try {
  // The entry points to report, and the reports left over from entry points that are gone.
  const jobs = [];
  for (const dir of workspaceFolders()) {
    const packageJsonFullPath = path.join(dir, 'package.json');
    const pkg = JSON.parse(fs.readFileSync(packageJsonFullPath, 'utf8'));
    if (pkg.private) continue;
    const rel = path.relative(root, dir);
    // An application (a command, no library entry point) states its surface in its docs instead.
    if (pkg.bin && !pkg.exports) continue;
    const entries = entryPoints(dir, pkg);
    if (entries.length === 0) {
      problems.push(`${pkg.name} (${rel}) is published but has no typed entry point ("exports" with "types", or "types")`);
      continue;
    }
    for (const entry of entries) {
      const where = `${pkg.name}${entry.subpath === '.' ? '' : entry.subpath.slice(1)}`;
      if (!fs.existsSync(entry.dts)) problems.push(`${where}: ${path.relative(root, entry.dts)} is missing: build first (turbo run build)`);
      else jobs.push({ dir, rel, packageJsonFullPath, entry, where });
    }
    const etc = path.join(dir, 'etc');
    const expected = new Set(entries.map((e) => e.report));
    if (fs.existsSync(etc)) {
      for (const file of fs.readdirSync(etc)) {
        if (!file.endsWith('.api.md') || expected.has(file)) continue;
        if (mode === '--update') {
          fs.rmSync(path.join(etc, file));
          console.log(`removed ${path.join(rel, 'etc', file)}`);
        } else {
          problems.push(`${pkg.name}: ${path.join(rel, 'etc', file)} belongs to no entry point of the package`);
        }
      }
    }
  }

  const configs = jobs.map((job) => {
    if (mode === '--update') fs.mkdirSync(path.join(job.dir, 'etc'), { recursive: true });
    return ExtractorConfig.prepare({
      configObject: configFor(job.dir, job.entry, fs.mkdtempSync(path.join(tempRoot, 'r-'))),
      configObjectFullPath: path.join(job.dir, 'api-extractor.json'),
      packageJsonFullPath: job.packageJsonFullPath,
    });
  });
  // One TypeScript program for every entry point (the compiler options are the same): the slow part.
  const compilerState =
    configs.length === 0 ? undefined : CompilerState.create(configs[0], { additionalEntryPoints: jobs.map((job) => job.entry.dts) });
  jobs.forEach((job, i) => {
    const errors = [];
    const result = Extractor.invoke(configs[i], {
      localBuild: mode === '--update',
      compilerState,
      messageCallback: (message) => {
        if (message.logLevel === 'error') errors.push(message.formatMessageWithLocation(job.dir));
        message.handled = true;
      },
    });
    checked++;
    const reportPath = path.join(job.rel, 'etc', job.entry.report);
    if (errors.length > 0) problems.push(`${job.where}: API Extractor failed:\n    ${errors.join('\n    ')}`);
    else if (mode === '--update' && result.apiReportChanged) {
      written++;
      console.log(`wrote ${reportPath}`);
    } else if (mode === '--check' && result.apiReportChanged) {
      const exists = fs.existsSync(path.join(root, reportPath));
      problems.push(`${job.where}: ${reportPath} is ${exists ? 'out of date: the public API changed' : 'missing'}`);
    }
  });
} finally {
  fs.rmSync(tempRoot, { recursive: true, force: true });
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`api report: ${problem}`);
  if (mode === '--check')
    console.error(
      `api report: run \`${UPDATE_COMMAND}\` and commit the etc/*.api.md files it writes (review the diff: it is the change to the public API)`,
    );
  process.exit(1);
}
console.log(
  mode === '--update'
    ? `api report: ${checked} entry points, ${written} report(s) written`
    : `api report: ${checked} entry points, all reports up to date`,
);
