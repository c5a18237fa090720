import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// docs/cli.md lists the commands as oclif's readme generator writes them from the built commands
// (the package's test script builds first). This keeps the checked-in reference from going stale.

const SCRIPT = join(__dirname, '..', 'scripts', 'cli-reference.js');
const REFERENCE = join(__dirname, '..', '..', '..', 'docs', 'cli.md');

function check(file?: string): { code: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [SCRIPT, '--check', ...(file ? [file] : [])], { encoding: 'utf8' });
  return { code: result.status, stderr: result.stderr };
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'jobq-cli-md-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/cli.md', () => {
  it('is what the readme generator writes from the commands', () => {
    const text = readFileSync(REFERENCE, 'utf8');
    for (const command of ['jobq workflow run FILE', 'jobq workflow retry ID', 'jobq worker', 'jobq task get-file TASK [KEY] DEST']) {
      expect(text).toContain(`## \`${command}\``);
    }
    expect(check()).toEqual({ code: 0, stderr: '' });
  });

  it('a reference that lost a flag is reported as stale', () => {
    const stale = readFileSync(REFERENCE, 'utf8').replace(/\n.*--max-fan-in=<value>.*\n/, '\n');
    const file = join(dir, 'cli.md');
    writeFileSync(file, stale);
    const result = check(file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('docs/cli.md is stale: run "pnpm --filter @jobq/cli run docs:cli"');
  });
});
