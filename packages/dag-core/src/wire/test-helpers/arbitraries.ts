// Shared fast-check arbitraries for the wire tests (excluded from the build).
import fc from 'fast-check';

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Standard base64 (with padding) of bytes, written by hand to stay free of Buffer. */
export function base64(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i] ?? 0;
    const b = bytes[i + 1];
    const c = bytes[i + 2];
    const n = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += B64[(n >> 18) & 63];
    out += B64[(n >> 12) & 63];
    out += b === undefined ? '=' : B64[(n >> 6) & 63];
    out += c === undefined ? '=' : B64[n & 63];
  }
  return out;
}

/** A base64 Content-MD5 (16 random bytes). */
export const md5Arb = fc.uint8Array({ minLength: 16, maxLength: 16 }).map(base64);

export const workflowIdArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,23}$/);

const tricky = ['a', 'b', 'Z', '/', '%', '%2F', '1', '0', '9', 'r', 'r1', '-', '_', '.', ':', ' ', 'é', '😀', '"', '\\'];

/** Task names, often with `/`, `%`, digits and `r{n}`-looking segments. */
export const taskNameArb = fc.oneof(
  fc.string({ unit: fc.constantFrom(...tricky), minLength: 1, maxLength: 12 }),
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
);

export const containerArb = fc.stringMatching(/^[a-z0-9-]{3,20}$/);

/** JSON-compatible kwargs. */
export const kwargsArb = fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });

/** What a value looks like after a JSON round trip (e.g. -0 becomes 0). */
export function jsonNormalize<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
