const preset = require('../../jest.preset.js')({ testTimeout: 120_000 });

// The preset maps @jobq/* onto sibling folders of a package; this app lives one level deeper.
module.exports = {
  ...preset,
  moduleNameMapper: {
    '^@jobq/ports/testing$': '<rootDir>/../../packages/ports/src/testing',
    '^@jobq/dag-core/wire$': '<rootDir>/../../packages/dag-core/src/wire',
    '^@jobq/(dag-core|ports|local|azure-pipeline|queue-storage|queue-servicebus|servicebus-emulator|store-azure|task|worker|coordinator|dashboard)$':
      '<rootDir>/../../packages/$1/src',
  },
};
