import { describe, expect, it } from '@jest/globals';
import { runCli } from './test-helpers/cli';

// oclif's plugins as jobq uses them (docs/cli.md#conventions): help from @oclif/plugin-help, the
// "did you mean" of @oclif/plugin-not-found in jobq's one-line style, and one-line parse errors.
// runCli gives the child a pipe for stdin, so nothing may prompt.

describe('an unknown command', () => {
  it('names the closest command on one line and exits 2 without prompting', async () => {
    const result = await runCli(['workflow', 'stat', 'some-id', '--json']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('jobq: "workflow stat" is not a jobq command; did you mean "workflow status"? (see "jobq help workflow")\n');
  });

  it('suggests a topic for a misspelt topic', async () => {
    const result = await runCli(['wrkflow', 'list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('jobq: "wrkflow" is not a jobq command; did you mean "workflow"? (see "jobq help")\n');
  });
});

describe('parse errors', () => {
  it('a missing argument reads as one line naming it and the help to read', async () => {
    const result = await runCli(['workflow', 'status']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('jobq: missing argument ID (workflow id); see "jobq workflow status --help"\n');
  });

  it('an unknown flag points at the command\'s help instead of "See more help with --help"', async () => {
    const result = await runCli(['workflow', 'validate', '--no-such-flag', 'x.yaml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('jobq: Nonexistent flag: --no-such-flag; see "jobq workflow validate --help"\n');
  });
});

describe('help', () => {
  it("lists the topics and commands, including the plugins' commands", async () => {
    const root = await runCli(['--help']);
    expect(root.code).toBe(0);
    expect(root.stdout).toMatch(/TOPICS\n\s+config\s/);
    expect(root.stdout).toMatch(/\n\s+workflow\s+Submit, run, watch and operate workflow DAGs/);
    expect(root.stdout).toMatch(/\n\s+autocomplete\s+Display autocomplete installation instructions/);
    const topic = await runCli(['workflow', '--help']);
    expect(topic.code).toBe(0);
    expect(topic.stdout).toMatch(/\n\s+workflow status\s+Show the status of one workflow/);
    const command = await runCli(['workflow', 'run', '--help']);
    expect(command.code).toBe(0);
    expect(command.stdout).toContain('$ jobq workflow run FILE');
    expect(command.stdout).toMatch(/ARGUMENTS\n\s+FILE\s+Workflow file/);
  });
});
