import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { notJsonProblem, storeTaskOutput } from './task-outputs';
import { memoryOutputs } from './test-helpers/memory-workflow';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-task-outputs-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function store(content: string) {
  const file = join(dir, 'output.json');
  await writeFile(file, content);
  const outputs = memoryOutputs();
  const stored = await storeTaskOutput(outputs, 'wf', 't', 1, file, () => undefined);
  return { stored, putCalls: outputs.putCalls };
}

describe('storeTaskOutput', () => {
  it('`echo done > $JOBQ_OUTPUT_FILE`: one line saying what was found and how to write an output; the store is not asked', async () => {
    const { stored, putCalls } = await store('done\n');
    expect(stored).toEqual({
      ok: false,
      aborted: false,
      error:
        'the output file is not JSON: found "done\\n"; write JSON (a quoted string, a number, an object…), e.g. with jobq task set-output',
    });
    expect(putCalls).toBe(0);
  });

  it('quotes only the start of a long file, escaped, on one line', () => {
    const text = `line one\r\n\tline two\u2028\ufeff${'x'.repeat(100)}`;
    const problem = notJsonProblem(text)!;
    expect(problem).not.toMatch(/[\r\n\u2028\u2029]/);
    expect(problem).toContain(`found "line one\\r\\n\\tline two\\u2028\\ufeff${'x'.repeat(19)}"… (125 bytes);`);
  });

  it('counts characters, not UTF-16 units (an emoji is never cut in half)', () => {
    const problem = notJsonProblem('😀'.repeat(50))!;
    expect(problem).toContain(`found "${'😀'.repeat(40)}"… (200 bytes)`);
  });

  it('JSON passes through to the store; an empty file is no output', async () => {
    expect((await store('"done"\n')).stored).toEqual({ ok: true, result: { ref: '"done"\n', placement: 'inline', bytes: 7 } });
    expect(notJsonProblem(' {"a": [1, 2]} ')).toBeNull();
    expect((await store('  \n')).stored).toEqual({ ok: true, result: { ref: null, placement: 'none', bytes: 0 } });
  });
});
