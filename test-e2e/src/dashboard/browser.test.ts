import { describe, expect, it, jest } from '@jest/globals';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumOrSkip, findChromium, SKIP_LINE } from './browser';

describe('finding chromium for the browser tests', () => {
  const empty = mkdtempSync(join(tmpdir(), 'jobq-no-chromium-'));
  const fake = join(mkdtempSync(join(tmpdir(), 'jobq-chromium-')), 'chromium');
  writeFileSync(fake, '#!/bin/sh\n');
  chmodSync(fake, 0o755);

  it('takes JOBQ_CHROMIUM, else chromium on PATH, else none', () => {
    expect(findChromium({ PATH: empty, JOBQ_CHROMIUM: fake })).toBe(fake);
    expect(findChromium({ PATH: join(fake, '..') })).toBe(fake);
    expect(findChromium({ PATH: empty })).toBeNull();
    expect(findChromium({ PATH: join(fake, '..'), JOBQ_CHROMIUM: join(empty, 'nope') })).toBeNull();
  });

  it('prints the skip line without one, and fails instead with JOBQ_REQUIRE_BROWSER=1', () => {
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(chromiumOrSkip({ PATH: empty })).toBeNull();
      expect(write).toHaveBeenCalledWith(`${SKIP_LINE}\n`);
    } finally {
      write.mockRestore();
    }
    expect(() => chromiumOrSkip({ PATH: empty, JOBQ_REQUIRE_BROWSER: '1' })).toThrow(
      'JOBQ_REQUIRE_BROWSER=1 but dashboard browser tests: no chromium (apt-get install chromium or set JOBQ_CHROMIUM)',
    );
  });
});
