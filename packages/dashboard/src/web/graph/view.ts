/**
 * The graph of a workflow page: SVG up to {@link SVG_NODE_LIMIT} visible nodes, a canvas above
 * (with a grid hit-test), both panned by dragging and zoomed with the wheel or the buttons. Every
 * visible node's name is also in the DOM as text (the canvas keeps a list of buttons beside it),
 * so screen readers and a DOM dump see them.
 */
import { Component } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ApiGraphNode } from '../../api-types';
import { html } from '../html';
import { DEFAULT_LAYOUT, HitGrid } from '../layout';
import { STATE_STYLES, styleOf } from '../palette';
import { barSegments, groupSegments, nodeDisplayState, SVG_NODE_LIMIT, type GraphModel } from './model';
import { BAR_HEIGHT, edgePath, nodeText, paintCanvas } from './paint';
import { centreOn, fitView, panBy, toLayout, zoomAt, type Viewport } from './viewport';

const W = DEFAULT_LAYOUT.nodeWidth;
const H = DEFAULT_LAYOUT.nodeHeight;
/** The scale a page opened on a task shows it at, at least. */
const FOCUS_SCALE = 0.6;

export interface GraphViewProps {
  model: GraphModel;
  visible: Uint8Array;
  visibleCount: number;
  /** Bumped on every live patch (the model is patched in place). */
  version: number;
  selected: number;
  /** The view from the address; null fits the graph. */
  initialView: Viewport | null;
  onSelect: (node: number) => void;
  /** Called when panning or zooming settles. */
  onViewChange: (view: Viewport) => void;
}

function describe(node: ApiGraphNode, hasWorkers: boolean): string {
  if (node.kind === 'task') return `${node.label}: ${styleOf(nodeDisplayState(node, hasWorkers)).label}`;
  const parts = groupSegments(node.counts, node.on_worker, hasWorkers).map((s) => `${s.count} ${STATE_STYLES[s.state].label}`);
  return `${node.label}: ${node.size} tasks, ${parts.join(', ')}`;
}

interface SvgNodeProps {
  node: ApiGraphNode;
  index: number;
  x: number;
  y: number;
  hasWorkers: boolean;
  selected: boolean;
}

/** One node; redrawn only when its data (patched by live updates), place or selection changes. */
class SvgNode extends Component<SvgNodeProps> {
  override shouldComponentUpdate(next: SvgNodeProps): boolean {
    const p = this.props;
    return (
      p.node !== next.node ||
      p.x !== next.x ||
      p.y !== next.y ||
      p.selected !== next.selected ||
      p.hasWorkers !== next.hasWorkers ||
      p.index !== next.index
    );
  }

  override render() {
    return svgNode(this.props);
  }
}

function svgNode(props: SvgNodeProps) {
  const { node, x, y, hasWorkers } = props;
  const style = styleOf(nodeDisplayState(node, hasWorkers));
  const text = nodeText(node, hasWorkers);
  const segments = node.kind === 'group' ? barSegments(node.counts, node.on_worker, hasWorkers) : [];
  let offset = 0;
  return html`<g class=${`node node-${node.kind}${props.selected ? ' selected' : ''}`} data-node=${props.index} transform=${`translate(${x},${y})`} tabindex="0" role="button" aria-label=${describe(node, hasWorkers)}>
    <title>${node.label}</title>
    ${props.selected ? html`<rect class="ring" x="-3" y="-3" width=${W + 6} height=${H + 6} fill="none" stroke="#000" stroke-width="3" />` : null}
    <rect width=${W} height=${H} rx="4" fill=${node.kind === 'task' ? style.fill : '#ffffff'} stroke=${node.kind === 'task' ? 'none' : style.fill} stroke-width="2" />
    ${segments.map((s) => {
      const w = (s.count / Math.max(1, node.size)) * W;
      const bar = html`<rect x=${offset} y=${H - BAR_HEIGHT} width=${w} height=${BAR_HEIGHT} fill=${STATE_STYLES[s.state].fill} />`;
      offset += w;
      return bar;
    })}
    <text x="8" y=${node.kind === 'task' ? H / 2 : (H - BAR_HEIGHT) / 2 + 1} dominant-baseline="central" fill=${node.kind === 'task' ? style.ink : '#1a1a1a'}>${text.icon} ${text.label}</text>
  </g>`;
}

function SvgGraph(props: GraphViewProps & { view: Viewport; gRef: { current: SVGGElement | null } }) {
  const { model, visible, selected } = props;
  const { x, y } = model.layout;
  const edges = useMemo(() => {
    let d = '';
    for (const [a, b] of model.edges) if (visible[a] && visible[b]) d += edgePath(x[a]!, y[a]!, x[b]!, y[b]!);
    return d;
  }, [model, visible]);
  const nodes = [];
  for (let i = 0; i < model.graph.nodes.length; i++) {
    if (!visible[i]) continue;
    nodes.push(
      html`<${SvgNode} key=${model.graph.nodes[i]!.id} node=${model.graph.nodes[i]} index=${i} x=${x[i]} y=${y[i]} hasWorkers=${model.hasWorkers} selected=${i === selected} />`,
    );
  }
  const v = props.view;
  return html`<svg class="graph-svg" xmlns="http://www.w3.org/2000/svg" role="group" aria-label="workflow graph">
    <g ref=${props.gRef} transform=${`matrix(${v.k},0,0,${v.k},${-v.x * v.k},${-v.y * v.k})`}>
      <path class="edges" d=${edges} fill="none" stroke="#9a9a9a" vector-effect="non-scaling-stroke" />
      ${nodes}
    </g>
  </svg>`;
}

/** Nodes per chunk of the canvas's node list. */
const LIST_CHUNK = 250;

interface ListChunkProps {
  model: GraphModel;
  visible: Uint8Array;
  start: number;
  end: number;
  onSelect: (node: number) => void;
}

/** A slice of the node list, redrawn only when one of its nodes changed (live updates replace node objects). */
class ListChunk extends Component<ListChunkProps> {
  override shouldComponentUpdate(next: ListChunkProps): boolean {
    const p = this.props;
    if (p.model !== next.model || p.start !== next.start || p.end !== next.end) return true;
    for (let i = next.start; i < next.end; i++) {
      if (p.visible[i] !== next.visible[i] || p.model.graph.nodes[i] !== this.seen[i - next.start]) return true;
    }
    return false;
  }

  private seen: unknown[] = [];

  override render() {
    const { model, visible, start, end, onSelect } = this.props;
    const nodes = model.graph.nodes;
    this.seen = nodes.slice(start, end);
    const items = [];
    for (let i = start; i < end; i++) {
      if (!visible[i]) continue;
      const node = nodes[i]!;
      items.push(
        html`<li key=${node.id}><button type="button" data-node=${i} onClick=${() => onSelect(i)}>${describe(node, model.hasWorkers)}</button></li>`,
      );
    }
    return html`<li class="chunk"><ul>${items}</ul></li>`;
  }
}

/**
 * The names of the nodes the canvas draws, as buttons: built a few chunks per task after the first
 * paint (10 000 buttons at once would hold the page for a second), and laid out lazily.
 */
function NodeList(props: { model: GraphModel; visible: Uint8Array; onSelect: (node: number) => void }) {
  const total = Math.ceil(props.model.graph.nodes.length / LIST_CHUNK);
  const [shown, setShown] = useState(0);
  useEffect(() => {
    if (shown >= total) return;
    const t = setTimeout(() => setShown((n) => Math.min(total, n + 4)), shown === 0 ? 50 : 0);
    return () => clearTimeout(t);
  }, [shown, total]);
  const chunks = [];
  for (let c = 0; c < shown; c++) {
    const start = c * LIST_CHUNK;
    chunks.push(
      html`<${ListChunk} key=${c} model=${props.model} visible=${props.visible} start=${start} end=${Math.min(props.model.graph.nodes.length, start + LIST_CHUNK)} onSelect=${props.onSelect} />`,
    );
  }
  return html`<ul class="sr-only node-list" aria-label="nodes of the graph" aria-busy=${shown < total}>${chunks}</ul>`;
}

export function GraphView(props: GraphViewProps) {
  const { model, visible, visibleCount, version, selected } = props;
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const gRef = useRef<SVGGElement | null>(null);
  const [size, setSize] = useState({ width: 0, height: 0 });
  const useCanvas = visibleCount > SVG_NODE_LIMIT;
  const view = useRef<Viewport | null>(props.initialView);
  const [, rerender] = useState(0);
  const frame = useRef(0);
  const note = useRef<HTMLSpanElement>(null);
  const settle = useRef<ReturnType<typeof setTimeout> | null>(null);
  const grid = useMemo(() => (useCanvas ? new HitGrid(model.layout, DEFAULT_LAYOUT) : null), [model, useCanvas]);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = (): void => setSize({ width: el.clientWidth, height: el.clientHeight });
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // A new graph (level change) fits again unless the address gave a view.
  const fittedFor = useRef<GraphModel | null>(null);
  if (size.width > 0 && fittedFor.current !== model) {
    // SVG starts readable (labels at half size or more); the canvas shows as much as it can.
    if (fittedFor.current !== null || view.current === null) {
      let v = fitView(model.layout.width, model.layout.height, size.width, size.height, 24, useCanvas ? 0.02 : 0.5);
      // A page opened on a task (`?task=`) shows that task readable, centred if it is out of view.
      if (fittedFor.current === null && selected >= 0) {
        const box = { x: model.layout.x[selected]!, y: model.layout.y[selected]!, w: W, h: H };
        const shown = toLayout(v, 0, 0);
        const end = toLayout(v, size.width, size.height);
        const inView = box.x >= shown.x && box.y >= shown.y && box.x + box.w <= end.x && box.y + box.h <= end.y;
        if (v.k < FOCUS_SCALE || !inView) v = centreOn({ ...v, k: Math.max(v.k, FOCUS_SCALE) }, box, size.width, size.height);
      }
      view.current = v;
    }
    fittedFor.current = model;
  }

  const paint = (): void => {
    frame.current = 0;
    const v = view.current;
    if (!v) return;
    if (useCanvas) {
      const c = canvas.current;
      const ctx = c?.getContext('2d');
      if (!c || !ctx) return;
      const dpr = window.devicePixelRatio || 1;
      if (c.width !== Math.round(size.width * dpr) || c.height !== Math.round(size.height * dpr)) {
        c.width = Math.round(size.width * dpr);
        c.height = Math.round(size.height * dpr);
      }
      const result = paintCanvas(ctx, { model, visible, view: v, width: size.width, height: size.height, dpr, selected });
      if (note.current) note.current.textContent = result.edgesHidden ? 'edges hidden at this zoom: zoom in to see them' : '';
    } else {
      gRef.current?.setAttribute('transform', `matrix(${v.k},0,0,${v.k},${-v.x * v.k},${-v.y * v.k})`);
    }
  };
  const schedule = (): void => {
    if (!frame.current) frame.current = requestAnimationFrame(paint);
    if (settle.current) clearTimeout(settle.current);
    settle.current = setTimeout(() => {
      if (view.current) props.onViewChange(view.current);
    }, 400);
  };
  useEffect(() => {
    if (useCanvas) paint();
  });
  // A performance mark once the graph of a model first shows (read by the browser tests and the bench).
  const marked = useRef<GraphModel | null>(null);
  useEffect(() => {
    if (marked.current === model || !view.current || size.width === 0) return;
    marked.current = model;
    const name = `jobq:painted:${useCanvas ? 'canvas' : 'svg'}`;
    requestAnimationFrame(() => setTimeout(() => performance.mark(name), 0));
  });
  useEffect(
    () => () => {
      if (frame.current) cancelAnimationFrame(frame.current);
      if (settle.current) clearTimeout(settle.current);
    },
    [],
  );

  // Dragging pans; a press without movement is a click on the node under it.
  const drag = useRef<{ x: number; y: number; moved: boolean; id: number } | null>(null);
  const onPointerDown = (e: PointerEvent): void => {
    if (e.button !== 0) return;
    drag.current = { x: e.clientX, y: e.clientY, moved: false, id: e.pointerId };
  };
  const onPointerMove = (e: PointerEvent): void => {
    const d = drag.current;
    if (!d && useCanvas && view.current) {
      // The canvas has no elements to hover: the node under the pointer names itself in the tooltip.
      const rect = (e.currentTarget as HTMLElement).getBoundingClientRect();
      const p = toLayout(view.current, e.clientX - rect.left, e.clientY - rect.top);
      const hit = grid?.at(p.x, p.y, (i) => !visible[i]) ?? -1;
      (e.currentTarget as HTMLElement).title = hit >= 0 ? describe(model.graph.nodes[hit]!, model.hasWorkers) : '';
      return;
    }
    if (!d || !view.current) return;
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!d.moved) {
      try {
        (e.currentTarget as HTMLElement).setPointerCapture(d.id);
      } catch {
        // a pointer the browser does not track (synthetic events): pan without capture
      }
    }
    d.moved = true;
    d.x = e.clientX;
    d.y = e.clientY;
    view.current = panBy(view.current, dx, dy);
    schedule();
  };
  const onPointerUp = (e: PointerEvent): void => {
    const d = drag.current;
    drag.current = null;
    if (!d || d.moved || !view.current) return;
    if (useCanvas) {
      const rect = (e.currentTarget as HTMLElement).getBoundingClientRect();
      const p = toLayout(view.current, e.clientX - rect.left, e.clientY - rect.top);
      const hit = grid?.at(p.x, p.y, (i) => !visible[i]) ?? -1;
      if (hit >= 0) props.onSelect(hit);
    } else {
      const target = (e.target as Element).closest('[data-node]');
      if (target) props.onSelect(Number(target.getAttribute('data-node')));
    }
  };
  const onWheel = (e: WheelEvent): void => {
    if (!view.current) return;
    e.preventDefault();
    const rect = (e.currentTarget as HTMLElement).getBoundingClientRect();
    view.current = zoomAt(view.current, e.clientX - rect.left, e.clientY - rect.top, Math.exp(-e.deltaY * 0.0015));
    schedule();
  };
  const zoomButton = (factor: number) => (): void => {
    if (!view.current) return;
    view.current = zoomAt(view.current, size.width / 2, size.height / 2, factor);
    schedule();
  };
  const fit = (): void => {
    view.current = fitView(model.layout.width, model.layout.height, size.width, size.height);
    schedule();
    rerender((n) => n + 1);
  };
  const onKeyDown = (e: KeyboardEvent): void => {
    const target = (e.target as Element).closest?.('[data-node]');
    if (target && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      props.onSelect(Number(target.getAttribute('data-node')));
    }
  };

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // Passive: false, so the wheel zooms the graph instead of scrolling the page.
    el.addEventListener('wheel', onWheel, { passive: false });
    return () => el.removeEventListener('wheel', onWheel);
  });

  const v = view.current;
  return html`<div class="graph-wrap">
    <div class="graph-tools" role="toolbar" aria-label="zoom">
      <button type="button" onClick=${zoomButton(1.25)} aria-label="zoom in">+</button>
      <button type="button" onClick=${zoomButton(0.8)} aria-label="zoom out">−</button>
      <button type="button" onClick=${fit}>fit</button>
      <span class="graph-mode">${useCanvas ? `canvas, ${visibleCount} nodes` : `${visibleCount} nodes`}</span>
      <span class="graph-mode" ref=${note} aria-live="polite"></span>
    </div>
    <div class=${`graph ${useCanvas ? 'graph-canvas' : ''}`} ref=${box} data-version=${version} data-mode=${useCanvas ? 'canvas' : 'svg'}
      onPointerDown=${onPointerDown} onPointerMove=${onPointerMove} onPointerUp=${onPointerUp} onKeyDown=${onKeyDown}>
      ${v && size.width > 0 ? (useCanvas ? html`<canvas ref=${canvas} style=${`width:${size.width}px;height:${size.height}px`} aria-hidden="true"></canvas>` : html`<${SvgGraph} ...${props} view=${v} gRef=${gRef} />`) : null}
    </div>
    ${useCanvas ? html`<${NodeList} key=${model.graph.level} model=${model} visible=${visible} onSelect=${props.onSelect} />` : null}
  </div>`;
}
