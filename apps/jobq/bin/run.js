#!/usr/bin/env node
// The jobq command line. The ACCOUNT/PREFIX and ACCOUNT/QUEUE shorthand is rewritten into flags
// before oclif routes the command (see src/argv.ts).
const { rewriteArgv } = require('../dist/argv');
const oclif = require('@oclif/core');

oclif
  .run(rewriteArgv(process.argv.slice(2)), __dirname)
  .then(() => oclif.flush())
  .catch(oclif.handle);
