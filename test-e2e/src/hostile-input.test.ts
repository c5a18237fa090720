// Broken and hostile workflow files through the built CLI: `jobq workflow validate` (no storage)
// and `jobq workflow submit` against Azurite, started in this test process with `startAzurite()`
// from @jobq/local. Every refusal must be one clear line per problem, exit 1, no stack trace
// (unless --debug), and nothing written.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountClients, storeNames } from '@jobq/store-azure';
import { runCli, type CliResult } from './cli';
import { SharedStorage, deployment, tempDir, type Deployment } from './stack';

const storage = new SharedStorage();
let dir: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  dir = await tempDir('hostile');
});

afterAll(async () => {
  await dir.remove();
  await storage.stop();
});

async function file(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir.path, name);
  await writeFile(path, content);
  return path;
}

/** Lines joined into a YAML document. */
function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

const STACK_LINE = /^\s+at /m;

/** Exit 1, nothing on stdout, a few short lines on stderr and no stack trace. */
function expectCleanRefusal(result: CliResult): void {
  expect({ code: result.code, signal: result.signal, stdout: result.stdout }).toEqual({ code: 1, signal: null, stdout: '' });
  expect(result.stderr).not.toMatch(STACK_LINE);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.length).toBeLessThanOrEqual(4);
  for (const line of lines) expect(line.length).toBeLessThan(400);
}

/** True when the prefix's workflows container exists (submit creates it only once the files are valid). */
async function workflowsContainerExists(deploy: Deployment): Promise<boolean> {
  return accountClients({ connectionString: deploy.storage.connectionString }, { operationTimeoutInMs: 30_000 })
    .container(storeNames(deploy.prefix).workflowsContainer)
    .exists();
}

async function listWorkflows(deploy: Deployment): Promise<unknown[]> {
  const result = await runCli(['workflow', 'list', '--json'], { env: deploy.env() });
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as unknown[];
}

describe('`jobq workflow validate` on broken files', () => {
  const cases: Array<{ title: string; name: string; content: string; line: RegExp }> = [
    {
      title: 'a YAML syntax error',
      name: 'syntax.yaml',
      content: yaml('name: broken', 'tasks:', '  - name: a', '    kwargs: {cmd: "true"', '  - name: b'),
      line: /^syntax\.yaml:5:3: error: syntax: YAML: .+$/,
    },
    {
      title: 'a JSON syntax error',
      name: 'syntax.json',
      content: '{\n  "name": "x",\n  "tasks": [\n    {"name": "a",, "kwargs": {}}\n  ]\n}\n',
      line: /^syntax\.json:4:18: error: syntax: JSON: .+$/,
    },
    {
      title: 'a cycle',
      name: 'cycle.yaml',
      content: yaml(
        'name: cycle',
        'tasks:',
        '  - name: a',
        '    depends_on: [c]',
        '    kwargs: {cmd: "true"}',
        '  - name: b',
        '    depends_on: [a]',
        '    kwargs: {cmd: "true"}',
        '  - name: c',
        '    depends_on: [b]',
        '    kwargs: {cmd: "true"}',
      ),
      line: /^cycle\.yaml:4:17: error: cycle: dependency cycle: a -> c -> b -> a$/,
    },
    {
      title: 'an unknown dependency',
      name: 'unknown.yaml',
      content: yaml(
        'name: unknown',
        'tasks:',
        '  - name: a',
        '    kwargs: {cmd: "true"}',
        '  - name: b',
        '    depends_on: [a, nope]',
        '    kwargs: {cmd: "true"}',
      ),
      line: /^unknown\.yaml:6:21: error: unknown-dependency: task "b" depends on "nope", which is not a task of this workflow$/,
    },
  ];

  it.concurrent.each(cases)('$title: exit 1 and a file:line:col: code: line', async ({ name, content, line }) => {
    const path = await file(name, content);
    const result = await runCli(['workflow', 'validate', path], { cwd: dir.path });
    expectCleanRefusal(result);
    const lines = result.stderr.split('\n').filter((l) => l !== '');
    expect(lines.map((l) => l.replace(`${path}`, name))).toEqual([expect.stringMatching(line), `FAIL  ${name}`]);
  });

  it.concurrent('every problem of a file is reported, each on its own line', async () => {
    await file(
      'many.yaml',
      yaml(
        'name: many',
        'tasks:',
        '  - name: a',
        '    kwargs: {cmd: "true"}',
        '  - name: a',
        '    depends_on: [a, zz]',
        '    kwargs: {cmd: "true"}',
      ),
    );
    const result = await runCli(['workflow', 'validate', 'many.yaml'], { cwd: dir.path });
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n').filter((l) => l !== '')).toEqual([
      expect.stringMatching(/^many\.yaml:5:11: error: duplicate-task: /),
      expect.stringMatching(/^many\.yaml:6:18: error: self-dependency: /),
      expect.stringMatching(/^many\.yaml:6:21: error: unknown-dependency: /),
      'FAIL  many.yaml',
    ]);
  });
});

/** Files refused before anything is written, with the line every refusal must print. */
function hostileCases(marker: string): Array<{ title: string; name: string; content: () => string; line: RegExp }> {
  const level = (name: string, below: string): string => `${name}: &${name} [${Array.from({ length: 9 }, () => `*${below}`).join(',')}]`;
  return [
    {
      title: 'a YAML alias bomb (billion laughs)',
      name: 'bomb.yaml',
      content: () =>
        yaml(
          'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
          ...Array.from({ length: 8 }, (_, i) => level(`l${i + 1}`, `l${i}`)),
          'name: bomb',
          'tasks:',
          '  - name: a',
          '    kwargs: {cmd: "true", payload: *l8}',
        ),
      line: /^bomb\.yaml: error: alias-limit: YAML aliases expand past the limit of \d+ nodes/,
    },
    {
      title: 'a 10 MB file',
      name: 'huge.yaml',
      content: () =>
        yaml('name: huge', 'tasks:', '  - name: a', '    kwargs:', '      cmd: "true"', `      pad: "${'x'.repeat(10 * 1024 * 1024)}"`),
      line: /^huge\.yaml: error: too-large: the file is \d+ bytes; workflow files are limited to \d+ bytes$/,
    },
    {
      title: 'a task name with ../',
      name: 'dotdot.yaml',
      content: () => yaml('name: dotdot', 'tasks:', '  - name: ../../etc/passwd', '    kwargs: {cmd: "true"}'),
      line: /^dotdot\.yaml:3:11: error: bad-name: task name "\.\.\/\.\.\/etc\/passwd": .*"\.\."/,
    },
    {
      title: 'a condition calling __import__("os")',
      name: 'import.yaml',
      content: () =>
        yaml(
          'name: import',
          'tasks:',
          '  - name: a',
          '    kwargs: {cmd: "true"}',
          '  - name: b',
          '    depends_on: [a]',
          `    condition: '__import__("os").system("touch ${marker}") or inputs.a.x'`,
          '    kwargs: {cmd: "true"}',
        ),
      line: /^import\.yaml:7:17: error: condition-disallowed: function calls are not allowed: __import__\(\)/,
    },
    {
      title: 'a condition calling open("x")',
      name: 'open.yaml',
      content: () =>
        yaml(
          'name: open',
          'tasks:',
          '  - name: a',
          '    kwargs: {cmd: "true"}',
          '  - name: b',
          '    depends_on: [a]',
          `    condition: 'open("/etc/passwd") == inputs.a.x'`,
          '    kwargs: {cmd: "true"}',
        ),
      line: /^open\.yaml:7:17: error: condition-disallowed: function calls are not allowed: open\(\)/,
    },
    {
      title: 'a condition calling a method of a dunder attribute',
      name: 'dunder.yaml',
      content: () =>
        yaml(
          'name: dunder',
          'tasks:',
          '  - name: a',
          '    kwargs: {cmd: "true"}',
          '  - name: b',
          '    depends_on: [a]',
          `    condition: 'inputs.a.x.__class__.__subclasses__()'`,
          '    kwargs: {cmd: "true"}',
        ),
      line: /^dunder\.yaml:7:\d+: error: condition-disallowed: function calls are not allowed/,
    },
    {
      title: 'a 100 000-deep nested YAML flow sequence',
      name: 'deep.yaml',
      content: () =>
        yaml(
          'name: deep',
          'tasks:',
          '  - name: a',
          '    kwargs:',
          '      cmd: "true"',
          `      p: ${'['.repeat(100_000)}${']'.repeat(100_000)}`,
        ),
      line: /^deep\.yaml:\d+:\d+: error: syntax: /,
    },
  ];
}

describe('hostile workflow files: validate and submit refuse them with one line and write nothing', () => {
  const marker = join(tmpdir(), `jobq-e2e-pwned-${randomBytes(4).toString('hex')}`);
  // Concurrent tests start before the hooks of nested blocks run: the deployment is made on first use.
  let shared: Promise<Deployment> | undefined;
  const hostile = (): Promise<Deployment> => (shared ??= deployment(storage, 'hostile'));

  it.concurrent.each(hostileCases(marker))('$title', async ({ name, content, line }) => {
    const deploy = await hostile();
    await file(name, content());
    const [validate, submit] = await Promise.all([
      runCli(['workflow', 'validate', name], { cwd: dir.path }),
      runCli(['workflow', 'submit', name], { cwd: dir.path, env: deploy.env() }),
    ]);
    for (const result of [validate, submit]) {
      expectCleanRefusal(result);
      expect(result.stderr.split('\n')[0]).toMatch(line);
    }
    expect(validate.stderr).toContain(`FAIL  ${name}`);
    expect(submit.stderr).toContain('jobq: 1 of 1 workflow file(s) are invalid: nothing was submitted');
    // Refused before storage was touched: not even the containers exist, and no workflow is listed.
    expect(await workflowsContainerExists(deploy)).toBe(false);
    expect(await listWorkflows(deploy)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it.concurrent('--debug adds the stack of the failure', async () => {
    const deploy = await hostile();
    await file('debug.yaml', yaml('name: debug', 'tasks:', '  - name: ../x', '    kwargs: {cmd: "true"}'));
    const result = await runCli(['workflow', 'submit', 'debug.yaml', '--debug'], { cwd: dir.path, env: deploy.env() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^debug\.yaml:3:11: error: bad-name: /);
    expect(result.stderr).toMatch(STACK_LINE);
  });
});

describe('conditions that look hostile but are plain input lookups', () => {
  it.concurrent('inputs.a.x.__class__ reads the key "__class__" of a\'s output JSON (null when missing): valid', async () => {
    await file(
      'dunder-field.yaml',
      yaml(
        'name: dunder-field',
        'tasks:',
        '  - name: a',
        '    kwargs: {cmd: "true"}',
        '  - name: b',
        '    depends_on: [a]',
        "    condition: 'inputs.a.x.__class__'",
        '    kwargs: {cmd: "true"}',
      ),
    );
    const result = await runCli(['workflow', 'validate', 'dunder-field.yaml'], { cwd: dir.path });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: 'OK    dunder-field.yaml  (2 tasks)\n' });
  });
});

describe('values that cannot be stored: a cycle, nesting past 64 levels', () => {
  // A self-referencing alias makes a circular kwargs object; 200 000 nested arrays in JSON parse
  // fine. Both are refused by validation, before submit touches storage.
  const cases = [
    {
      title: 'a self-referencing YAML alias',
      name: 'recursive.yaml',
      content: () => yaml('name: recursive', 'tasks: &t', '  - name: a', '    kwargs: {cmd: "true", self: *t}'),
    },
    {
      title: '200 000-deep nesting in JSON kwargs',
      name: 'deep.json',
      content: () => `{"name":"deep","tasks":[{"name":"a","kwargs":{"cmd":"true","p":${'['.repeat(200_000)}${']'.repeat(200_000)}}}]}`,
    },
  ];

  it.concurrent.each(cases)('$title: validate and submit exit 1 with a type issue and write no workflow', async ({ name, content }) => {
    const own = await deployment(storage, 'unstorable');
    await file(name, content());
    const validate = await runCli(['workflow', 'validate', name], { cwd: dir.path });
    expect(validate.code).toBe(1);
    expect(validate.stderr).toMatch(
      new RegExp(`^${name.replace('.', '\\.')}: error: type: (a value contains itself|the definition nests deeper than 64 levels)`, 'm'),
    );
    const submit = await runCli(['workflow', 'submit', name], { cwd: dir.path, env: own.env() });
    expect(submit.code).toBe(1);
    expect(submit.stdout.trim()).toBe('');
    expect(submit.stderr).not.toMatch(STACK_LINE);
    const lines = submit.stderr.split('\n').filter((l) => l !== '');
    expect(lines.length).toBeLessThanOrEqual(3);
    expect(lines[0]).toMatch(new RegExp(`^${name.replace('.', '\\.')}: error: type: `));
    expect(await listWorkflows(own)).toEqual([]);
  });
});
