import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { queueMessageLimit, taskMessageBytesBound, worstCaseTaskMessageBytes } from './storage-fit';

describe('the task message size check', () => {
  it('skips encoding only when the cheap bound proves the message fits', () => {
    const text = fc.string({ unit: 'binary', maxLength: 200 });
    const kwargs = fc.dictionary(text, fc.oneof(text, fc.jsonValue({ maxDepth: 3 }), fc.array(text)), { maxKeys: 6 });
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }), kwargs, fc.boolean(), (name, kw, hasParents) => {
        const exact = worstCaseTaskMessageBytes({ name, kwargs: kw, hasParents });
        expect(exact).not.toBeNull();
        expect(exact!).toBeLessThanOrEqual(taskMessageBytesBound(JSON.stringify(kw).length, name.length));
      }),
      { numRuns: 500 },
    );
  });

  it('takes the Service Bus limit for sb:// specs and the Storage Queue limit otherwise', () => {
    expect(queueMessageLimit('sb://ns/q')).toBe(262_144 - 4_096);
    for (const spec of ['default', 'acct1/cpu', 'not a spec']) expect(queueMessageLimit(spec)).toBe(65_536);
  });
});
