import { messageByteLength } from '@jobq/dag-core/wire';

/** The top-level key of a dead-letter copy that says why the message was dead-lettered. */
export const DEAD_LETTER_REASON_KEY = 'dead_letter_reason';

const CUT_MARK = '…';

/** The reason on one line: line breaks and other control characters become spaces. */
function oneLine(reason: string): string {
  // eslint-disable-next-line no-control-regex
  return reason.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

/** True when `body` is the JSON text of an object (not an array, not a scalar). */
function isJsonObjectText(body: string): boolean {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** The copy's text around a reason given as a JSON string literal. */
function copyWith(body: string, objectBody: boolean, reasonLiteral: string): string {
  if (!objectBody) return `{"${DEAD_LETTER_REASON_KEY}":${reasonLiteral},"body":${JSON.stringify(body)}}`;
  // The object's own text, byte for byte, with one more key before its closing brace.
  const open = body.trimEnd().slice(0, -1);
  const empty = /^\s*\{\s*$/.test(open);
  return `${open}${empty ? '' : ','}"${DEAD_LETTER_REASON_KEY}":${reasonLiteral}}`;
}

/** The longest start of `text` (whole code points) whose JSON escape takes at most `budget` bytes, as a JSON string literal. */
function literalWithin(text: string, budget: number): string {
  const full = JSON.stringify(text);
  if (messageByteLength(full) - 2 <= budget) return full;
  const room = budget - messageByteLength(CUT_MARK);
  if (room < 0) return '""';
  let used = 0;
  let kept = '';
  for (const ch of text) {
    const piece = JSON.stringify(ch).slice(1, -1);
    const cost = messageByteLength(piece);
    if (used + cost > room) break;
    used += cost;
    kept += ch;
  }
  return JSON.stringify(`${kept.trimEnd()}${CUT_MARK}`);
}

/**
 * The body of the dead-letter copy of a message. A body that is a JSON object stays that object,
 * its text unchanged, with one more top-level key `"dead_letter_reason"` (readers of the envelope
 * ignore keys they do not know; a key of that name already there is overridden, as the last one
 * wins); any other body becomes `{"dead_letter_reason": …, "body": "<the original text>"}`. The
 * reason is put on one line and cut (ending in `…`) so that the copy fits `maxMessageBytes`,
 * counted as the queue counts (`messageByteLength`). When not even an empty reason fits, the
 * original body is returned unchanged: the message is kept, the reason is not.
 */
export function deadLetterBody(body: string, reason: string, maxMessageBytes: number): string {
  const objectBody = isJsonObjectText(body);
  const base = messageByteLength(copyWith(body, objectBody, '""'));
  if (base > maxMessageBytes) return body;
  return copyWith(body, objectBody, literalWithin(oneLine(reason), maxMessageBytes - base));
}
