import { describe, expect, it } from '@jest/globals';
import { centreOn, fitView, MAX_SCALE, panBy, toLayout, zoomAt } from './viewport';

describe('viewport', () => {
  it('fits a small layout centred at scale 1 at most', () => {
    const v = fitView(200, 40, 1000, 600);
    expect(v.k).toBe(1);
    expect(toLayout(v, 500, 300)).toEqual({ x: 100, y: 20 });
  });

  it('shrinks a wide layout to the width, and shows one too big at the smallest scale from its start', () => {
    const wide = fitView(10_000, 100, 1000, 600, 0);
    expect(wide.k).toBeCloseTo(0.1);
    const tall = fitView(800, 540_000, 1000, 600, 20, 0.02);
    expect(tall.k).toBe(0.02);
    expect(toLayout(tall, 0, 20).y).toBeCloseTo(0);
    expect(toLayout(tall, 500, 0).x).toBeCloseTo(400);
    const chain = fitView(5_800, 40, 1000, 600, 20, 0.5);
    expect(chain.k).toBe(0.5);
    expect(toLayout(chain, 20, 300)).toEqual({ x: 0, y: 20 });
  });

  it('zooms about the pointer and pans by screen pixels', () => {
    const v = { x: 0, y: 0, k: 1 };
    const z = zoomAt(v, 100, 50, 2);
    expect(z.k).toBe(2);
    expect(toLayout(z, 100, 50)).toEqual(toLayout(v, 100, 50));
    expect(zoomAt(v, 0, 0, 1e9).k).toBe(MAX_SCALE);
    expect(panBy(z, 20, -10)).toEqual({ x: z.x - 10, y: z.y + 5, k: 2 });
  });

  it('centres a node', () => {
    const v = centreOn({ x: 0, y: 0, k: 0.5 }, { x: 1000, y: 500, w: 200, h: 40 }, 800, 400);
    expect(toLayout(v, 400, 200)).toEqual({ x: 1100, y: 520 });
  });
});
