import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runCli } from '../../test-helpers/cli';
import { FAN_OUT, TWO_TASKS, startTestStorage, uniquePrefix, type TestStorage } from '../../test-helpers/storage';

let storage: TestStorage;
let two: string;
let fan: string;
let broken: string;
beforeAll(async () => {
  storage = await startTestStorage();
  two = await storage.file('two.yaml', TWO_TASKS);
  fan = await storage.file('fan.yaml', FAN_OUT);
  broken = await storage.file('broken.yaml', 'name: broken\ntasks:\n  - name: a\n    depends_on: [missing]\n    kwargs: {cmd: x}\n');
});
afterAll(() => storage.stop());

async function listIds(env: NodeJS.ProcessEnv): Promise<string[]> {
  const listed = await runCli(['workflow', 'list', '--json'], { env });
  expect(listed.code).toBe(0);
  return (JSON.parse(listed.stdout) as Array<{ workflow_id: string }>).map((w) => w.workflow_id).sort();
}

describe('jobq workflow submit', () => {
  it('submits one file: the id on stdout, a summary on stderr', async () => {
    const prefix = uniquePrefix('SubOne');
    const env = storage.env(prefix);
    const result = await runCli(['workflow', 'submit', two], { env });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^[0-9a-f]{32}\n$/);
    const id = result.stdout.trim();
    expect(result.stderr).toContain(`Submitted "two" (2 tasks, 1 root: a) to devstoreaccount1/${prefix} → ${id}`);
    expect(await listIds(env)).toEqual([id]);
  });

  it('takes --id, and a resubmission of the same definition writes nothing; a different one is refused', async () => {
    const env = storage.env(uniquePrefix('SubId'));
    const first = await runCli(['workflow', 'submit', two, '--id', 'nightly-1'], { env });
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('nightly-1\n');
    const again = await runCli(['workflow', 'submit', two, '--id', 'nightly-1'], { env });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('nightly-1\n');
    expect(again.stderr).toContain('already submitted');
    const other = await runCli(['workflow', 'submit', fan, '--id', 'nightly-1'], { env });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('conflict');
    expect(await listIds(env)).toEqual(['nightly-1']);
  });

  it('reads paths from stdin when no files are given and prints one id per line', async () => {
    const prefix = uniquePrefix('SubMany');
    const env = storage.env(prefix);
    const result = await runCli(['workflow', 'submit', '--concurrency', '2'], { env, input: `${two}\n\n${fan}\n${two}\n` });
    expect(result.code).toBe(0);
    const ids = result.stdout.trim().split('\n');
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    expect(result.stderr).toContain(`Submitted 3/3 workflows (8 tasks) to devstoreaccount1/${prefix}`);
    expect(result.stderr).not.toContain('Submitting');
    expect(await listIds(env)).toEqual([...ids].sort());
  });

  it('validates every file first: one invalid file aborts with exit 1 and nothing is written', async () => {
    const env = storage.env(uniquePrefix('SubBad'));
    const result = await runCli(['workflow', 'submit', two, broken, fan], { env });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(broken);
    expect(result.stderr).toContain('nothing was submitted');
    expect(await listIds(env)).toEqual([]);
  });

  it('prints one JSON document with --json', async () => {
    const prefix = uniquePrefix('SubJson');
    const result = await runCli(['workflow', 'submit', '--json', two, fan], { env: storage.env(prefix) });
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout) as {
      target: string;
      total: number;
      submitted: number;
      tasks: number;
      ids: string[];
      results: Array<Record<string, unknown>>;
    };
    expect(doc).toMatchObject({ target: `devstoreaccount1/${prefix}`, total: 2, submitted: 2, tasks: 6 });
    expect(doc.ids).toHaveLength(2);
    expect(doc.results[0]).toMatchObject({ file: two, ok: true, workflow_id: doc.ids[0], created: true, name: 'two', tasks: 2 });
    expect(doc.results[1]).toMatchObject({ file: fan, ok: true, workflow_id: doc.ids[1], name: 'fan', tasks: 4 });
  });

  it('exits 2 for usage errors: --id with several files, a bad --id, no prefix', async () => {
    const env = storage.env(uniquePrefix('SubUsage'));
    const several = await runCli(['workflow', 'submit', two, fan, '--id', 'x'], { env });
    expect(several.code).toBe(2);
    expect(several.stderr.trim().split('\n')).toHaveLength(1);
    const badId = await runCli(['workflow', 'submit', two, '--id', '-bad id'], { env });
    expect(badId.code).toBe(2);
    const noPrefix = await runCli(['workflow', 'submit', two], { env: storage.env(null) });
    expect(noPrefix.code).toBe(2);
    expect(noPrefix.stderr).toContain('no workflow prefix configured');
  });
});
