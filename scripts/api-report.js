#!/usr/bin/env node
// The API reports of the published packages (API Extractor): one `etc/<name>.api.md` per entry
// point of each package that is not private (`.` → `<name>.api.md`, `./wire` → `<name>-wire.api.md`);
// an application (`bin` and no `exports`, such as @jobq/cli) has none.
// They are committed, so a change to a public surface shows in review (README.md, "Public API reports").
// The check also fails on a type that a public signature names and no entry point exports (UNEXPORTED).
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
        // Checked by this script instead (UNEXPORTED below), not written into the report: its note
        // names a source line, so any edit above it would make the report stale.
        'ae-forgotten-export': { logLevel: 'warning', addToApiReportFile: false },
        'ae-wrong-input-file-type': { logLevel: 'error' },
      },
      tsdocMessageReporting: { default: { logLevel: 'none' } },
    },
  };
}

/**
 * Types a public signature names that no entry point of their package exports (API Extractor's
 * "forgotten export"): a user could not name them. Each fails the check unless another entry point
 * of the same package exports it (`@jobq/dag-core/wire` naming `WorkflowRuntime`) or it is listed
 * here with the reason it stays out of the public surface.
 */
const UNEXPORTED = {
  '@jobq/queue-servicebus': {
    QueueCore: 'named only by the @internal constructor of ServiceBusTaskQueue; openServiceBusQueue builds both',
  },
  '@jobq/store-azure': {
    BlobIo: 'named only by the @internal constructor of AzureOutputStore; openOutputStore builds both',
    OutputStoreTargets: 'named only by the @internal constructor of AzureOutputStore; openOutputStore builds both',
  },
};

/** True when the API report `file` (of another entry point) declares `symbol` as an export. */
function reportExports(file, symbol) {
  if (!fs.existsSync(file)) return false;
  const declaration = new RegExp(
    `^export (?:declare )?(?:abstract )?(?:interface|type|class|function|const|enum|namespace) ${symbol}\\b`,
    'm',
  );
  return declaration.test(fs.readFileSync(file, 'utf8'));
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
      else jobs.push({ dir, rel, packageJsonFullPath, entry, where, pkgName: pkg.name });
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
  const unexported = [];
  jobs.forEach((job, i) => {
    const errors = [];
    const result = Extractor.invoke(configs[i], {
      localBuild: mode === '--update',
      compilerState,
      messageCallback: (message) => {
        if (message.messageId === 'ae-forgotten-export') {
          const symbol = /The symbol "([^"]+)"/.exec(message.text)?.[1] ?? message.text;
          unexported.push({ job, symbol, where: message.formatMessageWithLocation(job.dir) });
        } else if (message.logLevel === 'error') errors.push(message.formatMessageWithLocation(job.dir));
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
  // After every report is written: a sibling entry point's report may be the one that exports it.
  for (const { job, symbol, where } of unexported) {
    if (UNEXPORTED[job.pkgName]?.[symbol]) continue;
    const siblings = jobs.filter((other) => other.dir === job.dir && other !== job);
    if (siblings.some((other) => reportExports(path.join(other.dir, 'etc', other.entry.report), symbol))) continue;
    problems.push(
      `${job.where}: "${symbol}" is part of the public API but not exported: export it from the entry point, or keep it out of public signatures\n    ${where}`,
    );
  }
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
