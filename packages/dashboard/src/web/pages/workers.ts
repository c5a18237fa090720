/** `/workers`: the workers' heartbeats (state, queues and slots, what each runs). */
import type { ApiWorkers } from '../../api-types';
import { duration, timeText } from '../format';
import { html } from '../html';
import { usePolledJson } from '../polled';
import { workflowHref } from '../route';

const REFRESH_MS = 5_000;

export function WorkersPage() {
  const { data, error } = usePolledJson<ApiWorkers>('/api/workers', REFRESH_MS);
  return html`<main class="page workers-page">
    <h1>workers</h1>
    ${error ? html`<p class="banner banner-error" role="alert">${error}</p>` : null}
    ${data && !data.available ? html`<p class="banner banner-warn">No worker heartbeats are configured for this deployment.</p>` : null}
    ${data && data.available && data.workers.length === 0 ? html`<p class="muted">no worker has sent a heartbeat</p>` : null}
    ${
      data && data.workers.length > 0
        ? html`<table class="wf-table">
          <thead><tr><th>worker</th><th>state</th><th>queues (busy/slots)</th><th>running</th><th>seen</th></tr></thead>
          <tbody>
            ${data.workers.map(
              (w) => html`<tr key=${w.worker_id}>
                <td><span class="wf-name">${w.worker_id}</span><br /><span class="muted">${w.host} pid ${w.pid} · ${w.version} · since ${timeText(w.started_at)}</span></td>
                <td><span class=${`worker-state worker-${w.state}`}>${w.state}</span></td>
                <td>${w.queues.map((q) => html`<div>${q.queue}: ${q.busy}/${q.slots}</div>`)}</td>
                <td>
                  ${w.running.map(
                    (r) =>
                      html`<div>${r.workflow_id && r.task ? html`<a href=${workflowHref(r.workflow_id, r.task)}>${r.task}</a>` : r.id}${r.attempt_no !== null ? ` #${r.attempt_no}` : ''} <span class="muted">since ${timeText(r.since)}</span></div>`,
                  )}
                  ${w.running_more > 0 ? html`<div class="muted">+${w.running_more} more</div>` : null}
                </td>
                <td>${duration(w.age_ms)} ago</td>
              </tr>`,
            )}
          </tbody>
        </table>`
        : null
    }
  </main>`;
}
