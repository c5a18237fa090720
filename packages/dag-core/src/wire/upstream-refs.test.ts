import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { blobOutputRef, canonicalOutputBlobPath, isBase64Md5 } from './output-ref';
import { md5Arb, taskNameArb, workflowIdArb } from './test-helpers/arbitraries';
import {
  compactUpstreamRefs,
  decodeCompactUpstreamRefs,
  decodeUpstreamOverflow,
  encodeUpstreamOverflow,
  expandUpstreamRefs,
  upstreamOverflowBlobPath,
} from './upstream-refs';

const MD5 = 'ab/cd+ef/gh+ij/kl+mnoQ==';

function expectError(r: { ok: boolean; error?: string }, fragment: string): void {
  expect(r.ok).toBe(false);
  expect(r.error).toContain(fragment);
}

describe('compactUpstreamRefs', () => {
  it('sorts parents into s / i / n', () => {
    const compact = compactUpstreamRefs(
      'wf1',
      [
        { name: 'a', outputRef: `blob:outputs/wf1/a.json:${MD5}` },
        { name: 'b', outputRef: '{"x":1}' },
        { name: 'c', outputRef: null },
        { name: 'd/e', outputRef: 'blob:outputs/wf1/d/e.json' },
        { name: 'f', outputRef: 'blob:other/wf1/f.json' }, // other container: not canonical
        { name: 'g', outputRef: 'blob:outputs/wf1/somewhere-else.json' }, // other path
        { name: 'h', outputRef: 'blob:outputs/wf2/h.json' }, // other workflow
        { name: 'k', outputRef: 'not-a-ref' }, // unknown form, kept verbatim
      ],
      'outputs',
    );
    expect(compact).toEqual({
      s: ['a', 'd/e'],
      i: {
        b: '{"x":1}',
        f: 'blob:other/wf1/f.json',
        g: 'blob:outputs/wf1/somewhere-else.json',
        h: 'blob:outputs/wf2/h.json',
        k: 'not-a-ref',
      },
      n: ['c'],
    });
    expect(JSON.stringify(compact).startsWith('{"s":')).toBe(true);
  });

  it('omits empty sections', () => {
    expect(compactUpstreamRefs('wf', [], 'outputs')).toEqual({});
    expect(Object.keys(compactUpstreamRefs('wf', [{ name: 'a', outputRef: null }], 'outputs'))).toEqual(['n']);
    expect(Object.keys(compactUpstreamRefs('wf', [{ name: 'a', outputRef: '1' }], 'outputs'))).toEqual(['i']);
  });

  it('rejects invalid arguments', () => {
    expect(() => compactUpstreamRefs('w/f', [], 'outputs')).toThrow('invalid workflow id');
    expect(() => compactUpstreamRefs('wf', [], 'O')).toThrow('invalid container name');
    expect(() => compactUpstreamRefs('wf', [{ name: '', outputRef: null }], 'outputs')).toThrow('invalid parent name');
    expect(() =>
      compactUpstreamRefs('wf', [{ name: 'a', outputRef: null }, { name: 'a', outputRef: '1' }], 'outputs'),
    ).toThrow('listed twice');
  });
});

describe('expandUpstreamRefs', () => {
  it('rebuilds canonical refs without md5', () => {
    expect(expandUpstreamRefs('wf1', { s: ['a', 'd/e'], i: { b: '{"x":1}' }, n: ['c'] }, 'outputs')).toEqual({
      a: 'blob:outputs/wf1/a.json',
      'd/e': 'blob:outputs/wf1/d/e.json',
      b: '{"x":1}',
      c: null,
    });
    expect(expandUpstreamRefs('wf1', {}, 'outputs')).toEqual({});
    expect(() => expandUpstreamRefs('wf1', {}, 'Bad')).toThrow('invalid container name');
    expect(() => expandUpstreamRefs('w/1', {}, 'outputs')).toThrow('invalid workflow id');
  });

  it('keeps a parent called "__proto__" as an own key', () => {
    const out = expandUpstreamRefs('wf', { n: ['__proto__'] }, 'outputs');
    expect(Object.keys(out)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('expand ∘ compact is the identity up to md5 of canonical refs (property)', () => {
    const container = 'outputs';
    const parentArb = (wf: string) =>
      fc.uniqueArray(
        fc.tuple(
          taskNameArb,
          fc.oneof(
            fc.constant<'canonical'>('canonical'),
            fc.constant<'canonical-md5'>('canonical-md5'),
            fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'),
            fc.constant(null),
            fc.string({ minLength: 1, maxLength: 10 }).map((p) => `blob:elsewhere/${p}`),
            fc.string(),
          ),
        ),
        { selector: ([name]) => name, maxLength: 12 },
      ).map((pairs) => ({ wf, pairs }));
    fc.assert(
      fc.property(workflowIdArb.chain(parentArb), md5Arb, ({ wf, pairs }, md5) => {
        const parents = pairs.map(([name, kind]) => {
          if (kind === 'canonical' || kind === 'canonical-md5') {
            const path = canonicalOutputBlobPath(wf, name);
            const ambiguous = isBase64Md5(path.slice(path.lastIndexOf(':') + 1));
            return { name, outputRef: blobOutputRef(container, path, kind === 'canonical-md5' || ambiguous ? md5 : null) };
          }
          return { name, outputRef: kind };
        });
        const compact = compactUpstreamRefs(wf, parents, container);
        const expanded = expandUpstreamRefs(wf, compact, container);
        const expected = Object.fromEntries(
          parents.map(({ name, outputRef }) => {
            const canonical = blobOutputRef(container, canonicalOutputBlobPath(wf, name), md5);
            return [name, outputRef === canonical ? `blob:${container}/${canonicalOutputBlobPath(wf, name)}` : outputRef];
          }),
        );
        expect(expanded).toEqual(expected);
        // and the compact form survives its own decoder and the overflow codec
        expect(decodeCompactUpstreamRefs(JSON.parse(JSON.stringify(compact)))).toEqual({ ok: true, value: compact });
        expect(decodeUpstreamOverflow(encodeUpstreamOverflow(compact))).toEqual({ ok: true, value: compact });
      }),
    );
  });
});

describe('decodeCompactUpstreamRefs', () => {
  it('accepts valid refs and drops empty sections', () => {
    expect(decodeCompactUpstreamRefs({ s: ['a'], i: { b: '1' }, n: ['c'] })).toEqual({ ok: true, value: { s: ['a'], i: { b: '1' }, n: ['c'] } });
    expect(decodeCompactUpstreamRefs({ s: [], i: {}, n: [] })).toEqual({ ok: true, value: {} });
  });

  it('reports each problem', () => {
    expectError(decodeCompactUpstreamRefs(null), 'upstream refs: must be an object with "s", "i" and/or "n", got null');
    expectError(decodeCompactUpstreamRefs([]), 'got an array');
    expectError(decodeCompactUpstreamRefs({ x: [] }), 'unknown key "x"');
    expectError(decodeCompactUpstreamRefs({ s: 'a' }), '"s" must be an array of parent names, got the string "a"');
    expectError(decodeCompactUpstreamRefs({ n: [1] }), '"n[0]" must be a non-empty string, got the number 1');
    expectError(decodeCompactUpstreamRefs({ s: ['a', ''] }), '"s[1]" must be a non-empty string');
    expectError(decodeCompactUpstreamRefs({ i: [] }), '"i" must be an object of parent name → output ref, got an array');
    expectError(decodeCompactUpstreamRefs({ i: { a: 1 } }), '"i"["a"] must be a string, got the number 1');
    expectError(decodeCompactUpstreamRefs({ i: { '': '1' } }), '"i" has an empty parent name');
    expectError(decodeCompactUpstreamRefs({ s: ['a', 'a'] }), 'parent "a" appears more than once');
    expectError(decodeCompactUpstreamRefs({ s: ['a'], n: ['a'] }), 'appears more than once');
    expectError(decodeCompactUpstreamRefs({ s: ['a'], i: { a: '1' } }), 'appears more than once');
  });
});

describe('upstream overflow', () => {
  it('builds the overflow path in the state container', () => {
    expect(upstreamOverflowBlobPath('wf-1', 'join', 2)).toBe('upstream/wf-1/join/2.json');
    expect(upstreamOverflowBlobPath('wf-1', 'a/b', 1)).toBe('upstream/wf-1/a/b/1.json');
    expect(() => upstreamOverflowBlobPath('wf/1', 'join', 2)).toThrow('invalid workflow id');
    expect(() => upstreamOverflowBlobPath('wf', '', 2)).toThrow('invalid task name');
    expect(() => upstreamOverflowBlobPath('wf', 'join', 0)).toThrow('attempt number must be an integer ≥ 1');
  });

  it('encodes the compact refs as JSON and reads them back', () => {
    const compact = { n: ['c'], s: ['a'], i: { b: '{"x":1}' } };
    const text = encodeUpstreamOverflow(compact);
    expect(text).toBe('{"s":["a"],"i":{"b":"{\\"x\\":1}"},"n":["c"]}');
    expect(decodeUpstreamOverflow(text)).toEqual({ ok: true, value: { s: ['a'], i: { b: '{"x":1}' }, n: ['c'] } });
    expect(encodeUpstreamOverflow({ s: [], i: {}, n: [] })).toBe('{}');
  });

  it('reports bad overflow content', () => {
    expectError(decodeUpstreamOverflow('{'), 'upstream overflow: not valid JSON');
    expectError(decodeUpstreamOverflow('[]'), 'upstream overflow: must be an object');
    expectError(decodeUpstreamOverflow('{"s":[2]}'), 'upstream overflow: "s[0]" must be a non-empty string');
    expectError(decodeUpstreamOverflow(7 as unknown as string), 'upstream overflow: expected JSON text, got the number 7');
  });
});
