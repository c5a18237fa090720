/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // Tests run against the workspace sources, so they need no prior build.
  moduleNameMapper: {
    '^@jobq/dag-core$': '<rootDir>/../dag-core/src',
    '^@jobq/ports$': '<rootDir>/../ports/src',
    '^@jobq/ports/testing$': '<rootDir>/../ports/src/testing',
    '^@jobq/local$': '<rootDir>/../local/src',
  },
  testTimeout: 60_000,
};
