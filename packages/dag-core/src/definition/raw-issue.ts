import type { PathSegment } from './path';

/**
 * An issue before it is given its printable path and source position. `target: 'key'` points the
 * position at the key of the last path segment rather than at its value (for unknown fields).
 */
export interface RawIssue {
  code: string;
  path: PathSegment[];
  message: string;
  target?: 'key' | 'value';
  /** Extra column offset inside the value (condition errors). */
  innerColumn?: number;
  /** What probably fixes it (`did you mean "depends_on"?`). */
  hint?: string;
}
