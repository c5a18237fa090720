/** Entry of the web UI bundle (built by scripts/build-web.mjs into dist/web). */
import { render } from 'preact';
import { App } from './app';
import { html } from './html';

render(html`<${App} />`, document.body);
