import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// The lint rule that keeps this package an adapter of its layer: it may import @jobq/ports and
// @jobq/dag-core (and Node), never an Azure SDK or another jobq package. Check that it really fires.
const repoRoot = resolve(__dirname, '../../..');
const eslint = join(repoRoot, 'node_modules/eslint/bin/eslint.js');
const target = join(__dirname, 'paging.ts');

interface LintMessage {
  ruleId: string | null;
  line: number;
  message: string;
}

/** Lints an existing file of the package with extra lines appended, as if they were in it. */
function lint(extraLines: readonly string[]): { messages: LintMessage[]; firstExtraLine: number } {
  const original = readFileSync(target, 'utf8').replace(/\n*$/, '\n');
  const firstExtraLine = original.split('\n').length;
  let stdout: string;
  try {
    stdout = execFileSync(process.execPath, [eslint, '--format', 'json', '--stdin', '--stdin-filename', relative(repoRoot, target)], {
      cwd: repoRoot,
      input: `${original}${extraLines.join('\n')}\n`,
      stdio: ['pipe', 'pipe', 'pipe'],
    }).toString();
  } catch (error) {
    stdout = (error as { stdout?: Buffer }).stdout?.toString() ?? '[]';
  }
  const results = JSON.parse(stdout) as Array<{ messages: LintMessage[] }>;
  return { messages: results.flatMap((r) => r.messages), firstExtraLine };
}

const cases: Array<[code: string, forbidden: boolean]> = [
  ["export { BlobClient } from '@azure/storage-blob';", true],
  ["export { TableClient } from '@azure/data-tables';", true],
  ["export { openWorkflowStore } from '@jobq/store-azure';", true],
  ["export { openStorageQueue } from '@jobq/queue-storage';", true],
  ["export { startAzurite } from '@jobq/local';", true],
  ["export { Coordinator } from '@jobq/coordinator';", true],
  ["export { Worker } from '@jobq/worker';", true],
  ["export { realClock as clock } from '@jobq/ports';", false],
  ["export { describeTaskQueueContract } from '@jobq/ports/testing';", false],
  ["export { taskState } from '@jobq/dag-core';", false],
  ["export { decodeEnvelope } from '@jobq/dag-core/wire';", false],
  ["export { createHash } from 'node:crypto';", false],
];

describe('the adapter-layer lint rule of @jobq/memory', () => {
  it('rejects Azure SDKs and every jobq package but ports and dag-core, and accepts the rest', () => {
    const { messages, firstExtraLine } = lint(cases.map(([code]) => code));
    const rulesAt = (line: number) => messages.filter((m) => m.line === line).map((m) => m.ruleId);
    cases.forEach(([code, forbidden], i) => {
      const rules = rulesAt(firstExtraLine + i);
      if (forbidden) expect({ code, rules }).toEqual({ code, rules: ['no-restricted-imports'] });
      else expect({ code, rules: rules.filter((r) => r === 'no-restricted-imports') }).toEqual({ code, rules: [] });
    });
    expect(messages.filter((m) => m.line < firstExtraLine)).toEqual([]);
  }, 60_000);
});
