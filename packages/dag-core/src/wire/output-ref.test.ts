import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  blobOutputRef,
  canonicalOutputAttempt,
  canonicalOutputBlobPath,
  decodeInlineOutput,
  INLINE_FALLBACK_MAX_BYTES,
  INLINE_OUTPUT_MAX_BYTES,
  isBase64Md5,
  isCanonicalOutputRef,
  isValidContainerName,
  legacyOutputBlobPath,
  parseBlobLocation,
  parseCanonicalOutputPath,
  parseOutputRef,
} from './output-ref';
import { containerArb, md5Arb, taskNameArb, workflowIdArb } from './test-helpers/arbitraries';

// MD5s with the characters that make splitting tricky.
const MD5_SLASH = 'ab/cd/ef/gh/ij/kl/mnoQ==';
const MD5_PLUS = 'ab+cd+ef+gh+ij+kl+mnoQ==';
const MD5_BOTH = 'rL0Y20zC+Fzt72VPzMSk/A==';

describe('constants', () => {
  it('has the documented sizes', () => {
    expect(INLINE_OUTPUT_MAX_BYTES).toBe(32 * 1024);
    expect(INLINE_FALLBACK_MAX_BYTES).toBe(512000);
  });
});

describe('isBase64Md5 / isValidContainerName', () => {
  it('accepts real MD5s and rejects look-alikes', () => {
    expect(isBase64Md5(MD5_SLASH)).toBe(true);
    expect(isBase64Md5(MD5_PLUS)).toBe(true);
    expect(isBase64Md5(MD5_BOTH)).toBe(true);
    expect(isBase64Md5('1B2M2Y8AsgTpgAmY7PhCfg==')).toBe(true); // MD5 of ""
    expect(isBase64Md5('1B2M2Y8AsgTpgAmY7PhCfg=')).toBe(false); // 23 chars
    expect(isBase64Md5('1B2M2Y8AsgTpgAmY7PhCfh==')).toBe(false); // impossible last char
    expect(isBase64Md5('1B2M2Y8AsgTpgAmY7PhC-g==')).toBe(false); // base64url
    expect(isBase64Md5(42)).toBe(false);
  });

  it('checks container names', () => {
    expect(isValidContainerName('outputs')).toBe(true);
    expect(isValidContainerName('job-q-1')).toBe(true);
    expect(isValidContainerName('ab')).toBe(false);
    expect(isValidContainerName('a'.repeat(64))).toBe(false);
    expect(isValidContainerName('Outputs')).toBe(false);
    expect(isValidContainerName('out_puts')).toBe(false);
  });
});

describe('canonicalOutputBlobPath / blobOutputRef', () => {
  it('builds the canonical path of one attempt under outputs/', () => {
    expect(canonicalOutputBlobPath('wf-1', 'train', 1)).toBe('outputs/wf-1/train/1.json');
    expect(canonicalOutputBlobPath('wf-1', 'train', 2)).toBe('outputs/wf-1/train/2.json');
    expect(canonicalOutputBlobPath('wf-1', 'group/step', 12)).toBe('outputs/wf-1/group/step/12.json');
    expect(() => canonicalOutputBlobPath('a/b', 't', 1)).toThrow(RangeError);
    expect(() => canonicalOutputBlobPath('..', 't', 1)).toThrow(RangeError);
    expect(() => canonicalOutputBlobPath('wf', '', 1)).toThrow(RangeError);
    for (const attemptNo of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
      expect(() => canonicalOutputBlobPath('wf', 't', attemptNo)).toThrow('attempt number must be an integer ≥ 1');
    }
    expect(legacyOutputBlobPath('wf-1', 'group/step')).toBe('wf-1/group/step.json');
    expect(() => legacyOutputBlobPath('a/b', 't')).toThrow(RangeError);
  });

  it('reads a canonical path back into its parts, and nothing else', () => {
    expect(parseCanonicalOutputPath('outputs/wf-1/train/1.json')).toEqual({ workflowId: 'wf-1', taskName: 'train', attemptNo: 1 });
    expect(parseCanonicalOutputPath('outputs/wf/a/2/b/30.json')).toEqual({ workflowId: 'wf', taskName: 'a/2/b', attemptNo: 30 });
    for (const path of [
      'wf/train.json', // legacy
      'outputs/wf/train.json', // no attempt
      'outputs/wf//1.json', // empty task
      'outputs/wf/t/0.json',
      'outputs/wf/t/01.json',
      'outputs/wf/t/-1.json',
      'outputs/wf/t/1.5.json',
      'outputs/wf/t/9007199254740992.json', // 2^53
      'outputs/wf/t/1',
      'outputs/../t/1.json',
      'workflow-files/wf/t/1.json',
    ]) {
      expect([path, parseCanonicalOutputPath(path)]).toEqual([path, null]);
    }
  });

  it('gives each (workflow, task, attempt) its own path (property)', () => {
    const parts = fc.tuple(workflowIdArb, taskNameArb, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
    fc.assert(
      fc.property(parts, parts, ([wf, task, attemptNo], [wf2, task2, attemptNo2]) => {
        const path = canonicalOutputBlobPath(wf, task, attemptNo);
        expect(parseCanonicalOutputPath(path)).toEqual({ workflowId: wf, taskName: task, attemptNo });
        if (wf !== wf2 || task !== task2 || attemptNo !== attemptNo2)
          expect(canonicalOutputBlobPath(wf2, task2, attemptNo2)).not.toBe(path);
      }),
    );
  });

  it('builds blob refs with and without md5', () => {
    expect(blobOutputRef('outputs', 'wf/t.json', MD5_SLASH)).toBe(`blob:outputs/wf/t.json:${MD5_SLASH}`);
    expect(blobOutputRef('outputs', 'wf/t.json')).toBe('blob:outputs/wf/t.json');
    expect(blobOutputRef('outputs', 'wf/t.json', null)).toBe('blob:outputs/wf/t.json');
  });

  it('rejects arguments that could not be read back', () => {
    expect(() => blobOutputRef('UP', 'p')).toThrow('invalid container name');
    expect(() => blobOutputRef('outputs', '')).toThrow('non-empty');
    expect(() => blobOutputRef('outputs', 'p', 'not-an-md5')).toThrow('md5 must be a base64 MD5');
    expect(() => blobOutputRef('outputs', `p:${MD5_PLUS}`)).toThrow('needs an explicit md5');
    // with an explicit md5 such a path is fine: the LAST colon separates the md5
    const ref = blobOutputRef('outputs', `p:${MD5_PLUS}`, MD5_SLASH);
    expect(parseOutputRef(ref)).toEqual({ kind: 'blob', container: 'outputs', path: `p:${MD5_PLUS}`, md5: MD5_SLASH });
  });

  it('round-trips through parseOutputRef (property)', () => {
    const pathArb = fc
      .string({ minLength: 1, maxLength: 30 })
      .filter((p) => !isBase64Md5(p.slice(p.lastIndexOf(':') + 1)) || !p.includes(':'));
    fc.assert(
      fc.property(containerArb, pathArb, fc.option(md5Arb, { nil: null }), (container, path, md5) => {
        expect(parseOutputRef(blobOutputRef(container, path, md5))).toEqual({ kind: 'blob', container, path, md5 });
      }),
    );
  });
});

describe('parseOutputRef', () => {
  it('classifies inline JSON', () => {
    for (const json of ['{"a":1}', '42', '"text"', 'null', 'true', '[1,2]', ' {"x": [1, {"y": null}]} ']) {
      expect(parseOutputRef(json)).toEqual({ kind: 'inline', json });
    }
    // a JSON string that happens to start with blob: is still inline
    expect(parseOutputRef('"blob:outputs/a"')).toEqual({ kind: 'inline', json: '"blob:outputs/a"' });
  });

  it('parses a blob ref whose md5 contains "/" and "+"', () => {
    expect(parseOutputRef(`blob:outputs/wf-1/a/b.json:${MD5_BOTH}`)).toEqual({
      kind: 'blob',
      container: 'outputs',
      path: 'wf-1/a/b.json',
      md5: MD5_BOTH,
    });
    expect(parseOutputRef(`blob:outputs/wf-1/train.json:${MD5_SLASH}`)).toEqual({
      kind: 'blob',
      container: 'outputs',
      path: 'wf-1/train.json',
      md5: MD5_SLASH,
    });
    expect(parseOutputRef(`blob:job-outputs/wf/a/b.json:${MD5_PLUS}`)).toEqual({
      kind: 'blob',
      container: 'job-outputs',
      path: 'wf/a/b.json',
      md5: MD5_PLUS,
    });
  });

  it('parses a blob ref without md5, including paths with ":"', () => {
    expect(parseOutputRef('blob:outputs/wf-1/train.json')).toEqual({
      kind: 'blob',
      container: 'outputs',
      path: 'wf-1/train.json',
      md5: null,
    });
    expect(parseOutputRef('blob:outputs/a:b/c:d.json')).toEqual({ kind: 'blob', container: 'outputs', path: 'a:b/c:d.json', md5: null });
    // something after the last colon that is not an md5 stays in the path
    expect(parseOutputRef('blob:outputs/x.json:1B2M2Y8AsgTpgAmY7PhCfg')).toEqual({
      kind: 'blob',
      container: 'outputs',
      path: 'x.json:1B2M2Y8AsgTpgAmY7PhCfg',
      md5: null,
    });
  });

  it('returns unknown for garbage and malformed blob refs', () => {
    for (const raw of [
      '',
      'garbage',
      '{unterminated',
      'blob:',
      'blob:outputs',
      'blob:outputs/',
      'blob:UP/x',
      'blob:ab/x',
      `blob:outputs/:${MD5_PLUS}`,
      'https://x/y',
    ]) {
      expect(parseOutputRef(raw)).toEqual({ kind: 'unknown', raw });
    }
  });

  it('never throws on arbitrary strings (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `blob:${s}`),
          fc.string({ unit: 'binary' }),
        ),
        (s) => {
          const r = parseOutputRef(s);
          expect(['inline', 'blob', 'unknown']).toContain(r.kind);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('parseBlobLocation', () => {
  it('splits at the first slash', () => {
    expect(parseBlobLocation('state/upstream/wf/t/1.json')).toEqual({ container: 'state', path: 'upstream/wf/t/1.json' });
    expect(parseBlobLocation('state/')).toBeNull();
    expect(parseBlobLocation('state')).toBeNull();
    expect(parseBlobLocation('St/x')).toBeNull();
  });
});

describe('isCanonicalOutputRef / canonicalOutputAttempt', () => {
  it('recognises the canonical blob of any attempt of a task', () => {
    expect(isCanonicalOutputRef(`blob:outputs/outputs/wf/t/1.json:${MD5_SLASH}`, 'wf', 't')).toBe(true);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf/t/3.json', 'wf', 't', 'outputs')).toBe(true);
    expect(canonicalOutputAttempt(`blob:c-1/outputs/wf/a/b/3.json:${MD5_PLUS}`, 'wf', 'a/b', 'c-1')).toBe(3);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf/t/1.json', 'wf', 't', 'other')).toBe(false);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf/u/1.json', 'wf', 't')).toBe(false);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf2/t/1.json', 'wf', 't')).toBe(false);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf/t/1/x.json', 'wf', 't')).toBe(false);
    expect(isCanonicalOutputRef('{"a":1}', 'wf', 't')).toBe(false);
    expect(isCanonicalOutputRef('blob:outputs/outputs/wf/t/1.json', 'bad/wf', 't')).toBe(false);
    // The legacy path (one blob for every attempt) is not canonical.
    expect(isCanonicalOutputRef(`blob:outputs/wf/t.json:${MD5_SLASH}`, 'wf', 't')).toBe(false);
    expect(canonicalOutputAttempt('blob:outputs/wf/t.json', 'wf', 't')).toBeNull();
  });

  it('holds for every canonical ref built from its parts (property)', () => {
    fc.assert(
      fc.property(
        workflowIdArb,
        taskNameArb,
        fc.integer({ min: 1 }),
        containerArb,
        fc.option(md5Arb, { nil: null }),
        (wf, task, attemptNo, container, md5) => {
          const ref = blobOutputRef(container, canonicalOutputBlobPath(wf, task, attemptNo), md5);
          expect(canonicalOutputAttempt(ref, wf, task, container)).toBe(attemptNo);
          expect(isCanonicalOutputRef(ref, wf, task, container)).toBe(true);
          expect(isCanonicalOutputRef(ref, wf, `${task}x`, container)).toBe(false);
          expect(isCanonicalOutputRef(blobOutputRef(container, legacyOutputBlobPath(wf, task), md5), wf, task, container)).toBe(false);
        },
      ),
    );
  });
});

describe('decodeInlineOutput', () => {
  it('parses inline JSON', () => {
    expect(decodeInlineOutput('{"loss":0.25,"files":["a"]}')).toEqual({ ok: true, value: { loss: 0.25, files: ['a'] } });
    expect(decodeInlineOutput('null')).toEqual({ ok: true, value: null });
  });

  it('reports blob refs and bad JSON', () => {
    const blob = decodeInlineOutput('blob:outputs/wf/t.json');
    expect(blob).toEqual({ ok: false, error: 'output ref: is a blob ref, not inline JSON' });
    const bad = decodeInlineOutput('{"a":');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toContain('output ref: not valid inline JSON');
    expect(decodeInlineOutput(undefined as unknown as string)).toEqual({ ok: false, error: 'output ref: expected a string, got nothing' });
  });
});
