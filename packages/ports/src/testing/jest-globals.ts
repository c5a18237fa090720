import type * as Jest from '@jest/globals';

/**
 * The jest functions the contract suites use, taken from the globals jest injects into every test
 * file (its default `injectGlobals: true`) when a suite runs, not imported from `@jest/globals`:
 * `@jobq/ports` has no runtime dependency on jest, so a production install never contains it
 * (packages/ports/README.md#contract-suites-jobqportstesting). The types come from
 * `@jest/globals`, which adapter authors running jest have.
 */
type Globals = Pick<typeof Jest, 'afterEach' | 'describe' | 'expect' | 'it'>;

function jestGlobal<K extends keyof Globals>(name: K): Globals[K] {
  const read = (): Globals[K] => {
    const value = (globalThis as Record<string, unknown>)[name];
    if (typeof value !== 'function') {
      throw new Error(`@jobq/ports/testing runs inside jest tests: the global "${name}" is missing (is injectGlobals off?)`);
    }
    return value as Globals[K];
  };
  // A stand-in that forwards calls and properties (expect.any, it.each) to the global on each use.
  return new Proxy(function jestGlobalStandIn() {}, {
    apply: (_target, thisArg, args: unknown[]) => Reflect.apply(read() as (...a: unknown[]) => unknown, thisArg, args),
    get: (_target, property) => Reflect.get(read(), property),
  }) as unknown as Globals[K];
}

export const afterEach: typeof Jest.afterEach = jestGlobal('afterEach');
export const describe: typeof Jest.describe = jestGlobal('describe');
export const expect: typeof Jest.expect = jestGlobal('expect');
export const it: typeof Jest.it = jestGlobal('it');
