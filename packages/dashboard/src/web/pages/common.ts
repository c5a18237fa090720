import { html } from '../html';

/** Goes to an address of the dashboard without reloading; `replace` keeps the history entry. */
export type Navigate = (href: string, replace?: boolean) => void;

/** The "not found" page: unknown workflow, task or address. */
export function NotFound(props: { what: string; message?: string }) {
  return html`<main class="page not-found">
    <h1>not found</h1>
    <p>${props.what} does not exist${props.message ? `: ${props.message}` : '.'}</p>
    <p><a href="/">all workflows</a></p>
  </main>`;
}
