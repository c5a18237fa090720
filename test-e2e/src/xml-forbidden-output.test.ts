// An output holding characters XML 1.0 forbids (U+FFFF here) travels through both Storage Queues
// of the embedded stack: the completion queue (the task's output) and the task queue (the child's
// upstream refs). Queue bodies travel as XML; one raw U+FFFF used to jam the completion queue, and
// `workflow run` never ended.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from './cli';
import { tempDir } from './stack';

let dir: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir('xml-forbidden');
});

afterAll(async () => {
  await dir.remove();
});

interface RunReport {
  status: string;
  tasks: Array<{ name: string; status: string; output: unknown }>;
}

describe('`jobq workflow run --json` with an output holding U+FFFF', () => {
  it('completes, and the output and the child that read it carry the character unchanged', async () => {
    const file = join(dir.path, 'uffff.yaml');
    // printf writes the UTF-8 bytes of U+FFFF (EF BF BF) raw into the output file.
    await writeFile(
      file,
      [
        'name: uffff',
        'tasks:',
        '  - name: write',
        '    kwargs:',
        `      cmd: printf '{"text":"a\\357\\277\\277b"}' > "$JOBQ_OUTPUT_FILE"`,
        '  - name: read',
        '    depends_on: [write]',
        '    kwargs:',
        '      cmd: jobq task get-upstream write > "$JOBQ_OUTPUT_FILE"',
        '',
      ].join('\n'),
    );
    const result = await runCli(['workflow', 'run', file, '--json'], { killAfterInMs: 120_000 });
    expect({ code: result.code, signal: result.signal, stderr: result.code === 0 ? '' : result.stderr }).toEqual({
      code: 0,
      signal: null,
      stderr: '',
    });
    const report = JSON.parse(result.stdout) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.tasks.map((t) => [t.name, t.status, t.output])).toEqual([
      ['write', 'completed', { text: 'a\uffffb' }],
      ['read', 'completed', { text: 'a\uffffb' }],
    ]);
  });
});
