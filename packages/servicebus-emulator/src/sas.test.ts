import { describe, expect, it } from '@jest/globals';
import { createSasToken, verifySasToken } from './sas';

const KEY = { keyName: 'RootManageSharedAccessKey', key: 'SAS_KEY_VALUE' };
const NOW = Date.UTC(2026, 0, 1);

describe('SAS tokens', () => {
  it('accepts a token signed with the key until it expires', () => {
    const token = createSasToken('sb://127.0.0.1:5672/jobs', KEY, NOW + 60_000);
    expect(verifySasToken(token, KEY, NOW)).toEqual({
      ok: true,
      resource: 'sb://127.0.0.1:5672/jobs',
      keyName: KEY.keyName,
      expiresAt: NOW + 60_000,
    });
    expect(verifySasToken(token, KEY, NOW + 60_000)).toMatchObject({ ok: false, reason: expect.stringContaining('expired') });
  });

  it('refuses another key, another key name, a changed resource or expiry, and junk, without echoing the key', () => {
    const token = createSasToken('sb://127.0.0.1:5672/jobs', KEY, NOW + 60_000);
    expect(verifySasToken(token, { ...KEY, key: 'other' }, NOW)).toMatchObject({
      ok: false,
      reason: 'the signature does not match the key',
    });
    expect(verifySasToken(token, { ...KEY, keyName: 'other' }, NOW)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('unknown key name'),
    });
    expect(verifySasToken(token.replace('jobs', 'other'), KEY, NOW)).toMatchObject({
      ok: false,
      reason: 'the signature does not match the key',
    });
    expect(verifySasToken(token.replace(/se=\d+/, `se=${NOW / 1000 + 120}`), KEY, NOW)).toMatchObject({
      ok: false,
      reason: 'the signature does not match the key',
    });
    for (const junk of ['', 'Bearer x', 'SharedAccessSignature sr=a', 'SharedAccessSignature sr=%E0&sig=a&se=1&skn=k']) {
      const verdict = verifySasToken(junk, KEY, NOW);
      expect(verdict.ok).toBe(false);
      expect(JSON.stringify(verdict)).not.toContain(KEY.key);
    }
  });
});
