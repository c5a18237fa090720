/**
 * Characters XML 1.0 does not allow in a document: C0 controls other than tab, line feed and
 * carriage return; U+FFFE and U+FFFF; and UTF-16 surrogates that are not half of a pair. Storage
 * Queue bodies travel as XML text, and one such character in a message makes every receive and
 * peek of the queue fail (Azurite) or the send be refused.
 */
/* eslint-disable no-control-regex -- the point of this pattern is control characters */
const XML_FORBIDDEN =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/* eslint-enable no-control-regex */
const XML_FORBIDDEN_ALL = new RegExp(XML_FORBIDDEN.source, 'g');

/** Bytes of one `\uXXXX` escape. */
const ESCAPE_BYTES = 6;

function escapeUnit(unit: string): string {
  return `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every character XML 1.0 forbids (U+0000–U+0008, U+000B, U+000C, U+000E–U+001F,
 * U+FFFE, U+FFFF and unpaired surrogates) written as a `\uXXXX` escape (lowercase hex), so that it
 * can travel in a Storage Queue message. In valid JSON text those characters can only stand inside
 * strings, where the escape means the same character: `JSON.parse(queueSafeText(t))` equals
 * `JSON.parse(t)` for every JSON text `t`. Other text gets the six characters of the escape in
 * place of the character. Returns `text` itself when nothing needs escaping.
 */
export function queueSafeText(text: string): string {
  if (!XML_FORBIDDEN.test(text)) return text;
  return text.replace(XML_FORBIDDEN_ALL, escapeUnit);
}

/**
 * The number of UTF-8 bytes of {@link queueSafeText}`(text)`, computed without building it: what
 * a Storage Queue adapter really sends for `text`.
 */
export function queueSafeByteLength(text: string): number {
  let bytes = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20) {
      bytes += c === 0x09 || c === 0x0a || c === 0x0d ? 1 : ESCAPE_BYTES;
    } else if (c < 0x80) {
      bytes += 1;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else {
        bytes += ESCAPE_BYTES;
      }
    } else if ((c >= 0xdc00 && c <= 0xdfff) || c === 0xfffe || c === 0xffff) {
      bytes += ESCAPE_BYTES;
    } else {
      bytes += 3;
    }
  }
  return bytes;
}
