import { describe, expect, it } from '@jest/globals';
import { isStorageAccountName } from './names';

describe('isStorageAccountName', () => {
  it('accepts 3–24 lowercase letters and digits, and nothing else', () => {
    expect(['abc', 'devstoreaccount1', 'a'.repeat(24)].map(isStorageAccountName)).toEqual([true, true, true]);
    expect(['ab', 'a'.repeat(25), 'MyAccount', 'my-account', 'acct/prefix', ''].map(isStorageAccountName)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
