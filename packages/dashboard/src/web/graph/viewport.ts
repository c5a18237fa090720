/**
 * Pan and zoom of the graph: `x`, `y` is the layout point at the view's top-left corner and `k`
 * the scale (screen pixels per layout unit). Pure arithmetic, shared by the SVG and canvas views.
 */
export interface Viewport {
  x: number;
  y: number;
  k: number;
}

export const MIN_SCALE = 0.01;
export const MAX_SCALE = 4;

function clampScale(k: number): number {
  return Math.min(MAX_SCALE, Math.max(MIN_SCALE, k));
}

/**
 * The view that shows the whole layout in a `width`×`height` screen box (with `pad` pixels on
 * each side), never zoomed in past 1 nor out past `minScale`; along an axis where the layout then
 * does not fit, it is shown from its start (left, top), else centred.
 */
export function fitView(
  layoutWidth: number,
  layoutHeight: number,
  width: number,
  height: number,
  pad = 24,
  minScale = MIN_SCALE,
): Viewport {
  const k = clampScale(
    Math.max(minScale, Math.min(1, (width - 2 * pad) / Math.max(1, layoutWidth), (height - 2 * pad) / Math.max(1, layoutHeight))),
  );
  const place = (layout: number, screen: number): number => (layout * k <= screen - 2 * pad ? -(screen / k - layout) / 2 : -pad / k);
  return { x: place(layoutWidth, width), y: place(layoutHeight, height), k };
}

/** Zooms by `factor` keeping the layout point under the screen point (`sx`, `sy`) in place. */
export function zoomAt(view: Viewport, sx: number, sy: number, factor: number): Viewport {
  const k = clampScale(view.k * factor);
  const px = view.x + sx / view.k;
  const py = view.y + sy / view.k;
  return { x: px - sx / k, y: py - sy / k, k };
}

/** Moves the view by a drag of (`dx`, `dy`) screen pixels. */
export function panBy(view: Viewport, dx: number, dy: number): Viewport {
  return { x: view.x - dx / view.k, y: view.y - dy / view.k, k: view.k };
}

/** The layout point under a screen point. */
export function toLayout(view: Viewport, sx: number, sy: number): { x: number; y: number } {
  return { x: view.x + sx / view.k, y: view.y + sy / view.k };
}

/** The view moved so that the box (layout units) is centred, scale unchanged. */
export function centreOn(view: Viewport, box: { x: number; y: number; w: number; h: number }, width: number, height: number): Viewport {
  return { k: view.k, x: box.x + box.w / 2 - width / 2 / view.k, y: box.y + box.h / 2 - height / 2 / view.k };
}
