import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { parseWorkflow } from './parse';
import { validateWorkflow } from './validate';
import type { Result } from '../result';

function wellFormed(result: Result<unknown>): boolean {
  if (result.ok) return Array.isArray(result.warnings);
  return (
    result.issues.length > 0 &&
    result.issues.every(
      (i) => typeof i.code === 'string' && i.code !== '' && typeof i.path === 'string' && typeof i.message === 'string' && i.message !== '',
    )
  );
}

const taskName = fc.oneof(fc.constantFrom('a', 'b', 'c', 'prep/x', '__m', '', ' '), fc.string({ maxLength: 6 }));

/** Strings with the characters and forms the kwargs checks care about. */
const awkward = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    'a\u0000b',
    '${{ secrets.X }}',
    'x${{ bad }}',
    '${{ secrets.1 }}',
    '',
    ' ',
    '${{ params.p }}',
    '${{ matrix.m }}',
    '${{ params.q',
  ),
);
/** Matrix axes, include and exclude lists, sometimes malformed. */
const scalarish = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom('x', 'a*', true),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 1 }),
);
const matrix = fc.oneof(
  fc.dictionary(
    fc.constantFrom('m', 'n', 'include', 'exclude', 'M', '1x'),
    fc.oneof(
      fc.array(scalarish, { maxLength: 3 }),
      fc.array(fc.dictionary(fc.constantFrom('m', 'n', 'k'), scalarish), { maxLength: 2 }),
      scalarish,
    ),
  ),
  fc.jsonValue({ maxDepth: 1 }),
);
const params = fc.oneof(
  fc.dictionary(
    fc.constantFrom('p', 'q', 'P', '1x'),
    fc.oneof(scalarish, fc.record({ type: fc.constantFrom('string', 'integer', 'float'), default: scalarish }, { requiredKeys: [] })),
  ),
  fc.jsonValue({ maxDepth: 1 }),
);
const env = fc.dictionary(
  fc.oneof(fc.constantFrom('A', 'A=B', '', '__proto__', 'N\u0000'), fc.string({ maxLength: 4 })),
  fc.oneof(awkward, fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 1 })),
);
/** kwargs keys: the ones the shell processor reads, reserved ones and "__proto__", which JavaScript treats apart. */
const kwargKey = fc.oneof(fc.constantFrom('cmd', 'cwd', 'env', 'bg_dirsync_to', '__proto__', '__x'), fc.string({ maxLength: 4 }));
const kwargs = fc.dictionary(
  kwargKey,
  fc.oneof(awkward, env, fc.jsonValue({ maxDepth: 2 }), fc.dictionary(fc.constantFrom('__proto__', 'k'), fc.jsonValue({ maxDepth: 1 }))),
);

/** Definition-shaped values, mostly valid and sometimes slightly off, to reach the deep checks. */
const definitionLike = fc.record(
  {
    name: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    tasks: fc.array(
      fc.record(
        {
          name: taskName,
          kwargs: fc.oneof(kwargs, fc.string()),
          depends_on: fc.oneof(fc.array(taskName, { maxLength: 4 }), fc.integer()),
          dep_policy: fc.oneof(fc.constantFrom('all', 'any', 'all_settled', 'some'), fc.integer({ min: -1, max: 4 }), fc.boolean()),
          condition: fc.oneof(fc.constant(null), fc.constantFrom('inputs.a.ok', 'all(inputs["*"].x)', 'inputs.b.y > 1'), fc.string()),
          queue: fc.oneof(fc.constant(null), fc.constantFrom('cpu', 'a/b', 'sb://ns/q', 'BAD')),
          num_retries: fc.oneof(fc.integer({ min: -2, max: 3 }), fc.double(), fc.boolean()),
          matrix,
        },
        { requiredKeys: [] },
      ),
      { maxLength: 6 },
    ),
    max_parallelism: fc.oneof(fc.integer({ min: -1, max: 3 }), fc.constant(null)),
    params,
    extra: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);

describe('parseWorkflow and validateWorkflow never throw', () => {
  it('on arbitrary text, as YAML and as JSON', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.constantFrom('w.yaml', 'w.json', undefined), (text, filename) => {
        expect(wellFormed(parseWorkflow(text, filename === undefined ? {} : { filename }))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('on random YAML documents of definition-like values', () => {
    fc.assert(
      fc.property(definitionLike, (value) => {
        const text = stringify(value);
        const fromText = parseWorkflow(text, { filename: 'w.yaml' });
        expect(wellFormed(fromText)).toBe(true);
        // The text and the value it came from get the same verdict and the same issue codes.
        const direct = validateWorkflow(value);
        expect(fromText.ok).toBe(direct.ok);
        if (!fromText.ok && !direct.ok) expect(fromText.issues.map((i) => i.code)).toEqual(direct.issues.map((i) => i.code));
      }),
      { numRuns: 500 },
    );
  });

  it('on arbitrary values', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        expect(wellFormed(validateWorkflow(value))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
