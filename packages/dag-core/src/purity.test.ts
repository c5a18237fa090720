import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// The lint rule that keeps the core pure is part of the contract: check that it really fires.
const repoRoot = resolve(__dirname, '../../..');
const eslint = join(repoRoot, 'node_modules/eslint/bin/eslint.js');
const target = join(__dirname, 'result.ts');

interface LintMessage {
  ruleId: string | null;
  line: number;
  message: string;
}

/** Lints an existing core file with extra lines appended, as if they were in it. */
function lint(extraLines: readonly string[]): { messages: LintMessage[]; firstExtraLine: number } {
  const original = readFileSync(target, 'utf8').replace(/\n*$/, '\n');
  const firstExtraLine = original.split('\n').length;
  const source = `${original}${extraLines.join('\n')}\n`;
  let stdout: string;
  try {
    stdout = execFileSync(process.execPath, [eslint, '--format', 'json', '--stdin', '--stdin-filename', relative(repoRoot, target)], {
      cwd: repoRoot,
      input: source,
      stdio: ['pipe', 'pipe', 'pipe'],
    }).toString();
  } catch (error) {
    stdout = (error as { stdout?: Buffer }).stdout?.toString() ?? '[]';
  }
  const results = JSON.parse(stdout) as Array<{ messages: LintMessage[] }>;
  return { messages: results.flatMap((r) => r.messages), firstExtraLine };
}

const forbidden: Array<[code: string, rule: string]> = [
  ["import { readFileSync } from 'node:fs';", 'no-restricted-imports'],
  ["import * as path from 'path';", 'no-restricted-imports'],
  ["import { BlobClient } from '@azure/storage-blob';", 'no-restricted-imports'],
  ['export const t = Date.now();', 'no-restricted-properties'],
  ['export const r = Math.random();', 'no-restricted-properties'],
  ['export const d = new Date();', 'no-restricted-syntax'],
  ['export const e = process.env;', 'no-restricted-globals'],
  ['export const fine = JSON.stringify({ at: Date.parse("2026-01-01T00:00:00Z") }).length;', ''],
];

describe('the pure-core lint rule', () => {
  it('rejects Node modules, Azure SDKs, the clock and randomness in @jobq/dag-core, and accepts the rest', () => {
    const { messages, firstExtraLine } = lint(forbidden.map(([code]) => code));
    const byLine = (line: number) => messages.filter((m) => m.line === line).map((m) => m.ruleId);
    forbidden.forEach(([code, rule], i) => {
      if (rule === '') expect({ code, rules: byLine(firstExtraLine + i) }).toEqual({ code, rules: [] });
      else expect({ code, rules: byLine(firstExtraLine + i) }).toEqual({ code, rules: expect.arrayContaining([rule]) });
    });
    // Nothing fires on the file's own lines.
    expect(messages.filter((m) => m.line < firstExtraLine)).toEqual([]);
  }, 60_000);
});
