import { afterEach, expect, it, jest } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJobqError } from '@jobq/ports';

afterEach(() => {
  jest.dontMock('@jobq/store-azure');
  jest.resetModules();
});

it('without @jobq/store-azure installed, a blob output is a clear invalid-config error (inline outputs still work)', async () => {
  jest.resetModules();
  jest.doMock('@jobq/store-azure', () => {
    const error = new Error("Cannot find module '@jobq/store-azure' from 'context.ts'") as NodeJS.ErrnoException;
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  });
  // Loaded after the mock, so the helpers see the missing package.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const helpers = require('./index') as typeof import('./index');
  const dir = await mkdtemp(join(tmpdir(), 'jobq-task-missing-'));
  try {
    const refs = join(dir, 'refs.json');
    await writeFile(refs, JSON.stringify({ small: '{"a":1}', big: 'blob:x-outputs/wf/big.json' }));
    helpers.configureTaskHelpers({
      env: { JOBQ_WORKFLOW_ID: 'wf', JOBQ_WORKFLOW_TASK: 't', JOBQ_WORKFLOW_PREFIX: 'devstoreaccount1/X', JOBQ_WORKFLOW_UPSTREAM_REFS: refs },
    });
    await expect(helpers.getUpstreamOutput('small')).resolves.toEqual({ a: 1 });
    let error: unknown;
    try {
      await helpers.getUpstreamOutput('big');
    } catch (e) {
      error = e;
    }
    expect(isJobqError(error, 'invalid-config')).toBe(true);
    expect((error as Error).message).toMatch(/need the package @jobq\/store-azure/);
    helpers.configureTaskHelpers();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
