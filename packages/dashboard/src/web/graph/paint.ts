/**
 * Drawing the graph on a canvas (above {@link SVG_NODE_LIMIT} visible nodes): only what is in
 * view, labels only when zoomed in enough to read them. The SVG view draws the same shapes.
 */
import type { ApiGraphNode } from '../../api-types';
import { DEFAULT_LAYOUT } from '../layout';
import { STATE_STYLES, styleOf } from '../palette';
import { barSegments, nodeDisplayState, type GraphModel } from './model';
import type { Viewport } from './viewport';

const W = DEFAULT_LAYOUT.nodeWidth;
const H = DEFAULT_LAYOUT.nodeHeight;
/** Below this scale labels are not drawn (they would be under 5 px). */
export const LABEL_MIN_SCALE = 0.4;
/** Height of a group's status bar. */
export const BAR_HEIGHT = 8;
export const FONT = '13px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** The label cut to fit a node (about 7 px a character at 13 px). */
export function fitLabel(text: string, max = 25): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The text of a node: icon, name, and for a group its size. */
export function nodeText(node: ApiGraphNode, hasWorkers: boolean): { icon: string; label: string } {
  return { icon: styleOf(nodeDisplayState(node, hasWorkers)).icon, label: fitLabel(node.label) };
}

/** Bezier from the right edge of one node to the left edge of the next. */
export function edgePath(x1: number, y1: number, x2: number, y2: number): string {
  const sx = x1 + W;
  const sy = y1 + H / 2;
  const ty = y2 + H / 2;
  const dx = Math.max(20, (x2 - sx) / 2);
  return `M${sx} ${sy}C${sx + dx} ${sy} ${x2 - dx} ${ty} ${x2} ${ty}`;
}

export interface PaintInput {
  model: GraphModel;
  visible: Uint8Array;
  view: Viewport;
  /** CSS pixels of the canvas. */
  width: number;
  height: number;
  dpr: number;
  selected: number;
}

/** Zoomed out (no labels), more edges than this in view are not drawn: they would only hide the nodes. */
export const EDGE_LIMIT_ZOOMED_OUT = 2_000;

/** What a paint left out, for the page to say. */
export interface PaintResult {
  edgesHidden: boolean;
}

export function paintCanvas(ctx: CanvasRenderingContext2D, input: PaintInput): PaintResult {
  const { model, visible, view, width, height, dpr, selected } = input;
  const { x, y } = model.layout;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, width * dpr, height * dpr);
  const k = view.k * dpr;
  ctx.setTransform(k, 0, 0, k, -view.x * k, -view.y * k);
  const left = view.x;
  const top = view.y;
  const right = view.x + width / view.k;
  const bottom = view.y + height / view.k;
  const labels = view.k >= LABEL_MIN_SCALE;

  // Edges in view: one path, curves when zoomed in, straight (and only a few) when zoomed out.
  const inView: number[] = [];
  for (let e = 0; e < model.edges.length; e++) {
    const [a, b] = model.edges[e]!;
    if (!visible[a] || !visible[b]) continue;
    const x1 = x[a]! + W;
    const x2 = x[b]!;
    const y1 = y[a]! + H / 2;
    const y2 = y[b]! + H / 2;
    if (Math.max(x1, x2) < left || Math.min(x1, x2) > right || Math.max(y1, y2) < top || Math.min(y1, y2) > bottom) continue;
    inView.push(e);
  }
  const edgesHidden = !labels && inView.length > EDGE_LIMIT_ZOOMED_OUT;
  if (!edgesHidden) {
    ctx.beginPath();
    for (const e of inView) {
      const [a, b] = model.edges[e]!;
      const x1 = x[a]! + W;
      const y1 = y[a]! + H / 2;
      const x2 = x[b]!;
      const y2 = y[b]! + H / 2;
      ctx.moveTo(x1, y1);
      if (labels) {
        const dx = Math.max(20, (x2 - x1) / 2);
        ctx.bezierCurveTo(x1 + dx, y1, x2 - dx, y2, x2, y2);
      } else {
        ctx.lineTo(x2, y2);
      }
    }
    // Many edges fade so the nodes stay readable.
    ctx.strokeStyle = labels && inView.length <= EDGE_LIMIT_ZOOMED_OUT ? '#9a9a9a' : 'rgba(110, 110, 110, 0.3)';
    ctx.lineWidth = 1 / view.k;
    ctx.stroke();
  }

  // Nodes: one path per fill colour (a few fills for 10 000 rectangles), then outlines and labels.
  const nodes = model.graph.nodes;
  const shown: number[] = [];
  const byFill = new Map<string, number[]>();
  const bars: Array<{ i: number; fill: string; x: number; w: number }> = [];
  for (let i = 0; i < nodes.length; i++) {
    if (!visible[i]) continue;
    const nx = x[i]!;
    const ny = y[i]!;
    if (nx > right || nx + W < left || ny > bottom || ny + H < top) continue;
    shown.push(i);
    const node = nodes[i]!;
    const fill = node.kind === 'task' ? styleOf(nodeDisplayState(node, model.hasWorkers)).fill : '#ffffff';
    const list = byFill.get(fill);
    if (list) list.push(i);
    else byFill.set(fill, [i]);
    if (node.kind === 'group') {
      let sx = nx;
      const total = Math.max(1, node.size);
      for (const seg of barSegments(node.counts, node.on_worker, model.hasWorkers)) {
        const w = (seg.count / total) * W;
        bars.push({ i, fill: STATE_STYLES[seg.state].fill, x: sx, w });
        sx += w;
      }
    }
  }
  for (const [fill, list] of byFill) {
    ctx.beginPath();
    for (const i of list) ctx.rect(x[i]!, y[i]!, W, H);
    ctx.fillStyle = fill;
    ctx.fill();
  }
  for (const bar of bars) {
    ctx.fillStyle = bar.fill;
    ctx.fillRect(bar.x, y[bar.i]! + H - BAR_HEIGHT, bar.w, BAR_HEIGHT);
  }
  if (labels) {
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
  }
  for (const i of shown) {
    const node = nodes[i]!;
    const nx = x[i]!;
    const ny = y[i]!;
    if (node.kind === 'group') {
      ctx.strokeStyle = styleOf(nodeDisplayState(node, model.hasWorkers)).fill;
      ctx.lineWidth = 2;
      ctx.strokeRect(nx + 1, ny + 1, W - 2, H - 2);
    }
    if (i === selected) {
      ctx.strokeStyle = '#000000';
      ctx.lineWidth = Math.max(3, 2 / view.k);
      ctx.strokeRect(nx - 3, ny - 3, W + 6, H + 6);
    }
    if (labels) {
      const style = styleOf(nodeDisplayState(node, model.hasWorkers));
      const text = nodeText(node, model.hasWorkers);
      ctx.fillStyle = node.kind === 'task' ? style.ink : '#1a1a1a';
      ctx.fillText(`${text.icon} ${text.label}`, nx + 8, node.kind === 'task' ? ny + H / 2 : ny + (H - BAR_HEIGHT) / 2 + 1, W - 14);
    }
  }
  return { edgesHidden };
}
