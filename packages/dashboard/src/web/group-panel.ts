/**
 * The tasks of a group node (a click on `train ×998`): a virtualized list, so 50 000 names cost
 * as much as the 30 in view. A name opens the task drawer.
 */
import { useState } from 'preact/hooks';
import type { ApiGroupNode, ApiTaskChange } from '../api-types';
import { html } from './html';
import { STATE_STYLES, styleOf } from './palette';
import { groupSegments, taskDisplayState } from './graph/model';
import { ROW_HEIGHT, VIEW_ROWS, windowRows } from './vlist';

export interface GroupPanelProps {
  node: ApiGroupNode;
  /** Known states of tasks that are not pending (from the live stream). */
  taskStates: ReadonlyMap<string, ApiTaskChange>;
  hasWorkers: boolean;
  onPick: (task: string) => void;
  onClose: () => void;
}

export function GroupPanel(props: GroupPanelProps) {
  const { node } = props;
  const [scrollTop, setScrollTop] = useState(0);
  const names = node.task_names;
  const { first, last } = windowRows(scrollTop, names.length);
  const rows = [];
  for (let i = first; i < last; i++) {
    const name = names[i]!;
    const known = props.taskStates.get(name);
    const style = styleOf(known ? taskDisplayState(known.status, known.on_worker, props.hasWorkers) : 'pending');
    rows.push(
      html`<li key=${name} style=${`top:${i * ROW_HEIGHT}px`}>
        <button type="button" class="link" onClick=${() => props.onPick(name)}><span class="state-icon" style=${`background:${style.fill};color:${style.ink}`} aria-label=${style.label}>${style.icon}</span> ${name}</button>
      </li>`,
    );
  }
  return html`<aside class="drawer group-panel" role="dialog" aria-label=${`group ${node.label}`}>
    <header class="drawer-head">
      <h2>${node.label}</h2>
      <button type="button" class="close" onClick=${props.onClose} aria-label="close the group">×</button>
    </header>
    <p>${node.size} tasks on queue ${node.queue}</p>
    <ul class="legend">
      ${groupSegments(node.counts, node.on_worker, props.hasWorkers).map((s) => html`<li><span class="swatch" style=${`background:${STATE_STYLES[s.state].fill}`}></span>${STATE_STYLES[s.state].icon} ${STATE_STYLES[s.state].label}: ${s.count}</li>`)}
    </ul>
    <div class="vlist" style=${`height:${VIEW_ROWS * ROW_HEIGHT}px`} onScroll=${(e: Event) => setScrollTop((e.currentTarget as HTMLElement).scrollTop)}>
      <ul style=${`height:${names.length * ROW_HEIGHT}px`} aria-label=${`tasks of ${node.label}`}>${rows}</ul>
    </div>
  </aside>`;
}
