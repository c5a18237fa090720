/**
 * `/workflows/{id}`: the header (as `jobq workflow watch`: counts, rate, ETA), filters, the level
 * switch, the live graph, the group list and the task drawer. The view lives in the address.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ApiCounts, ApiDeltaEvent, ApiGraph, ApiTaskChange, ApiWorkflowDetail } from '../../api-types';
import { FetchError, getJson, workflowApi } from '../api';
import { TaskDrawer } from '../drawer';
import { duration, errorText, rateText } from '../format';
import {
  applyDelta,
  barSegments,
  buildModel,
  groupSegments,
  mergeTaskStates,
  nodeOfTask,
  TASKS_CLICK_THRESHOLD,
  visibleNodes,
  type GraphModel,
} from '../graph/model';
import { GraphView } from '../graph/view';
import type { Viewport } from '../graph/viewport';
import { GroupPanel } from '../group-panel';
import { html } from '../html';
import { browserLiveDeps, LiveFeed, type LiveMode } from '../live';
import { DISPLAY_STATES, STATE_STYLES } from '../palette';
import { LEVELS, routeHref, type WorkflowView } from '../route';
import { NotFound, type Navigate } from './common';

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'corrupt']);

function total(counts: ApiCounts): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
function finished(counts: ApiCounts): number {
  return counts.completed + counts.failed + counts.upstream_failed + counts.skipped + counts.cancelled;
}

/** The bar and counts of the header. */
export function CountsBar(props: { counts: ApiCounts; width?: string }) {
  const all = Math.max(1, total(props.counts));
  const segments = barSegments(props.counts, 0, false);
  return html`<div class="bar" role="img" aria-label=${segments.map((s) => `${s.count} ${STATE_STYLES[s.state].label}`).join(', ') || 'no tasks'}>
    ${segments.map((s) => html`<span style=${`width:${(s.count / all) * 100}%;background:${STATE_STYLES[s.state].fill}`}></span>`)}
  </div>`;
}

export function CountsLine(props: { counts: ApiCounts }) {
  const segments = groupSegments(props.counts, 0, false);
  return html`<span class="counts">${segments.map((s) => html`<span class="count"><span class="icon" aria-hidden="true">${STATE_STYLES[s.state].icon}</span> ${s.count} ${STATE_STYLES[s.state].label}</span>`)}</span>`;
}

/** A graph fetched again (polling), as a delta of its nodes' states. */
function graphAsDelta(graph: ApiGraph): Pick<ApiDeltaEvent, 'tasks' | 'groups'> {
  const tasks: ApiTaskChange[] = [];
  const groups: ApiDeltaEvent['groups'] = [];
  for (const n of graph.nodes) {
    if (n.kind === 'task') tasks.push({ name: n.id, status: n.status, attempt_no: 0, on_worker: n.on_worker, error: null });
    else groups.push({ id: n.id, counts: n.counts, on_worker: n.on_worker });
  }
  return { tasks, groups };
}

const MODE_TEXT: Record<LiveMode, string> = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  polling: 'polling every 5 s',
  closed: 'not live',
};

export function WorkflowPage(props: { id: string; view: WorkflowView; navigate: Navigate }) {
  const { id, view, navigate } = props;
  const [detail, setDetail] = useState<ApiWorkflowDetail | null>(null);
  const [detailError, setDetailError] = useState<FetchError | null>(null);
  const [model, setModel] = useState<GraphModel | null>(null);
  const [graphError, setGraphError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [drawerVersion, setDrawerVersion] = useState(0);
  const [taskStates, setTaskStates] = useState<Map<string, ApiTaskChange>>(new Map());
  const [mode, setMode] = useState<LiveMode>('connecting');
  const [streamError, setStreamError] = useState<string | null>(null);
  const [openGroup, setOpenGroup] = useState<string | null>(null);
  const [nameInput, setNameInput] = useState(view.name);
  const modelRef = useRef<GraphModel | null>(null);
  modelRef.current = model;
  const viewRef = useRef(view);
  viewRef.current = view;

  const setView = useCallback(
    (patch: Partial<WorkflowView>, replace = true) =>
      navigate(routeHref({ page: 'workflow', id, view: { ...viewRef.current, ...patch } }), replace),
    [id, navigate],
  );

  useEffect(() => {
    const abort = new AbortController();
    setDetail(null);
    setDetailError(null);
    getJson<ApiWorkflowDetail>(workflowApi(id), abort.signal).then(setDetail, (err: unknown) => {
      if (!abort.signal.aborted) setDetailError(err instanceof FetchError ? err : new FetchError(0, String(err)));
    });
    return () => abort.abort();
  }, [id]);

  const needsClick = detail !== null && view.level === 'tasks' && detail.total > TASKS_CLICK_THRESHOLD && !view.all;
  const hasWorkers = detail?.has_workers ?? false;
  useEffect(() => {
    if (!detail || needsClick) return;
    const abort = new AbortController();
    setGraphError(null);
    getJson<ApiGraph>(workflowApi(id, 'graph', { level: view.level }), abort.signal).then(
      (graph) => {
        performance.mark('jobq:graph:fetched');
        setModel(buildModel(graph, hasWorkers));
        performance.mark('jobq:graph:laid-out');
        setOpenGroup(null);
      },
      (err: unknown) => {
        if (!abort.signal.aborted) setGraphError(errorText(err));
      },
    );
    return () => abort.abort();
  }, [id, detail !== null, view.level, needsClick, hasWorkers]);

  // Live updates for the level served.
  const servedLevel = model?.graph.level ?? null;
  useEffect(() => {
    if (!servedLevel) return;
    const applyHeader = (e: Pick<ApiDeltaEvent, 'status' | 'counts' | 'rate_per_s' | 'eta_ms'>): void =>
      setDetail((d) =>
        d ? { ...d, status: e.status, counts: e.counts, total: total(e.counts), rate_per_s: e.rate_per_s, eta_ms: e.eta_ms } : d,
      );
    const feed = new LiveFeed(
      `/api/events?workflow=${encodeURIComponent(id)}&level=${servedLevel}`,
      {
        onEvent: (event, snapshot) => {
          setStreamError(null);
          applyHeader(event);
          const m = modelRef.current;
          if (m) applyDelta(m, event);
          setTaskStates((s) => mergeTaskStates(s, event.tasks, snapshot));
          setVersion((v) => v + 1);
          const open = viewRef.current.task;
          if (open !== null && event.tasks.some((t) => t.name === open)) setDrawerVersion((v) => v + 1);
        },
        onStreamError: (e) => setStreamError(`storage error: ${e.message} (retrying in ${duration(e.retry_in_ms)})`),
        onMode: setMode,
        poll: () => {
          getJson<ApiWorkflowDetail>(workflowApi(id)).then(
            (d) => {
              setDetail(d);
              setStreamError(null);
            },
            (err: unknown) => setStreamError(errorText(err)),
          );
          getJson<ApiGraph>(workflowApi(id, 'graph', { level: servedLevel })).then(
            (graph) => {
              const m = modelRef.current;
              if (m) applyDelta(m, graphAsDelta(graph));
              setVersion((v) => v + 1);
              setDrawerVersion((v) => v + 1);
            },
            () => undefined,
          );
        },
      },
      browserLiveDeps,
    );
    return () => feed.close();
  }, [id, servedLevel]);

  // The name filter follows typing after a pause.
  useEffect(() => {
    if (nameInput === view.name) return;
    const t = setTimeout(() => setView({ name: nameInput }), 250);
    return () => clearTimeout(t);
  }, [nameInput]);

  const filter = useMemo(
    () => ({ status: view.status, queue: view.queue, name: view.name }),
    [view.status.join(','), view.queue, view.name],
  );
  const shown = useMemo(() => (model ? visibleNodes(model, filter) : null), [model, filter, version]);
  const selected = model && view.task !== null ? nodeOfTask(model, view.task) : -1;
  const onSelect = useCallback(
    (i: number) => {
      const node = modelRef.current?.graph.nodes[i];
      if (!node) return;
      if (node.kind === 'task') {
        setOpenGroup(null);
        setView({ task: node.id }, false);
      } else {
        setOpenGroup(node.id);
      }
    },
    [setView],
  );
  const onViewChange = useCallback((v: Viewport) => setView({ zoom: v }), [setView]);

  if (detailError?.status === 404) return html`<${NotFound} what=${`workflow ${id}`} message=${detailError.message} />`;
  if (detailError) return html`<main class="page"><p class="banner banner-error" role="alert">${detailError.message}</p></main>`;
  if (!detail) return html`<main class="page"><p class="muted">loading ${id}…</p></main>`;

  const counts = detail.counts;
  const done = finished(counts);
  const group = openGroup !== null && model ? model.graph.nodes[model.index.get(openGroup) ?? -1] : undefined;
  const toggleStatus = (state: string): void => {
    const set = new Set(view.status);
    if (set.has(state)) set.delete(state);
    else set.add(state);
    setView({ status: DISPLAY_STATES.filter((s) => set.has(s)) });
  };
  return html`<main class="page workflow-page">
    <header class="wf-head">
      <h1><span class="wf-name">${detail.name}</span> <span class="wf-id">${detail.workflow_id}</span> <span class=${`wf-status status-${detail.status}`}>${detail.status}</span></h1>
      <${CountsBar} counts=${counts} />
      <p class="wf-line">
        <span>${done}/${detail.total} finished (${detail.total === 0 ? 0 : Math.floor((done / detail.total) * 100)}%)</span>
        ${TERMINAL.has(detail.status) ? null : html`<span>rate ${rateText(detail.rate_per_s)}</span><span>ETA ${detail.eta_ms === null ? '?' : duration(detail.eta_ms)}</span>`}
        <span class=${`live live-${mode}`} aria-live="polite">${MODE_TEXT[mode]}</span>
      </p>
      <p class="wf-line"><${CountsLine} counts=${counts} /></p>
    </header>
    ${detail.banner ? html`<p class="banner banner-warn" role="status">${detail.banner}</p>` : null}
    ${streamError ? html`<p class="banner banner-error" role="alert">${streamError}</p>` : null}
    ${graphError ? html`<p class="banner banner-error" role="alert">graph: ${graphError}</p>` : null}
    <form class="filters" onSubmit=${(e: Event) => e.preventDefault()} aria-label="filters">
      <fieldset class="levels"><legend>level</legend>
        ${LEVELS.map(
          (
            l,
          ) => html`<label class=${view.level === l ? 'on' : ''}><input type="radio" name="level" value=${l} checked=${view.level === l} onChange=${() => setView({ level: l, all: false, zoom: null }, false)} />
            ${l}${l === 'auto' ? (model && view.level === 'auto' ? ` (${model.graph.level})` : '') : ` (${detail.level_sizes[l]})`}</label>`,
        )}
      </fieldset>
      <fieldset class="states"><legend>state</legend>
        ${DISPLAY_STATES.filter((s) => (hasWorkers ? s !== 'running' : s !== 'in_queue' && s !== 'on_worker')).map(
          (
            s,
          ) => html`<label class=${view.status.includes(s) ? 'on' : ''}><input type="checkbox" checked=${view.status.includes(s)} onChange=${() => toggleStatus(s)} />
            <span class="swatch" style=${`background:${STATE_STYLES[s].fill}`}></span>${STATE_STYLES[s].icon} ${STATE_STYLES[s].label}</label>`,
        )}
      </fieldset>
      <label>queue <select value=${view.queue} onChange=${(e: Event) => setView({ queue: (e.currentTarget as HTMLSelectElement).value })}>
        <option value="">all</option>
        ${detail.queues.map((q) => html`<option value=${q}>${q}</option>`)}
      </select></label>
      <label>name <input type="search" value=${nameInput} placeholder="part of a task name" onInput=${(e: Event) => setNameInput((e.currentTarget as HTMLInputElement).value)} /></label>
    </form>
    ${
      needsClick
        ? html`<div class="click-through"><p>${detail.total} tasks: drawing every one of them takes a moment.</p><button type="button" onClick=${() => setView({ all: true }, false)}>show all ${detail.total} tasks</button></div>`
        : model && shown
          ? html`${shown.count === 0 ? html`<p class="banner banner-warn" role="status">No node matches the filters.</p>` : null}<${GraphView} key=${model.graph.level} model=${model} visible=${shown.visible} visibleCount=${shown.count} version=${version} selected=${selected}
            initialView=${view.zoom} onSelect=${onSelect} onViewChange=${onViewChange} />`
          : html`<p class="muted">loading the graph…</p>`
    }
    ${
      group && group.kind === 'group'
        ? html`<${GroupPanel} node=${group} taskStates=${taskStates} hasWorkers=${hasWorkers} onPick=${(t: string) => setView({ task: t }, false)} onClose=${() => setOpenGroup(null)} />`
        : null
    }
    ${
      view.task !== null
        ? html`<${TaskDrawer} workflowId=${id} name=${view.task} version=${drawerVersion} hasWorkers=${hasWorkers} onClose=${() => setView({ task: null }, false)} onOpenTask=${(t: string) => setView({ task: t }, false)} />`
        : null
    }
  </main>`;
}
