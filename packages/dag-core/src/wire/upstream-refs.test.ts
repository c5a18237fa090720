import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { blobOutputRef, canonicalOutputBlobPath, legacyOutputBlobPath } from './output-ref';
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
  it('sorts parents into s (by attempt) / i / n', () => {
    const compact = compactUpstreamRefs(
      'wf1',
      [
        { name: 'a', outputRef: `blob:outputs/outputs/wf1/a/1.json:${MD5}` },
        { name: 'b', outputRef: '{"x":1}' },
        { name: 'c', outputRef: null },
        { name: 'd/e', outputRef: 'blob:outputs/outputs/wf1/d/e/3.json' },
        { name: 'f', outputRef: 'blob:other/outputs/wf1/f/1.json' }, // other container: not canonical
        { name: 'g', outputRef: 'blob:outputs/outputs/wf1/somewhere-else/1.json' }, // another task's blob
        { name: 'h', outputRef: 'blob:outputs/outputs/wf2/h/1.json' }, // other workflow
        { name: 'k', outputRef: 'not-a-ref' }, // unknown form, kept verbatim
        { name: 'l', outputRef: `blob:outputs/wf1/l.json:${MD5}` }, // legacy path: kept with its md5
        { name: 'm', outputRef: `blob:outputs/outputs/wf1/m/1.json:${MD5}` },
        { name: 'o', outputRef: 'blob:outputs/outputs/wf1/o/01.json' }, // not an attempt as written by the store
      ],
      'outputs',
    );
    expect(compact).toEqual({
      s: { '1': ['a', 'm'], '3': ['d/e'] },
      i: {
        b: '{"x":1}',
        f: 'blob:other/outputs/wf1/f/1.json',
        g: 'blob:outputs/outputs/wf1/somewhere-else/1.json',
        h: 'blob:outputs/outputs/wf2/h/1.json',
        k: 'not-a-ref',
        l: `blob:outputs/wf1/l.json:${MD5}`,
        o: 'blob:outputs/outputs/wf1/o/01.json',
      },
      n: ['c'],
    });
    expect(JSON.stringify(compact).startsWith('{"s":{"1":["a","m"],"3":["d/e"]},')).toBe(true);
  });

  it('lists attempt groups in attempt order, whatever the parent order', () => {
    const parents = [10, 2, 1, 2].map((attemptNo, k) => ({ name: `p${k}`, outputRef: `blob:outputs/outputs/wf/p${k}/${attemptNo}.json` }));
    const compact = compactUpstreamRefs('wf', parents, 'outputs');
    expect(JSON.stringify(compact)).toBe('{"s":{"1":["p2"],"2":["p1","p3"],"10":["p0"]}}');
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
      compactUpstreamRefs(
        'wf',
        [
          { name: 'a', outputRef: null },
          { name: 'a', outputRef: '1' },
        ],
        'outputs',
      ),
    ).toThrow('listed twice');
  });
});

describe('expandUpstreamRefs', () => {
  it('rebuilds the canonical refs of each attempt without md5', () => {
    expect(expandUpstreamRefs('wf1', { s: { '1': ['a'], '3': ['d/e'] }, i: { b: '{"x":1}' }, n: ['c'] }, 'outputs')).toEqual({
      a: 'blob:outputs/outputs/wf1/a/1.json',
      'd/e': 'blob:outputs/outputs/wf1/d/e/3.json',
      b: '{"x":1}',
      c: null,
    });
    expect(expandUpstreamRefs('wf1', {}, 'outputs')).toEqual({});
    expect(() => expandUpstreamRefs('wf1', {}, 'Bad')).toThrow('invalid container name');
    expect(() => expandUpstreamRefs('w/1', {}, 'outputs')).toThrow('invalid workflow id');
    expect(() => expandUpstreamRefs('wf1', { s: { x: ['a'] } }, 'outputs')).toThrow('not an attempt number');
  });

  it('expands the legacy s array (messages written before outputs were keyed by attempt) to the legacy path', () => {
    const legacy = decodeCompactUpstreamRefs({ s: ['a', 'd/e'], n: ['c'] });
    expect(legacy).toEqual({ ok: true, value: { s: ['a', 'd/e'], n: ['c'] } });
    if (!legacy.ok) return;
    expect(expandUpstreamRefs('wf1', legacy.value, 'outputs')).toEqual({
      a: 'blob:outputs/wf1/a.json',
      'd/e': 'blob:outputs/wf1/d/e.json',
      c: null,
    });
    // An overflow blob written by an older coordinator too.
    expect(decodeUpstreamOverflow('{"s":["a"],"i":{"b":"1"}}')).toEqual({ ok: true, value: { s: ['a'], i: { b: '1' } } });
  });

  it('keeps a parent called "__proto__" as an own key', () => {
    const out = expandUpstreamRefs('wf', { n: ['__proto__'] }, 'outputs');
    expect(Object.keys(out)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    const fromS = expandUpstreamRefs('wf', { s: { '2': ['__proto__'] } }, 'outputs');
    expect(Object.keys(fromS)).toEqual(['__proto__']);
  });

  it('expand ∘ compact is the identity up to the md5 of canonical refs (property)', () => {
    const container = 'outputs';
    const parentArb = (wf: string) =>
      fc
        .uniqueArray(
          fc.tuple(
            taskNameArb,
            fc.oneof(
              fc.integer({ min: 1, max: 5 }).map((attemptNo) => ({ canonical: attemptNo, md5: false })),
              fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }).map((attemptNo) => ({ canonical: attemptNo, md5: true })),
              fc.constant<'legacy'>('legacy'),
              fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'),
              fc.constant(null),
              fc.string({ minLength: 1, maxLength: 10 }).map((p) => `blob:elsewhere/${p}`),
              fc.string(),
            ),
          ),
          { selector: ([name]) => name, maxLength: 12 },
        )
        .map((pairs) => ({ wf, pairs }));
    fc.assert(
      fc.property(workflowIdArb.chain(parentArb), md5Arb, ({ wf, pairs }, md5) => {
        const expected = new Map<string, string | null>();
        const parents = pairs.map(([name, kind]) => {
          if (typeof kind === 'object' && kind !== null) {
            const path = canonicalOutputBlobPath(wf, name, kind.canonical);
            expected.set(name, `blob:${container}/${path}`);
            return { name, outputRef: blobOutputRef(container, path, kind.md5 ? md5 : null) };
          }
          const outputRef = kind === 'legacy' ? blobOutputRef(container, legacyOutputBlobPath(wf, name), md5) : kind;
          expected.set(name, outputRef);
          return { name, outputRef };
        });
        const compact = compactUpstreamRefs(wf, parents, container);
        expect(expandUpstreamRefs(wf, compact, container)).toEqual(Object.fromEntries(expected));
        // Legacy refs keep their md5: they go to "i" verbatim.
        const inline = new Map(Object.entries(compact.i ?? {}));
        for (const [name, kind] of pairs) if (kind === 'legacy') expect(inline.get(name)).toBe(expected.get(name));
        // and the compact form survives its own decoder and the overflow codec
        expect(decodeCompactUpstreamRefs(JSON.parse(JSON.stringify(compact)))).toEqual({ ok: true, value: compact });
        expect(decodeUpstreamOverflow(encodeUpstreamOverflow(compact))).toEqual({ ok: true, value: compact });
      }),
    );
  });
});

describe('decodeCompactUpstreamRefs', () => {
  it('accepts valid refs and drops empty sections and groups', () => {
    expect(decodeCompactUpstreamRefs({ s: { '1': ['a'], '2': ['d'] }, i: { b: '1' }, n: ['c'] })).toEqual({
      ok: true,
      value: { s: { '1': ['a'], '2': ['d'] }, i: { b: '1' }, n: ['c'] },
    });
    expect(decodeCompactUpstreamRefs({ s: { '1': [], '2': ['a'] } })).toEqual({ ok: true, value: { s: { '2': ['a'] } } });
    expect(decodeCompactUpstreamRefs({ s: { '1': [] } })).toEqual({ ok: true, value: {} });
    expect(decodeCompactUpstreamRefs({ s: [], i: {}, n: [] })).toEqual({ ok: true, value: {} });
    expect(decodeCompactUpstreamRefs({ s: {}, i: {}, n: [] })).toEqual({ ok: true, value: {} });
    // The legacy array form.
    expect(decodeCompactUpstreamRefs({ s: ['a'], i: { b: '1' }, n: ['c'] })).toEqual({
      ok: true,
      value: { s: ['a'], i: { b: '1' }, n: ['c'] },
    });
  });

  it('reports each problem', () => {
    expectError(decodeCompactUpstreamRefs(null), 'upstream refs: must be an object with "s", "i" and/or "n", got null');
    expectError(decodeCompactUpstreamRefs([]), 'got an array');
    expectError(decodeCompactUpstreamRefs({ x: [] }), 'unknown key "x"');
    expectError(
      decodeCompactUpstreamRefs({ s: 'a' }),
      '"s" must be an object of attempt number → parent names (or an array of parent names), got the string "a"',
    );
    for (const key of ['0', '01', '-1', '1.5', 'a', '', '9007199254740992', '__proto__']) {
      expectError(
        decodeCompactUpstreamRefs(JSON.parse(`{"s":{${JSON.stringify(key)}:["a"]}}`)),
        `"s" key ${JSON.stringify(key)} must be an attempt number`,
      );
    }
    expectError(decodeCompactUpstreamRefs({ s: { '1': 'a' } }), '"s.1" must be an array of parent names');
    expectError(decodeCompactUpstreamRefs({ s: { '1': [''] } }), '"s.1[0]" must be a non-empty string');
    expectError(decodeCompactUpstreamRefs({ s: { '1': ['a'], '2': ['a'] } }), 'parent "a" appears more than once');
    expectError(decodeCompactUpstreamRefs({ s: { '1': ['a'] }, n: ['a'] }), 'appears more than once');
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
    const compact = { n: ['c'], s: { '2': ['a'] }, i: { b: '{"x":1}' } };
    const text = encodeUpstreamOverflow(compact);
    expect(text).toBe('{"s":{"2":["a"]},"i":{"b":"{\\"x\\":1}"},"n":["c"]}');
    expect(decodeUpstreamOverflow(text)).toEqual({ ok: true, value: { s: { '2': ['a'] }, i: { b: '{"x":1}' }, n: ['c'] } });
    expect(encodeUpstreamOverflow({ s: [], i: {}, n: [] })).toBe('{}');
    expect(encodeUpstreamOverflow({ s: { '1': [] }, i: {}, n: [] })).toBe('{}');
    // A legacy array is written back as it is.
    expect(encodeUpstreamOverflow({ s: ['a'] })).toBe('{"s":["a"]}');
  });

  it('reports bad overflow content', () => {
    expectError(decodeUpstreamOverflow('{'), 'upstream overflow: not valid JSON');
    expectError(decodeUpstreamOverflow('[]'), 'upstream overflow: must be an object');
    expectError(decodeUpstreamOverflow('{"s":[2]}'), 'upstream overflow: "s[0]" must be a non-empty string');
    expectError(decodeUpstreamOverflow(7 as unknown as string), 'upstream overflow: expected JSON text, got the number 7');
  });
});
