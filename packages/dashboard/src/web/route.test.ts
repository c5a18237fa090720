import { describe, expect, it } from '@jest/globals';
import { DEFAULT_VIEW, parseRoute, routeHref, workflowHref, type Route } from './route';

describe('routes', () => {
  it('parses the three pages and anything else as not found', () => {
    expect(parseRoute('/', '')).toEqual({ page: 'list', status: '', prefix: '', cursor: null });
    expect(parseRoute('/', '?status=failed&prefix=nightly')).toEqual({ page: 'list', status: 'failed', prefix: 'nightly', cursor: null });
    expect(parseRoute('/workers/', '')).toEqual({ page: 'workers' });
    expect(parseRoute('/workflows/a%2Fb', '')).toEqual({ page: 'workflow', id: 'a/b', view: DEFAULT_VIEW });
    expect(parseRoute('/workflows/x/y', '')).toEqual({ page: 'not-found', path: '/workflows/x/y' });
    expect(parseRoute('/workflows/%E0%A4%A', '')).toEqual({ page: 'not-found', path: '/workflows/%E0%A4%A' });
    expect(parseRoute('/etc/passwd', '')).toEqual({ page: 'not-found', path: '/etc/passwd' });
  });

  it('keeps the whole view of a workflow page through its address (a reload keeps the view)', () => {
    const route: Route = {
      page: 'workflow',
      id: 'wf 1',
      view: {
        level: 'tasks',
        status: ['failed', 'in_queue'],
        queue: 'gpu',
        name: 'train',
        task: 'train/007 a&b',
        zoom: { x: 10.5, y: -3, k: 0.25 },
        all: true,
      },
    };
    const href = routeHref(route);
    const url = new URL(href, 'http://127.0.0.1:8050');
    expect(url.pathname).toBe('/workflows/wf%201');
    expect(parseRoute(url.pathname, url.search)).toEqual(route);
  });

  it('ignores a bad level or zoom and falls back to the defaults', () => {
    const r = parseRoute('/workflows/w', '?level=nope&zoom=1,2');
    expect(r).toEqual({ page: 'workflow', id: 'w', view: DEFAULT_VIEW });
    expect(parseRoute('/workflows/w', '?zoom=1,2,0')).toEqual({ page: 'workflow', id: 'w', view: DEFAULT_VIEW });
  });

  it('builds plain addresses for default views', () => {
    expect(workflowHref('w')).toBe('/workflows/w');
    expect(workflowHref('w', 'a b')).toBe('/workflows/w?task=a+b');
    expect(routeHref({ page: 'list', status: '', prefix: '', cursor: null })).toBe('/');
    expect(routeHref({ page: 'list', status: 'running', prefix: '', cursor: 'c1' })).toBe('/?status=running&cursor=c1');
  });
});
