/**
 * The number of bytes `text` takes when encoded as UTF-8, computed without `TextEncoder` or
 * `Buffer`. A lone (unpaired) surrogate counts as 3 bytes, the size of the U+FFFD replacement
 * character that `TextEncoder` and `Buffer.from(text, 'utf8')` write in its place.
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      bytes += 1;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else {
        bytes += 3;
      }
    } else {
      bytes += 3;
    }
  }
  return bytes;
}
