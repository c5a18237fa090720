import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DEFAULT_LAYOUT, HitGrid, layerRows, layoutGraph } from './layout';

/** Edge crossings between adjacent layers (edges that span layers are left out). */
function crossings(edges: Array<[number, number]>, layer: Int32Array, order: Int32Array): number {
  const adjacent = edges.filter(([a, b]) => layer[b]! - layer[a]! === 1);
  let n = 0;
  for (let i = 0; i < adjacent.length; i++) {
    for (let j = i + 1; j < adjacent.length; j++) {
      const [a1, b1] = adjacent[i]!;
      const [a2, b2] = adjacent[j]!;
      if (layer[a1] !== layer[a2]) continue;
      if ((order[a1]! - order[a2]!) * (order[b1]! - order[b2]!) < 0) n++;
    }
  }
  return n;
}

describe('layoutGraph', () => {
  it('puts each node one layer after its deepest parent, left to right', () => {
    // a → b → d, a → d, c alone: d sits after b, not next to a.
    const l = layoutGraph(4, [
      [0, 1],
      [1, 3],
      [0, 3],
    ]);
    expect(Array.from(l.layer)).toEqual([0, 1, 0, 2]);
    expect(l.layers).toBe(3);
    expect(l.x[3]).toBe(2 * (DEFAULT_LAYOUT.nodeWidth + DEFAULT_LAYOUT.layerGap));
    expect(l.x[0]).toBe(0);
  });

  it('lays out a diamond symmetrically with the join centred', () => {
    const l = layoutGraph(4, [
      [0, 1],
      [0, 2],
      [1, 3],
      [2, 3],
    ]);
    expect(Array.from(l.layer)).toEqual([0, 1, 1, 2]);
    expect(l.y[0]).toBe(l.y[3]);
    expect(l.y[1]! < l.y[2]!).toBe(true);
    expect((l.y[1]! + l.y[2]!) / 2).toBe(l.y[0]);
    expect(l.height).toBe(2 * DEFAULT_LAYOUT.nodeHeight + DEFAULT_LAYOUT.rowGap);
  });

  it('undoes crossings that the input order makes', () => {
    // Sources a, b; a's child is listed second, b's first: the sweeps swap them.
    const edges: Array<[number, number]> = [
      [0, 3],
      [1, 2],
    ];
    const l = layoutGraph(4, edges);
    expect(crossings(edges, l.layer, l.order)).toBe(0);
    expect(l.order[3]).toBe(0);
  });

  it('reduces crossings of two interleaved chains of 50', () => {
    // Chains of prep→train pairs whose second layer is listed in reverse.
    const n = 50;
    const edges: Array<[number, number]> = [];
    for (let i = 0; i < n; i++) edges.push([i, 2 * n - 1 - i]);
    const l = layoutGraph(2 * n, edges);
    expect(crossings(edges, l.layer, l.order)).toBe(0);
  });

  it('is deterministic and ignores bad edges and self-loops', () => {
    const edges: Array<[number, number]> = [
      [0, 1],
      [1, 1],
      [5, 0],
      [-1, 2],
      [2, 1],
    ];
    const a = layoutGraph(3, edges);
    const b = layoutGraph(3, edges);
    expect(Array.from(a.x)).toEqual(Array.from(b.x));
    expect(Array.from(a.y)).toEqual(Array.from(b.y));
    expect(Array.from(a.layer)).toEqual([0, 1, 0]);
  });

  it('still places every node of a cycle', () => {
    const l = layoutGraph(3, [
      [0, 1],
      [1, 2],
      [2, 1],
    ]);
    expect(Array.from(l.layer).every((v) => v >= 0)).toBe(true);
    expect(l.layer[0]).toBe(0);
  });

  it('lays out the empty graph', () => {
    const l = layoutGraph(0, []);
    expect({ layers: l.layers, width: l.width, height: l.height }).toEqual({ layers: 0, width: 0, height: 0 });
  });

  it('wraps the 10 000 of a fan into a block about as wide as tall, the source and sink mid-height', () => {
    const n = 10_000;
    const edges: Array<[number, number]> = [];
    for (let i = 1; i <= n; i++) edges.push([0, i], [i, n + 1]);
    const l = layoutGraph(n + 2, edges);
    expect(l.layers).toBe(3);
    const rows = layerRows(n, DEFAULT_LAYOUT);
    const rowStep = DEFAULT_LAYOUT.nodeHeight + DEFAULT_LAYOUT.rowGap;
    const columns = Math.ceil(n / rows);
    expect(l.height).toBe(rows * rowStep - DEFAULT_LAYOUT.rowGap);
    const blockWidth = columns * (DEFAULT_LAYOUT.nodeWidth + DEFAULT_LAYOUT.columnGap);
    expect(blockWidth / l.height).toBeGreaterThan(0.7);
    expect(blockWidth / l.height).toBeLessThan(1.4);
    expect(l.y[0]).toBe(((rows - 1) * rowStep) / 2);
    expect(l.y[n + 1]).toBe(l.y[0]);
    // The sink sits right of the whole block.
    expect(l.x[n + 1]).toBe(l.width - DEFAULT_LAYOUT.nodeWidth);
    expect(Math.max(...Array.from(l.x.subarray(1, n + 1)))).toBeLessThan(l.x[n + 1]!);
  });

  it('keeps layers up to the wrap size in one column', () => {
    expect(layerRows(200, DEFAULT_LAYOUT)).toBe(200);
    expect(layerRows(201, DEFAULT_LAYOUT)).toBe(200);
    expect(layerRows(0, DEFAULT_LAYOUT)).toBe(1);
  });

  it('never overlaps two nodes and keeps every edge pointing right (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 40 })
          .chain((n) => fc.tuple(fc.constant(n), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 80 }))),
        ([n, raw]) => {
          // Only forward edges: a DAG.
          const edges = raw.filter(([a, b]) => a < b);
          const l = layoutGraph(n, edges);
          const seen = new Set<string>();
          for (let i = 0; i < n; i++) {
            const key = `${l.x[i]},${l.y[i]}`;
            if (seen.has(key)) return false;
            seen.add(key);
          }
          return edges.every(([a, b]) => l.x[a]! < l.x[b]!) && crossings(edges, l.layer, l.order) >= 0;
        },
      ),
    );
  });
});

describe('HitGrid', () => {
  it('finds the node under a point and nothing between nodes', () => {
    const l = layoutGraph(3, [
      [0, 1],
      [0, 2],
    ]);
    const grid = new HitGrid(l, DEFAULT_LAYOUT, 64);
    expect(grid.at(l.x[2]! + 5, l.y[2]! + 5)).toBe(2);
    expect(grid.at(l.x[1]! + DEFAULT_LAYOUT.nodeWidth, l.y[1]!)).toBe(1);
    expect(grid.at(l.x[0]! + DEFAULT_LAYOUT.nodeWidth + 10, l.y[0]! + 5)).toBe(-1);
    expect(grid.at(-1, 5)).toBe(-1);
    expect(grid.at(l.width + 500, l.y[0]!)).toBe(-1);
    expect(grid.at(l.x[2]! + 5, l.y[2]! + 5, (i) => i === 2)).toBe(-1);
  });
});
