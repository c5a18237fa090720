import { describe, expect, it } from '@jest/globals';
import { rewriteArgv } from './argv';

describe('rewriteArgv (the ACCOUNT/PREFIX and ACCOUNT/QUEUE shorthand)', () => {
  it('turns `workflow ACCOUNT/PREFIX CMD` into `workflow CMD --prefix ACCOUNT/PREFIX`', () => {
    expect(rewriteArgv(['workflow', 'acct/Proj', 'status', 'abc', '--json'])).toEqual([
      'workflow',
      'status',
      '--prefix',
      'acct/Proj',
      'abc',
      '--json',
    ]);
  });
  it('turns `ACCOUNT/QUEUE CMD` into `CMD --queue ACCOUNT/QUEUE`', () => {
    expect(rewriteArgv(['acct/gpu', 'push', '-c', 'echo hi'])).toEqual(['push', '--queue', 'acct/gpu', '-c', 'echo hi']);
  });
  it('leaves file paths, flags and plain commands alone', () => {
    expect(rewriteArgv(['workflow', 'run', 'examples/diamond.yaml'])).toEqual(['workflow', 'run', 'examples/diamond.yaml']);
    expect(rewriteArgv(['workflow', 'validate', 'a/b.yaml', 'c/d.yaml'])).toEqual(['workflow', 'validate', 'a/b.yaml', 'c/d.yaml']);
    expect(rewriteArgv(['workflow', '--help'])).toEqual(['workflow', '--help']);
    expect(rewriteArgv(['acct/gpu'])).toEqual(['acct/gpu']);
    expect(rewriteArgv([])).toEqual([]);
  });
});
