module.exports = require('../../jest.preset.js')({ testTimeout: 60_000 });
