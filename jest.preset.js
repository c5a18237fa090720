/**
 * The jest settings every package shares. Tests run against the workspace sources of the other
 * @jobq packages (not their builds), so a package's tests need no prior build.
 * @param {{ testTimeout?: number }} [overrides]
 * @returns {import('jest').Config}
 */
module.exports = function jobqJestConfig(overrides = {}) {
  return {
    testEnvironment: 'node',
    roots: ['<rootDir>/src'],
    transform: { '^.+\\.ts$': ['@swc/jest'] },
    moduleFileExtensions: ['ts', 'js', 'json'],
    moduleNameMapper: {
      '^@jobq/ports/testing$': '<rootDir>/../ports/src/testing',
      '^@jobq/dag-core/wire$': '<rootDir>/../dag-core/src/wire',
      '^@jobq/azure-pipeline/testing$': '<rootDir>/../azure-pipeline/src/testing',
      '^@jobq/(dag-core|ports|memory|local|azure-pipeline|queue-storage|queue-servicebus|servicebus-emulator|store-azure|task|worker|coordinator|dashboard)$':
        '<rootDir>/../$1/src',
    },
    ...overrides,
  };
};
