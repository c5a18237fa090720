/** A virtualized list: which rows of a long list to render for a scroll position. Pure. */

export const ROW_HEIGHT = 28;
export const VIEW_ROWS = 16;

/** The rows to render for a scroll position: the visible ones and a few either side. */
export function windowRows(
  scrollTop: number,
  total: number,
  rowHeight = ROW_HEIGHT,
  viewRows = VIEW_ROWS,
  overscan = 5,
): { first: number; last: number } {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(total, Math.ceil(scrollTop / rowHeight) + viewRows + overscan);
  return { first, last };
}
