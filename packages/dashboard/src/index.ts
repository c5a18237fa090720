/**
 * `@jobq/dashboard`: a read-only local web UI of workflows, their live DAG, tasks, logs and
 * workers (packages/dashboard/README.md). The server runs on `node:http`; the web UI is built into
 * `dist/web`.
 * @packageDocumentation
 */
export { startDashboard, isLoopbackHost, type Dashboard, type DashboardOptions } from './server/server';
export type * from './api-types';
export { API_GRAPH_LEVELS } from './api-types';
