import { describe as jestDescribe, expect as jestExpect, it as jestIt } from '@jest/globals';
import { expect, it } from './jest-globals';

// The contract suites use jest through the globals jest injects (no runtime import of jest).
jestDescribe('the contract suites’ jest functions', () => {
  jestIt('forward calls and properties to the globals jest injected', () => {
    expect(1 + 1).toBe(2);
    jestExpect(expect.any(Number)).toEqual(jestExpect.any(Number));
    jestExpect(typeof it.each).toBe('function');
  });

  jestIt('say in one line that they run inside jest when a global is missing', () => {
    const globals = globalThis as Record<string, unknown>;
    const saved = globals.expect;
    delete globals.expect;
    try {
      jestExpect(() => expect(1)).toThrow(
        '@jobq/ports/testing runs inside jest tests: the global "expect" is missing (is injectGlobals off?)',
      );
    } finally {
      globals.expect = saved;
    }
  });
});
