/** `/`: the workflow list (index rows), filtered by status and name prefix, a page at a time. */
import { useState } from 'preact/hooks';
import type { ApiWorkflowList } from '../../api-types';
import { timeText } from '../format';
import { html } from '../html';
import { usePolledJson } from '../polled';
import { routeHref, workflowHref } from '../route';
import type { Navigate } from './common';
import { CountsBar, CountsLine } from './workflow';

const STATUSES = ['pending', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'corrupt'];
/** The server caches the list for 10 s; reading it more often shows nothing new. */
const REFRESH_MS = 10_000;

export function ListPage(props: { status: string; prefix: string; cursor: string | null; navigate: Navigate }) {
  const { status, prefix, cursor, navigate } = props;
  const q = new URLSearchParams();
  if (status) q.set('status', status);
  if (prefix) q.set('prefix', prefix);
  if (cursor) q.set('cursor', cursor);
  const { data: list, error } = usePolledJson<ApiWorkflowList>(`/api/workflows${q.toString() ? `?${q.toString()}` : ''}`, REFRESH_MS);
  const [prefixInput, setPrefixInput] = useState(prefix);

  const go = (patch: { status?: string; prefix?: string; cursor?: string | null }): void =>
    navigate(routeHref({ page: 'list', status, prefix, cursor: null, ...patch }));
  return html`<main class="page list-page">
    <h1>workflows</h1>
    <form class="filters" aria-label="filters" onSubmit=${(e: Event) => {
      e.preventDefault();
      go({ prefix: prefixInput });
    }}>
      <label>status <select value=${status} onChange=${(e: Event) => go({ status: (e.currentTarget as HTMLSelectElement).value })}>
        <option value="">all</option>
        ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select></label>
      <label>name starts with <input type="search" value=${prefixInput} onInput=${(e: Event) => setPrefixInput((e.currentTarget as HTMLInputElement).value)} /></label>
      <button type="submit">filter</button>
    </form>
    ${error ? html`<p class="banner banner-error" role="alert">${error}</p>` : null}
    ${!list && !error ? html`<p class="muted">loading…</p>` : null}
    ${
      list
        ? html`<table class="wf-table">
          <thead><tr><th>workflow</th><th>status</th><th>progress</th><th>tasks</th><th>created</th><th>finished</th></tr></thead>
          <tbody>
            ${list.workflows.length === 0 ? html`<tr><td colspan="6" class="muted">no workflows${status || prefix ? ' match' : ''}</td></tr>` : null}
            ${list.workflows.map(
              (w) => html`<tr key=${w.workflow_id}>
                <td><a href=${workflowHref(w.workflow_id)}><span class="wf-name">${w.name}</span></a><br /><span class="wf-id">${w.workflow_id}</span>${w.error ? html`<br /><span class="error-text">${w.error}</span>` : null}</td>
                <td><span class=${`wf-status status-${w.status}`}>${w.status}</span></td>
                <td class="progress"><${CountsBar} counts=${w.counts} /><${CountsLine} counts=${w.counts} /></td>
                <td>${w.total}</td>
                <td>${timeText(w.created_at)}</td>
                <td>${timeText(w.finished_at)}</td>
              </tr>`,
            )}
          </tbody>
        </table>
        <p class="pager">
          ${cursor ? html`<a href=${routeHref({ page: 'list', status, prefix, cursor: null })}>first page</a>` : null}
          ${list.next_cursor ? html`<a href=${routeHref({ page: 'list', status, prefix, cursor: list.next_cursor })}>next page</a>` : null}
          <span class="muted">read ${timeText(list.read_at)}</span>
        </p>`
        : null
    }
  </main>`;
}
