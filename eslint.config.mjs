// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Modules that do I/O or reach Azure: the pure core may not import them. */
const NODE_BUILTINS = [
  'assert', 'async_hooks', 'buffer', 'child_process', 'cluster', 'console', 'constants', 'crypto', 'dgram',
  'diagnostics_channel', 'dns', 'domain', 'events', 'fs', 'fs/promises', 'http', 'http2', 'https', 'inspector',
  'module', 'net', 'os', 'path', 'perf_hooks', 'process', 'punycode', 'querystring', 'readline', 'repl',
  'stream', 'string_decoder', 'sys', 'timers', 'tls', 'trace_events', 'tty', 'url', 'util', 'v8', 'vm',
  'wasi', 'worker_threads', 'zlib', 'dns/promises', 'path/posix', 'path/win32', 'readline/promises',
  'stream/promises', 'stream/web', 'timers/promises', 'util/types',
];

const pureCoreRestrictions = {
  // Exact names for the bare built-ins: a pattern like `path` would also catch `./path`.
  paths: NODE_BUILTINS.map((name) => ({ name, message: '@jobq/dag-core is pure: no Node modules.' })),
  patterns: [
    { group: ['node:*'], message: '@jobq/dag-core is pure: no Node modules (time and ids arrive in events).' },
    { group: ['@azure/*', '@azure-rest/*'], message: '@jobq/dag-core is pure: no Azure SDK.' },
  ],
};

/** The in-memory adapters (adapter layer): @jobq/ports and @jobq/dag-core only, no Azure SDK, no other service. */
const memoryAdapterRestrictions = {
  patterns: [
    { group: ['@azure/*', '@azure-rest/*'], message: '@jobq/memory keeps everything in memory: no Azure SDK.' },
    {
      group: ['@jobq/*', '!@jobq/ports', '!@jobq/ports/testing', '!@jobq/dag-core', '!@jobq/dag-core/wire'],
      message: '@jobq/memory is an adapter: it may use @jobq/ports and @jobq/dag-core only.',
    },
  ],
};

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
    },
  },
  {
    // The pure core: no Node modules, no Azure, no clock, no randomness (tests may use anything).
    files: ['packages/dag-core/src/**/*.ts'],
    ignores: ['packages/dag-core/src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', pureCoreRestrictions],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: '@jobq/dag-core is pure: no process.' },
        { name: 'Buffer', message: '@jobq/dag-core is pure: no Buffer.' },
        { name: 'require', message: '@jobq/dag-core is pure: no require.' },
        { name: 'setTimeout', message: '@jobq/dag-core is pure: no timers.' },
        { name: 'setInterval', message: '@jobq/dag-core is pure: no timers.' },
        { name: 'eval', message: 'never eval.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: '@jobq/dag-core is pure: time arrives in events.' },
        { object: 'Math', property: 'random', message: '@jobq/dag-core is pure: no randomness.' },
        { object: 'crypto', property: 'randomUUID', message: '@jobq/dag-core is pure: no randomness.' },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: '@jobq/dag-core is pure: no clock (new Date()).' },
        { selector: "CallExpression[callee.name='Function'], NewExpression[callee.name='Function']", message: 'never build code from strings.' },
        { selector: 'ImportExpression', message: '@jobq/dag-core is pure: no dynamic imports.' },
      ],
    },
  },
  {
    // The in-memory adapters, tests included: no Azure SDK, no other jobq package than ports and dag-core.
    files: ['packages/memory/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', memoryAdapterRestrictions],
    },
  },
  {
    files: ['**/*.test.ts', '**/test-helpers/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
