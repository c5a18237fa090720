/**
 * A value written as a literal of the condition language, so that a parameter or matrix value put
 * into a condition is read back as that same value and never as code: a string becomes one quoted
 * string literal whatever it holds (`'0.9 or True'`), a number a number literal, a boolean `True`
 * or `False`, null `None`.
 */
export function conditionLiteral(value: string | number | boolean | null): string {
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('a condition literal needs a finite number');
    // JavaScript's shortest form reads back as the same number (1e+21, 5e-7, -0.5 included).
    return String(value);
  }
  let out = "'";
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    const ch = value.charAt(i);
    if (ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}
