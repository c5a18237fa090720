#!/usr/bin/env node
// Writes oclif.manifest.json after the build, so the CLI reads every command's flags and help from
// one file instead of loading all command modules on each start.
const { rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { Config } = require('@oclif/core');

(async () => {
  const root = join(__dirname, '..');
  // Config.load reads an existing manifest instead of the commands: start from none.
  rmSync(join(root, 'oclif.manifest.json'), { force: true });
  const config = await Config.load(root);
  const plugin = config.getPluginsList().find((p) => p.root === config.root);
  if (!plugin) throw new Error('the CLI plugin itself was not found');
  const commands = {};
  for (const command of plugin.commands) {
    const { load: _load, ...cached } = command;
    commands[command.id] = cached;
  }
  writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify({ commands, version: config.version }, null, 2)}\n`);
  process.stdout.write(`oclif.manifest.json: ${Object.keys(commands).length} commands\n`);
})().catch((error) => {
  process.stderr.write(`manifest generation failed: ${error.stack ?? error}\n`);
  process.exitCode = 1;
});
