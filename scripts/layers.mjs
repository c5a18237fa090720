// @ts-check
// The layers of the repository: one table of every workspace package, its layer and what it may
// import. eslint.config.mjs builds each package's import rules from it, docs/architecture.md shows
// it (`architectureTable()`), and test-e2e/src/layers.test.ts checks that the rules fire, that the
// document matches and that no package declares a dependency the table does not allow.

/** The layers, bottom up. */
export const LAYERS = {
  core: 'the pure rules of the engine: no I/O, no Node modules, no Azure, no clock, no randomness',
  ports: 'the interfaces between the services and their backends, named for what they mean, and their contract suites',
  adapters: 'the ports implemented on a backend (Azure Storage, Service Bus, memory); nothing above them',
  services: 'the long-running parts, handed their adapters: worker, coordinator, dashboard',
  app: 'what chooses the adapters and composes the services: the CLI, the task helpers of workflow scripts',
  tools: 'local stacks, emulators, benchmarks and whole-system tests',
};

/**
 * @typedef {object} PackageLayer
 * @property {string} name the package name
 * @property {string} dir its folder
 * @property {keyof typeof LAYERS} layer
 * @property {string[] | '*'} imports the @jobq packages (and their subpaths) its code may import; '*' for anything
 * @property {boolean} azure whether it may import an Azure SDK (`@azure/*`, `@azure-rest/*`)
 * @property {boolean} node whether it may import Node's built-in modules
 * @property {boolean} [tests] whether its tests are held to the rule too (otherwise tests may import anything)
 * @property {Record<string, string[]>} [except] files (under `dir`) allowed more, with what
 * @property {string} [note] said in the document
 */

/** @type {PackageLayer[]} */
export const PACKAGES = [
  {
    name: '@jobq/dag-core',
    dir: 'packages/dag-core',
    layer: 'core',
    imports: [],
    azure: false,
    node: false,
    note: 'also no clock, randomness, timers or dynamic imports',
  },
  { name: '@jobq/ports', dir: 'packages/ports', layer: 'ports', imports: ['@jobq/dag-core'], azure: false, node: true },
  {
    name: '@jobq/memory',
    dir: 'packages/memory',
    layer: 'adapters',
    imports: ['@jobq/ports', '@jobq/dag-core'],
    azure: false,
    node: true,
    tests: true,
    note: 'its tests too',
  },
  {
    name: '@jobq/azure-pipeline',
    dir: 'packages/azure-pipeline',
    layer: 'adapters',
    imports: ['@jobq/ports'],
    azure: true,
    node: true,
    note: 'what the Azure adapters share',
  },
  {
    name: '@jobq/store-azure',
    dir: 'packages/store-azure',
    layer: 'adapters',
    imports: ['@jobq/ports', '@jobq/dag-core', '@jobq/azure-pipeline'],
    azure: true,
    node: true,
  },
  {
    name: '@jobq/queue-storage',
    dir: 'packages/queue-storage',
    layer: 'adapters',
    imports: ['@jobq/ports', '@jobq/dag-core', '@jobq/azure-pipeline'],
    azure: true,
    node: true,
  },
  {
    name: '@jobq/queue-servicebus',
    dir: 'packages/queue-servicebus',
    layer: 'adapters',
    imports: ['@jobq/ports', '@jobq/dag-core'],
    azure: true,
    node: true,
  },
  {
    name: '@jobq/coordinator',
    dir: 'packages/coordinator',
    layer: 'services',
    imports: ['@jobq/dag-core', '@jobq/ports'],
    azure: false,
    node: true,
  },
  {
    name: '@jobq/worker',
    dir: 'packages/worker',
    layer: 'services',
    imports: ['@jobq/dag-core', '@jobq/ports'],
    azure: false,
    node: true,
    except: { 'src/task/index.ts': ['@jobq/task'] },
    note: '`src/task/index.ts` re-exports `@jobq/task` (the deprecated `@jobq/worker/task`)',
  },
  {
    name: '@jobq/dashboard',
    dir: 'packages/dashboard',
    layer: 'services',
    imports: ['@jobq/dag-core', '@jobq/ports', '@jobq/coordinator'],
    azure: false,
    node: true,
  },
  {
    name: '@jobq/task',
    dir: 'packages/task',
    layer: 'app',
    imports: ['@jobq/dag-core', '@jobq/ports', '@jobq/store-azure'],
    azure: false,
    node: true,
    note: 'loads the store only outside a worker',
  },
  {
    name: '@jobq/cli',
    dir: 'apps/jobq',
    layer: 'app',
    imports: [
      '@jobq/dag-core',
      '@jobq/ports',
      '@jobq/azure-pipeline',
      '@jobq/store-azure',
      '@jobq/queue-storage',
      '@jobq/queue-servicebus',
      '@jobq/coordinator',
      '@jobq/worker',
      '@jobq/dashboard',
      '@jobq/task',
      '@jobq/local',
    ],
    azure: true,
    node: true,
    note: '`@jobq/local` is an optional dependency, loaded only by the embedded stack (`jobq dev`, `workflow run`)',
  },
  {
    name: '@jobq/servicebus-emulator',
    dir: 'packages/servicebus-emulator',
    layer: 'tools',
    imports: [],
    azure: false,
    node: true,
    note: 'its tests use the real Service Bus SDK',
  },
  { name: '@jobq/local', dir: 'packages/local', layer: 'tools', imports: ['@jobq/servicebus-emulator'], azure: false, node: true },
  {
    name: '@jobq/deploy-k8s',
    dir: 'deploy/k8s',
    layer: 'tools',
    imports: ['@jobq/dag-core'],
    azure: false,
    node: true,
    note: 'generates the Kubernetes manifests',
  },
  { name: '@jobq/bench', dir: 'bench', layer: 'tools', imports: '*', azure: true, node: true },
  { name: '@jobq/test-e2e', dir: 'test-e2e', layer: 'tools', imports: '*', azure: true, node: true },
];

/** Node's built-in modules, by their bare names (`node:*` is matched as a pattern). */
export const NODE_BUILTINS = [
  'assert',
  'async_hooks',
  'buffer',
  'child_process',
  'cluster',
  'console',
  'constants',
  'crypto',
  'dgram',
  'diagnostics_channel',
  'dns',
  'domain',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'inspector',
  'module',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'punycode',
  'querystring',
  'readline',
  'repl',
  'stream',
  'string_decoder',
  'sys',
  'timers',
  'tls',
  'trace_events',
  'tty',
  'url',
  'util',
  'v8',
  'vm',
  'wasi',
  'worker_threads',
  'zlib',
  'dns/promises',
  'path/posix',
  'path/win32',
  'readline/promises',
  'stream/promises',
  'stream/web',
  'timers/promises',
  'util/types',
];

/** The table's entry of a package; throws for a name it does not know. */
export function packageLayer(name) {
  const entry = PACKAGES.find((p) => p.name === name);
  if (entry === undefined) throw new Error(`${name} is not in the table of scripts/layers.mjs`);
  return entry;
}

/** The @jobq packages of the table `entry` may not import (all of them for none, itself excepted). */
export function forbiddenPackages(entry, extra = []) {
  if (entry.imports === '*') return [];
  const allowed = new Set([entry.name, ...entry.imports, ...extra]);
  return PACKAGES.map((p) => p.name).filter((name) => !allowed.has(name));
}

function allowedText(entry, extra = []) {
  const allowed = entry.imports === '*' ? [] : [...entry.imports, ...extra];
  return allowed.length === 0 ? 'no other @jobq package' : allowed.join(', ');
}

/** A module name as a regular expression inside an esquery selector (which allows no `/` in one). */
function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\//g, '\\x2F');
}

/**
 * The ESLint rules of a package's source files: `no-restricted-imports` for its import and export
 * declarations and `no-restricted-syntax` for `require(…)` and `import(…)` of the same modules.
 * Empty for a package that may import anything.
 * @param {PackageLayer} entry
 * @param {string[]} [extra] packages allowed on top of the table's (a file's exception)
 * @returns {Record<string, unknown>}
 */
export function layerRules(entry, extra = []) {
  const forbidden = forbiddenPackages(entry, extra);
  const where = `${entry.name} is in the ${entry.layer} layer (docs/architecture.md)`;
  const jobqMessage = `${where}: it may import ${allowedText(entry, extra)}.`;
  const azureMessage = `${where}: no Azure SDK.`;
  const nodeMessage = `${where}: no Node modules.`;
  /** @type {Array<Record<string, unknown>>} */
  const patterns = [];
  /** @type {Array<Record<string, unknown>>} */
  const paths = [];
  // Exact names for the bare built-ins: a pattern like `path` would also catch `./path`.
  if (!entry.node) {
    paths.push(...NODE_BUILTINS.map((name) => ({ name, message: nodeMessage })));
    patterns.push({ group: ['node:*'], message: nodeMessage });
  }
  if (!entry.azure) patterns.push({ group: ['@azure/*', '@azure-rest/*'], message: azureMessage });
  if (forbidden.length > 0) patterns.push({ group: forbidden.flatMap((name) => [name, `${name}/*`]), message: jobqMessage });
  if (patterns.length === 0 && paths.length === 0) return {};
  const rules = { 'no-restricted-imports': ['error', { paths, patterns }] };
  // The same modules loaded by a call: require('…') and import('…') with a literal name.
  const jobq = forbidden.length > 0 ? `^(${forbidden.map(escape).join('|')})(\\x2F|$)` : null;
  const azure = entry.azure ? null : '^@azure(-rest)?\\x2F';
  const selectors = [];
  for (const [regex, message] of /** @type {Array<[string | null, string]>} */ ([
    [jobq, jobqMessage],
    [azure, azureMessage],
  ])) {
    if (regex === null) continue;
    selectors.push({ selector: `CallExpression[callee.name='require'][arguments.0.value=/${regex}/]`, message });
    selectors.push({ selector: `ImportExpression[source.value=/${regex}/]`, message });
  }
  return { ...rules, 'no-restricted-syntax': ['error', ...selectors] };
}

/**
 * ESLint flat-config blocks for every package of the table (its `src`, or the whole folder for
 * `deploy/k8s`; tests only where the table says so), and one block per file exception.
 */
export function layerConfigs() {
  const blocks = [];
  for (const entry of PACKAGES) {
    if (entry.imports === '*') continue;
    const root = entry.dir === 'deploy/k8s' ? entry.dir : `${entry.dir}/src`;
    const exceptions = Object.keys(entry.except ?? {}).map((file) => `${entry.dir}/${file}`);
    blocks.push({
      files: [`${root}/**/*.ts`, `${root}/**/*.tsx`],
      ignores: [...(entry.tests ? [] : [`${root}/**/*.test.ts`, `${root}/**/*.test.tsx`, `${root}/**/test-helpers/**`]), ...exceptions],
      rules: layerRules(entry),
    });
    for (const [file, extra] of Object.entries(entry.except ?? {})) {
      blocks.push({ files: [`${entry.dir}/${file}`], rules: layerRules(entry, extra) });
    }
  }
  return blocks;
}

/** The table of docs/architecture.md, as it must read there. */
export function architectureTable() {
  const rows = [
    '| package | folder | layer | may import (`@jobq/*`) | Azure SDK | Node modules | note |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const p of PACKAGES) {
    const imports = p.imports === '*' ? 'anything' : p.imports.length === 0 ? '—' : p.imports.map((name) => `\`${name}\``).join(', ');
    const extra = Object.entries(p.except ?? {}).map(([, names]) => names.map((name) => `\`${name}\`*`).join(', '));
    rows.push(
      `| \`${p.name}\` | ${p.dir} | ${p.layer} | ${[imports, ...extra].join(', ')} | ${p.azure ? 'yes' : 'no'} | ${p.node ? 'yes' : 'no'} | ${p.note ?? ''} |`,
    );
  }
  return rows.join('\n');
}
