/**
 * The task drawer: everything about one task, read from `/api/workflows/ID/task?name=`, refreshed
 * when a live update touches the task. Read-only: cancel and retry are CLI lines to copy.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiAttempt, ApiTaskDetail } from '../api-types';
import { FetchError, getJson, getText } from './api';
import { bytesText, errorText, shellQuote, timeText } from './format';
import { html } from './html';
import { styleOf } from './palette';
import { taskDisplayState } from './graph/model';

/** The most of a log the drawer shows (the server sends at most this much too). */
const LOG_TAIL_BYTES = 64 * 1024;
const LOG_POLL_MS = 2_000;
/** The most of an output the drawer prints. */
const OUTPUT_CHARS = 20_000;

function StateBadge(props: { status: string; onWorker?: boolean | null; hasWorkers: boolean }) {
  const style = styleOf(taskDisplayState(props.status, props.onWorker ?? null, props.hasWorkers));
  return html`<span class="badge" style=${`background:${style.fill};color:${style.ink}`}>${style.icon} ${style.label}</span>`;
}

function CopyLine(props: { label: string; line: string }) {
  const [copied, setCopied] = useState(false);
  const copy = (): void => {
    void navigator.clipboard?.writeText(props.line).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  };
  return html`<div class="copy-line">
    <span class="copy-label">${props.label}</span>
    <code>${props.line}</code>
    <button type="button" onClick=${copy} aria-label=${`copy the ${props.label} command`}>${copied ? 'copied' : 'copy'}</button>
  </div>`;
}

/** One attempt's log: the last 64 KiB, followed while the attempt runs. */
function AttemptLog(props: { attempt: ApiAttempt }) {
  const { attempt } = props;
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const size = useRef(0);
  useEffect(() => {
    const url = attempt.log_url;
    if (!url) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const read = async (): Promise<void> => {
      try {
        const from = size.current;
        const res = await getText(from > 0 ? `${url}&from=${from}` : url);
        if (stopped) return;
        const total = Number(res.headers.get('x-jobq-log-size') ?? '0');
        size.current = Number.isFinite(total) && total > 0 ? total : from + res.text.length;
        setText((prev) => {
          const next = from > 0 && prev !== null ? prev + res.text : res.text;
          return next.length > LOG_TAIL_BYTES ? next.slice(next.length - LOG_TAIL_BYTES) : next;
        });
        setError(null);
        if (res.headers.get('x-jobq-log-outcome') === 'live') timer = setTimeout(() => void read(), LOG_POLL_MS);
      } catch (err) {
        if (!stopped) setError(errorText(err));
      }
    };
    void read();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [attempt.log_url]);
  if (!attempt.log_url) return html`<p class="muted">no log stored for this attempt</p>`;
  return html`<div class="log">
    ${error ? html`<p class="error-text">log: ${error}</p>` : null}
    <pre class="log-text" tabindex="0" aria-label=${`log of attempt ${attempt.attempt_no}`}>${text ?? 'loading…'}</pre>
  </div>`;
}

function Section(props: { title: string; children: unknown }) {
  return html`<section class="drawer-section"><h3>${props.title}</h3>${props.children}</section>`;
}

function valueText(value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.length > OUTPUT_CHARS
    ? `${text.slice(0, OUTPUT_CHARS)}\n… (${text.length - OUTPUT_CHARS} more characters: open the raw output)`
    : text;
}

export interface TaskDrawerProps {
  workflowId: string;
  name: string;
  /** Bumped when a live update changed this task: the drawer reads it again. */
  version: number;
  hasWorkers: boolean;
  onClose: () => void;
  onOpenTask: (name: string) => void;
}

export function TaskDrawer(props: TaskDrawerProps) {
  const [detail, setDetail] = useState<ApiTaskDetail | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [openAttempt, setOpenAttempt] = useState<number | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<ApiTaskDetail>(
      `/api/workflows/${encodeURIComponent(props.workflowId)}/task?name=${encodeURIComponent(props.name)}`,
      abort.signal,
    ).then(
      (d) => {
        setDetail(d);
        setError(null);
      },
      (err: unknown) => {
        if (abort.signal.aborted) return;
        setError(err instanceof FetchError ? { status: err.status, message: err.message } : { status: 0, message: String(err) });
      },
    );
    return () => abort.abort();
  }, [props.workflowId, props.name, props.version]);
  useEffect(() => {
    setOpenAttempt(null);
    setDetail(null);
  }, [props.name]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') props.onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [props.onClose]);

  const d = detail;
  const shownAttempt = openAttempt ?? (d && d.attempts.length > 0 ? d.attempts[d.attempts.length - 1]!.attempt_no : null);
  return html`<aside class="drawer" role="dialog" aria-label=${`task ${props.name}`}>
    <header class="drawer-head">
      <h2 class="task-name">${props.name}</h2>
      <button type="button" class="close" onClick=${props.onClose} aria-label="close the task drawer">×</button>
    </header>
    ${error ? html`<p class="banner banner-error" role="alert">${error.status === 404 ? `not found: ${error.message}` : error.message}</p>` : null}
    ${!d && !error ? html`<p class="muted">loading…</p>` : null}
    ${
      d
        ? html`<div class="drawer-body">
          <dl class="facts">
            <dt>state</dt><dd><${StateBadge} status=${d.status} onWorker=${d.placement ? d.placement.state === 'on-worker' : null} hasWorkers=${props.hasWorkers} /></dd>
            <dt>queue</dt><dd>${d.queue}</dd>
            <dt>attempt</dt><dd>${d.attempt_no}/${d.max_attempts}</dd>
            <dt>dispatched</dt><dd>${timeText(d.dispatched_at)}</dd>
            <dt>started</dt><dd>${timeText(d.started_at)}</dd>
            <dt>finished</dt><dd>${timeText(d.completed_at)}</dd>
            ${d.retry_due_at ? html`<dt>retry due</dt><dd>${timeText(d.retry_due_at)}</dd>` : null}
            ${d.placement ? html`<dt>worker</dt><dd>${d.placement.state === 'on-worker' ? `${d.placement.worker_id ?? '?'}${d.placement.host ? ` on ${d.placement.host}` : ''}${d.placement.since ? ` since ${timeText(d.placement.since)}` : ''}` : d.placement.state === 'in-queue' ? 'waiting in its queue' : 'unknown'}</dd>` : null}
          </dl>
          ${d.error ? html`<${Section} title="error"><pre class="error-text">${d.error}</pre><//>` : null}
          ${d.explain.length > 0 ? html`<${Section} title="why"><ul class="explain">${d.explain.map((r) => html`<li>${r}</li>`)}</ul><//>` : null}
          <${Section} title=${`dependencies (${typeof d.dep_policy === 'number' ? `at least ${d.dep_policy}` : d.dep_policy}: ${d.policy_verdict})`}>
            ${
              d.dependencies.length === 0
                ? html`<p class="muted">none: a root task</p>`
                : html`<ul class="deps">${d.dependencies.map(
                    (dep) =>
                      html`<li><button type="button" class="link" onClick=${() => props.onOpenTask(dep.name)}>${dep.name}</button> <${StateBadge} status=${dep.status} hasWorkers=${false} />${dep.gate ? html` <span class="muted">(gate)</span>` : null}</li>`,
                  )}</ul>`
            }
          <//>
          ${
            d.condition
              ? html`<${Section} title="condition">
                <code class="condition">${d.condition.expression}</code>
                <p>result: <strong class="condition-result">${d.condition.result === null ? 'not decided yet' : String(d.condition.result)}</strong>${d.condition.skip_reason ? html` <span class="muted">(${d.condition.skip_reason})</span>` : null}</p>
                <table class="parent-values"><thead><tr><th>input</th><th>state</th><th>value</th></tr></thead><tbody>
                  ${d.condition.parents.map(
                    (p) =>
                      html`<tr><td>inputs.${p.name}</td><td>${p.status}</td><td><pre class="value">${p.unavailable ? p.unavailable : valueText(p.value)}</pre></td></tr>`,
                  )}
                </tbody></table>
              <//>`
              : null
          }
          <${Section} title="output">
            ${d.output_error ? html`<p class="error-text">${d.output_error}</p>` : null}
            ${d.output === null || d.output === undefined ? html`<p class="muted">none</p>` : html`<pre class="output">${valueText(d.output)}</pre>`}
            ${d.output_url ? html`<p><a href=${d.output_url} target="_blank" rel="noopener">raw output JSON</a></p>` : null}
            ${
              d.stash.length > 0
                ? html`<p>stashed files:</p>
                  <ul class="stash">${d.stash.map((s) => html`<li><code title=${s.blob}>${s.filename}</code> <span class="muted">${bytesText(s.size)}</span></li>`)}</ul>
                  <${CopyLine} label="files" line=${`jobq workflow outputs ${shellQuote(d.workflow_id)} ${shellQuote(d.name)} --files ./${shellQuote(d.name.replace(/[^A-Za-z0-9._-]+/g, '_'))}`} />`
                : null
            }
          <//>
          <${Section} title=${`attempts (${d.attempts.length})`}>
            ${d.attempts.length === 0 ? html`<p class="muted">none yet</p>` : null}
            <ol class="attempts">
              ${d.attempts.map(
                (a) => html`<li class=${a.attempt_no === shownAttempt ? 'open' : ''}>
                  <button type="button" class="link" onClick=${() => setOpenAttempt(a.attempt_no)} aria-expanded=${a.attempt_no === shownAttempt}>
                    attempt ${a.attempt_no}: ${a.outcome ?? 'no log'}${a.exit_code !== null ? ` (exit ${a.exit_code})` : ''}${a.worker ? ` on ${a.worker}` : ''}${a.log_bytes !== null ? `, ${bytesText(a.log_bytes)}` : ''}
                  </button>
                  ${a.attempt_no === shownAttempt ? html`<${AttemptLog} key=${`${a.attempt_no}:${a.log_url ?? ''}`} attempt=${a} />` : null}
                </li>`,
              )}
            </ol>
          <//>
          ${
            d.dependents.length > 0
              ? html`<${Section} title=${`dependents (${d.dependents.length})`}><ul class="deps">${d.dependents.slice(0, 50).map((n) => html`<li><button type="button" class="link" onClick=${() => props.onOpenTask(n)}>${n}</button></li>`)}${d.dependents.length > 50 ? html`<li class="muted">+${d.dependents.length - 50} more</li>` : null}</ul><//>`
              : null
          }
          <${Section} title="commands">
            <${CopyLine} label="logs" line=${d.commands.logs} />
            <${CopyLine} label="retry" line=${d.commands.retry} />
            <${CopyLine} label="re-run" line=${d.commands.rerun} />
            <${CopyLine} label="cancel" line=${d.commands.cancel} />
          <//>
        </div>`
        : null
    }
  </aside>`;
}
