// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layerConfigs } from './scripts/layers.mjs';

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
  // What each package may import, from the table of scripts/layers.mjs (docs/architecture.md).
  ...layerConfigs(),
  {
    // The pure core: beyond its imports (above), no process, no clock, no randomness (tests may use anything).
    files: ['packages/dag-core/src/**/*.ts'],
    ignores: ['packages/dag-core/src/**/*.test.ts'],
    rules: {
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
        {
          selector: "CallExpression[callee.name='Function'], NewExpression[callee.name='Function']",
          message: 'never build code from strings.',
        },
        { selector: 'ImportExpression', message: '@jobq/dag-core is pure: no dynamic imports.' },
      ],
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
