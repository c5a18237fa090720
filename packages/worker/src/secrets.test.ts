import { resolveTaskSecrets, SecretMasker } from './secrets';

describe('secret references', () => {
  it('resolves ${{ secrets.NAME }} as a whole value or inside one, spaces allowed in the braces; text without a reference is kept', () => {
    const env = { JOBQ_SECRET_TOKEN: 't0ken-value', JOBQ_SECRET_USER: 'me' };
    expect(
      resolveTaskSecrets(
        { A: '${{ secrets.TOKEN }}', B: 'https://${{secrets.USER}}:${{  secrets.TOKEN  }}@host', C: '$TOKEN', D: '${ secrets.TOKEN }' },
        env,
      ),
    ).toEqual({
      values: { A: 't0ken-value', B: 'https://me:t0ken-value@host', C: '$TOKEN', D: '${ secrets.TOKEN }' },
      secrets: ['t0ken-value', 'me', 't0ken-value'],
    });
    // A malformed reference (refused by validate; only an older definition can hold one) fails the attempt.
    expect(() => resolveTaskSecrets({ A: '${{ env.TOKEN }}' }, env)).toThrow(/kwargs\.env\.A: .* is not a secret reference/);
  });

  it('reads JOBQ_SECRET_<NAME> from the worker environment; a missing one names the variable to set', () => {
    const env = { JOBQ_SECRET_API: 'api-key-1234', JOBQ_SECRET_EMPTY: '' };
    expect(resolveTaskSecrets({ A: '${{ secrets.API }}', B: 'plain', C: 'x${{ secrets.EMPTY }}y' }, env)).toEqual({
      values: { A: 'api-key-1234', B: 'plain', C: 'xy' },
      secrets: ['api-key-1234', ''],
    });
    expect(() => resolveTaskSecrets({ DB_PASSWORD: '${{ secrets.DB }}' }, env)).toThrow(
      'kwargs.env.DB_PASSWORD uses the secret "DB", but this worker has no JOBQ_SECRET_DB: set JOBQ_SECRET_DB in the worker\'s environment',
    );
  });
});

describe('SecretMasker', () => {
  it('replaces every known value by ***, longest first, line by line and JSON-escaped', () => {
    const masker = new SecretMasker();
    masker.add(['hunter22', 'hunter22-extended', 'first line\nsecond line', 'with "quotes"']);
    expect(masker.mask('a hunter22 b hunter22-extended c')).toBe('a *** b *** c');
    expect(masker.mask('output: second line')).toBe('output: ***');
    expect(masker.mask('found "with \\"quotes\\""')).toBe('found "***"');
    expect(masker.mask('nothing here')).toBe('nothing here');
  });

  it('does not mask values shorter than 4 characters', () => {
    const masker = new SecretMasker();
    masker.add(['abc', '', 'abcd']);
    expect(masker.mask('abc abcd')).toBe('abc ***');
  });
});
