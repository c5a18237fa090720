import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node as YamlNode } from 'yaml';
import type { RawIssue } from './raw-issue';

/**
 * Finds where an issue's path points in a YAML document: the node itself, the key of the last
 * segment for `target: 'key'`, or the deepest existing ancestor when the path ends in a field
 * that is missing. Positions are 1-based.
 */
export function yamlLocator(doc: Document, source: string, lineCounter: LineCounter) {
  return (issue: RawIssue): { line: number; column: number } | undefined => {
    let node: unknown = doc.contents;
    let keyNode: unknown;
    for (const segment of issue.path) {
      keyNode = undefined;
      let next: unknown;
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === segment);
        keyNode = pair?.key;
        next = pair?.value;
        if (pair && next == null) next = pair.key;
      } else if (isSeq(node) && typeof segment === 'number') {
        next = node.items[segment];
      }
      if (next === undefined || next === null) break;
      node = next;
    }
    const target = issue.target === 'key' && keyNode !== undefined ? keyNode : node;
    const range = (target as YamlNode | undefined)?.range;
    if (!range) return undefined;
    let offset = range[0];
    if (issue.innerColumn !== undefined && isScalar(target) && typeof target.value === 'string') {
      offset += innerOffset(source.slice(range[0], range[1]), target.value, issue.innerColumn);
    }
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  };
}

/**
 * Offset of a position inside a scalar's value, when the scalar is written on one line exactly as
 * its value (plain or simply quoted); otherwise the scalar's start.
 */
function innerOffset(written: string, value: string, column: number): number {
  if (written === value) return column - 1;
  if (written === `"${value}"` || written === `'${value}'`) return column;
  return 0;
}
