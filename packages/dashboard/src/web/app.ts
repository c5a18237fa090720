/** The single-page app: the route from the address, links handled without a reload. */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { html } from './html';
import { NotFound } from './pages/common';
import { ListPage } from './pages/list';
import { WorkersPage } from './pages/workers';
import { WorkflowPage } from './pages/workflow';
import { parseRoute } from './route';

function currentRoute() {
  return parseRoute(location.pathname, location.search);
}

export function App() {
  const [route, setRoute] = useState(currentRoute);
  const navigate = useCallback((href: string, replace = false) => {
    if (href === location.pathname + location.search) return;
    if (replace) history.replaceState(null, '', href);
    else history.pushState(null, '', href);
    setRoute(currentRoute());
  }, []);

  useEffect(() => {
    const onPop = (): void => setRoute(currentRoute());
    // Same-origin links change the page in place (a new tab, modifier keys or downloads go through).
    const onClick = (e: MouseEvent): void => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const a = (e.target as Element).closest?.('a');
      if (!a || a.target || a.hasAttribute('download') || a.origin !== location.origin || a.pathname.startsWith('/api/')) return;
      e.preventDefault();
      navigate(a.pathname + a.search);
    };
    window.addEventListener('popstate', onPop);
    document.addEventListener('click', onClick);
    return () => {
      window.removeEventListener('popstate', onPop);
      document.removeEventListener('click', onClick);
    };
  }, [navigate]);

  useEffect(() => {
    document.title =
      route.page === 'workflow'
        ? `${route.id} · jobq`
        : route.page === 'workers'
          ? 'workers · jobq'
          : route.page === 'list'
            ? 'workflows · jobq'
            : 'not found · jobq';
  }, [route]);

  let page;
  switch (route.page) {
    case 'list':
      page = html`<${ListPage} status=${route.status} prefix=${route.prefix} cursor=${route.cursor} navigate=${navigate} />`;
      break;
    case 'workflow':
      page = html`<${WorkflowPage} key=${route.id} id=${route.id} view=${route.view} navigate=${navigate} />`;
      break;
    case 'workers':
      page = html`<${WorkersPage} />`;
      break;
    default:
      page = html`<${NotFound} what=${`the page ${route.path}`} />`;
  }
  return html`<div class="app">
    <nav class="top" aria-label="main">
      <a class="brand" href="/">jobq</a>
      <a href="/" aria-current=${route.page === 'list' ? 'page' : undefined}>workflows</a>
      <a href="/workers" aria-current=${route.page === 'workers' ? 'page' : undefined}>workers</a>
      <span class="read-only">read-only</span>
    </nav>
    ${page}
  </div>`;
}
