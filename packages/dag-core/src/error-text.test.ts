import { errorMessage } from './error-text';

describe('errorMessage', () => {
  it("is an error's message, or its name when the message is empty", () => {
    expect(errorMessage(new SyntaxError('Unexpected token } in JSON'))).toBe('Unexpected token } in JSON');
    expect(errorMessage(new RangeError(''))).toBe('RangeError');
  });

  it('reads errors of another realm by their message, strings as they are, anything else as JSON', () => {
    expect(errorMessage({ name: 'TypeError', message: 'x is not a function' })).toBe('x is not a function');
    expect(errorMessage({ name: 'TypeError', message: '' })).toBe('TypeError');
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage({ code: 7 })).toBe('{"code":7}');
    expect(errorMessage(undefined)).toBe('undefined');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(errorMessage(cyclic)).toBe('[object Object]');
  });
});
