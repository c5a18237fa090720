import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SECRET_NAME_PATTERN, findSecretRefs, resolveSecretRefs } from './secret-refs';

describe('findSecretRefs', () => {
  it('finds whole-value and embedded references, with or without spaces', () => {
    expect(findSecretRefs('${{ secrets.TOKEN }}')).toEqual({ refs: [{ name: 'TOKEN', index: 0, length: 20 }], problems: [] });
    const text = 'user:${{secrets.user_1}}@${{ \tsecrets._HOST  }}/x';
    expect(findSecretRefs(text)).toEqual({
      refs: [
        { name: 'user_1', index: 5, length: 19 },
        { name: '_HOST', index: 25, length: 22 },
      ],
      problems: [],
    });
  });

  it('finds nothing in text without "${{", including shell and other template syntax', () => {
    for (const text of ['', 'plain', '$HOME', '${HOME}', '{{ secrets.X }}', '$ {{ secrets.X }}', '}}']) {
      expect(findSecretRefs(text)).toEqual({ refs: [], problems: [] });
    }
  });

  it('reports every "${{" that does not start a reference, at its offset', () => {
    const cases: Array<[text: string, index: number, fragment: string]> = [
      ['${{ secret.X }}', 0, 'is not a secret reference'],
      ['a ${{ env.X }}', 2, 'write ${{ secrets.NAME }}'],
      ['${{ secrets.1X }}', 0, '"1X" is not a secret name'],
      ['${{ secrets.A-B }}', 0, '"A-B" is not a secret name'],
      ['${{ secrets. }}', 0, '"" is not a secret name'],
      ['${{ SECRETS.X }}', 0, 'is not a secret reference'],
      ['x${{ secrets.X', 1, 'not closed'],
      ['${{}}', 0, 'is not a secret reference'],
    ];
    for (const [text, index, fragment] of cases) {
      const scan = findSecretRefs(text);
      expect(scan.refs).toEqual([]);
      expect(scan.problems).toEqual([{ index, message: expect.stringContaining(fragment) }]);
      expect(scan.problems[0]?.message).not.toMatch(/\n/);
    }
  });

  it('keeps scanning after a malformed reference', () => {
    const scan = findSecretRefs('${{ nope }} ${{ secrets.OK }}');
    expect(scan.refs).toEqual([{ name: 'OK', index: 12, length: 17 }]);
    expect(scan.problems.map((p) => p.index)).toEqual([0]);
  });

  it('never throws and reports only well-formed names', () => {
    const name = new RegExp(SECRET_NAME_PATTERN);
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('$', '{', '}', ' ', 's', 'e', 'c', 'r', 't', '.', 'A', '1', '_', '\n', 'x') }),
        (text) => {
          const scan = findSecretRefs(text);
          for (const ref of scan.refs) {
            expect(name.test(ref.name)).toBe(true);
            expect(text.slice(ref.index, ref.index + 3)).toBe('${{');
          }
          for (const problem of scan.problems) expect(text.slice(problem.index, problem.index + 3)).toBe('${{');
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('resolveSecretRefs', () => {
  const secrets: Record<string, string> = { TOKEN: 's3cr3t', EMPTY: '', TRICKY: '${{ secrets.TOKEN }}' };
  const lookup = (name: string) => (Object.hasOwn(secrets, name) ? secrets[name] : undefined);

  it('replaces every reference and leaves the rest of the text alone', () => {
    expect(resolveSecretRefs('Bearer ${{ secrets.TOKEN }}', lookup)).toEqual({ ok: true, value: 'Bearer s3cr3t' });
    expect(resolveSecretRefs('${{secrets.TOKEN}}:${{ secrets.TOKEN }}', lookup)).toEqual({ ok: true, value: 's3cr3t:s3cr3t' });
    expect(resolveSecretRefs('[${{ secrets.EMPTY }}]', lookup)).toEqual({ ok: true, value: '[]' });
    expect(resolveSecretRefs('no refs $HOME', lookup)).toEqual({ ok: true, value: 'no refs $HOME' });
  });

  it('does not resolve a reference that a secret value contains', () => {
    expect(resolveSecretRefs('${{ secrets.TRICKY }}', lookup)).toEqual({ ok: true, value: '${{ secrets.TOKEN }}' });
  });

  it('names every missing secret once, in order, and never returns a partly resolved text', () => {
    expect(resolveSecretRefs('${{ secrets.B }} ${{ secrets.TOKEN }} ${{ secrets.A }} ${{ secrets.B }}', lookup)).toEqual({
      ok: false,
      missing: ['B', 'A'],
      problems: [],
    });
  });

  it('fails on a malformed reference', () => {
    const result = resolveSecretRefs('${{ secrets.TOKEN }} ${{ secret.TOKEN }}', lookup);
    expect(result).toEqual({
      ok: false,
      missing: [],
      problems: [{ index: 21, message: expect.stringContaining('not a secret reference') }],
    });
  });
});
