/** A location inside the parsed input: object keys and array indexes. */
export type PathSegment = string | number;

/** Formats a path the way users write it: `tasks[3].depends_on[1]`. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** Longest name or path quoted in a message: the path holds the whole of it. */
const MAX_QUOTED = 60;

/** A string as a JSON literal for a message, cut to {@link MAX_QUOTED} characters. */
export function quoteForMessage(text: string): string {
  return JSON.stringify(text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text);
}

/** {@link formatPath} for a message, cut to {@link MAX_QUOTED} characters. */
export function formatPathForMessage(path: readonly PathSegment[]): string {
  const text = formatPath(path);
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
}
