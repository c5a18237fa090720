/**
 * The pages and their addresses (deep links): `/` the workflow list, `/workflows/{id}` a workflow
 * (its view in the query: level, filters, zoom, `task` for the open drawer), `/workers`. Pure:
 * parsing and building only, so a reload lands on the same view.
 */

export const LEVELS = ['auto', 'families', 'siblings', 'layers', 'tasks'] as const;
export type Level = (typeof LEVELS)[number];

/** What the workflow page shows, all of it kept in the address. */
export interface WorkflowView {
  level: Level;
  /** Display states to show; empty = all. */
  status: string[];
  queue: string;
  /** Shows nodes whose name (or a task of the group) contains this text. */
  name: string;
  /** The task whose drawer is open. */
  task: string | null;
  /** Pan and zoom: layout point at the top-left corner, and the scale. */
  zoom: { x: number; y: number; k: number } | null;
  /** `tasks` level over the click-through threshold: the user asked for it anyway. */
  all: boolean;
}

export type Route =
  | { page: 'list'; status: string; prefix: string; cursor: string | null }
  | { page: 'workflow'; id: string; view: WorkflowView }
  | { page: 'workers' }
  | { page: 'not-found'; path: string };

export const DEFAULT_VIEW: WorkflowView = { level: 'auto', status: [], queue: '', name: '', task: null, zoom: null, all: false };

function isLevel(text: string | null): text is Level {
  return text !== null && (LEVELS as readonly string[]).includes(text);
}

function parseZoom(text: string | null): WorkflowView['zoom'] {
  if (!text) return null;
  const parts = text.split(',').map(Number);
  if (parts.length !== 3 || !parts.every(Number.isFinite) || parts[2]! <= 0) return null;
  return { x: parts[0]!, y: parts[1]!, k: parts[2]! };
}

/** The route of a path and query string (`location.pathname`, `location.search`). */
export function parseRoute(pathname: string, search: string): Route {
  const query = new URLSearchParams(search);
  const path = pathname.replace(/\/+$/, '') || '/';
  if (path === '/')
    return { page: 'list', status: query.get('status') ?? '', prefix: query.get('prefix') ?? '', cursor: query.get('cursor') };
  if (path === '/workers') return { page: 'workers' };
  const match = /^\/workflows\/([^/]+)$/.exec(path);
  if (match) {
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
    } catch {
      return { page: 'not-found', path: pathname };
    }
    const level = query.get('level');
    return {
      page: 'workflow',
      id,
      view: {
        level: isLevel(level) ? level : 'auto',
        status: (query.get('status') ?? '').split(',').filter((s) => s !== ''),
        queue: query.get('queue') ?? '',
        name: query.get('name') ?? '',
        task: query.get('task'),
        zoom: parseZoom(query.get('zoom')),
        all: query.get('all') === '1',
      },
    };
  }
  return { page: 'not-found', path: pathname };
}

function withQuery(path: string, entries: Array<[string, string]>): string {
  const query = new URLSearchParams(entries).toString();
  return query ? `${path}?${query}` : path;
}

/** The address of a route; defaults are left out, so the plain address is the default view. */
export function routeHref(route: Route): string {
  switch (route.page) {
    case 'list': {
      const q: Array<[string, string]> = [];
      if (route.status) q.push(['status', route.status]);
      if (route.prefix) q.push(['prefix', route.prefix]);
      if (route.cursor) q.push(['cursor', route.cursor]);
      return withQuery('/', q);
    }
    case 'workers':
      return '/workers';
    case 'not-found':
      return route.path;
    case 'workflow': {
      const v = route.view;
      const q: Array<[string, string]> = [];
      if (v.level !== 'auto') q.push(['level', v.level]);
      if (v.status.length > 0) q.push(['status', v.status.join(',')]);
      if (v.queue) q.push(['queue', v.queue]);
      if (v.name) q.push(['name', v.name]);
      if (v.all) q.push(['all', '1']);
      if (v.zoom) q.push(['zoom', [v.zoom.x, v.zoom.y, v.zoom.k].map((n) => Math.round(n * 1000) / 1000).join(',')]);
      if (v.task !== null) q.push(['task', v.task]);
      return withQuery(`/workflows/${encodeURIComponent(route.id)}`, q);
    }
  }
}

/** The address of a workflow page in its default view, optionally with a task's drawer open. */
export function workflowHref(id: string, task: string | null = null): string {
  return routeHref({ page: 'workflow', id, view: { ...DEFAULT_VIEW, task } });
}
