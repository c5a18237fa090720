/**
 * Finds one cycle in a directed graph given as node → predecessors, or null when there is none.
 * The cycle is returned following the edges, first node repeated at the end: `a -> b -> a` means
 * a depends on b and b on a. Iterative, so deep chains of
 * 100 000 tasks do not overflow the stack.
 */
export function findCycle(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] | null {
  const WHITE = 0;
  const GREY = 1;
  const BLACK = 2;
  const colour = new Map<string, number>();
  for (const start of nodes) {
    if ((colour.get(start) ?? WHITE) !== WHITE) continue;
    const stack: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    colour.set(start, GREY);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      const out = edges.get(frame.node) ?? [];
      if (frame.next >= out.length) {
        colour.set(frame.node, BLACK);
        stack.pop();
        continue;
      }
      const target = out[frame.next++]!;
      if (!edges.has(target)) continue;
      const c = colour.get(target) ?? WHITE;
      if (c === GREY) {
        const from = stack.findIndex((f) => f.node === target);
        return [...stack.slice(from).map((f) => f.node), target];
      }
      if (c === WHITE) {
        colour.set(target, GREY);
        stack.push({ node: target, next: 0 });
      }
    }
  }
  return null;
}
