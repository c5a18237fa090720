const preset = require('../jest.preset.js')({ testTimeout: 60_000 });

// The bench sits beside packages/, not in it: point the workspace sources one level further.
module.exports = {
  ...preset,
  moduleNameMapper: Object.fromEntries(
    Object.entries(preset.moduleNameMapper).map(([pattern, target]) => [
      pattern,
      target.replace('<rootDir>/../', '<rootDir>/../packages/'),
    ]),
  ),
};
