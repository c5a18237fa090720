// The CLI runs from its build (apps/jobq/dist, built by turbo before this package's tests); the
// libraries the tests use directly are mapped onto their sources like everywhere else.
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    '^@jobq/ports/testing$': '<rootDir>/../packages/ports/src/testing',
    '^@jobq/(dag-core|ports|local|azure-pipeline|queue-storage|store-azure|worker|coordinator)$': '<rootDir>/../packages/$1/src',
  },
  testTimeout: 180_000,
  // The tests start many processes; two files at once is what two cores take.
  maxWorkers: 2,
};
