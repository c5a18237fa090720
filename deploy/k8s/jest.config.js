const preset = require('../../jest.preset.js')();

// The generator and its tests live at the package root (deploy/k8s/generate.ts), two levels down.
module.exports = {
  ...preset,
  roots: ['<rootDir>'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  moduleNameMapper: { '^@jobq/dag-core$': '<rootDir>/../../packages/dag-core/src' },
};
