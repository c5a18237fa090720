import { describe, expect, it } from '@jest/globals';
import { decodeError, decodeOk } from './decode-result';
import { isValidTaskName, isValidWorkflowId, WORKFLOW_ID_PATTERN } from './ids';

describe('ids', () => {
  it('accepts workflow ids of 1–128 [A-Za-z0-9._-] starting with a letter or digit', () => {
    for (const ok of ['wf', 'WF-1', '01JZ8K3V7Q2M4N6P8R0T2W4Y6A', 'a.b_c-d', '7', 'a..', `a${'b'.repeat(127)}`])
      expect(isValidWorkflowId(ok)).toBe(true);
    for (const bad of ['', '.', '..', '...', 'a/b', 'a b', 'é', 'a:b', 7, null, `a${'b'.repeat(128)}`])
      expect(isValidWorkflowId(bad)).toBe(false);
  });

  it('refuses the engine namespace: no id starts with "_", "." or "-"', () => {
    for (const bad of ['_coordinator.stats', '_coordinator.lock', '_shards', '.hidden', '-x']) expect(isValidWorkflowId(bad)).toBe(false);
    expect(WORKFLOW_ID_PATTERN.test('a/b')).toBe(false);
  });

  it('accepts any non-empty task name', () => {
    for (const ok of ['t', 'a/b', '%2F', ' ', '😀']) expect(isValidTaskName(ok)).toBe(true);
    for (const bad of ['', 3, undefined]) expect(isValidTaskName(bad)).toBe(false);
  });
});

describe('decode-result helpers', () => {
  it('build both variants', () => {
    expect(decodeOk(5)).toEqual({ ok: true, value: 5 });
    expect(decodeError('x: bad')).toEqual({ ok: false, error: 'x: bad' });
  });
});
