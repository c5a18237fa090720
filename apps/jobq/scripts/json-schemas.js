#!/usr/bin/env node
// Writes the JSON Schema of every --json document to docs/json/NAME.schema.json, from the zod
// schemas of the built CLI (src/json-output.ts; run after the build). src/json-output.test.ts fails
// when the files differ from what this writes.
const { mkdirSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { JSON_OUTPUTS, jsonSchemaOf } = require('../dist/json-output');

const dir = join(__dirname, '..', '..', '..', 'docs', 'json');
mkdirSync(dir, { recursive: true });
for (const file of readdirSync(dir)) if (file.endsWith('.schema.json')) rmSync(join(dir, file));
for (const name of Object.keys(JSON_OUTPUTS)) {
  writeFileSync(join(dir, `${name}.schema.json`), `${JSON.stringify(jsonSchemaOf(name), null, 2)}\n`);
}
process.stdout.write(`docs/json: ${Object.keys(JSON_OUTPUTS).length} schemas written\n`);
