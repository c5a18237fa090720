import { errorText } from './error-text';

describe('errorText', () => {
  it("is an error's message, or its name when the message is empty", () => {
    expect(errorText(new SyntaxError('Unexpected token } in JSON'))).toBe('Unexpected token } in JSON');
    expect(errorText(new RangeError(''))).toBe('RangeError');
  });

  it('reads errors of another realm by their message, strings as they are, anything else as JSON', () => {
    expect(errorText({ name: 'TypeError', message: 'x is not a function' })).toBe('x is not a function');
    expect(errorText({ name: 'TypeError', message: '' })).toBe('TypeError');
    expect(errorText('plain text')).toBe('plain text');
    expect(errorText({ code: 7 })).toBe('{"code":7}');
    expect(errorText(undefined)).toBe('undefined');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(errorText(cyclic)).toBe('[object Object]');
  });
});
