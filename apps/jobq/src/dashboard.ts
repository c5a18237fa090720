import { spawn } from 'node:child_process';
import { Flags } from '@oclif/core';
import { isLoopbackHost, startDashboard, type Dashboard } from '@jobq/dashboard';
import { isJobqError, parseDurationInMs } from '@jobq/ports';
import type { Deployment } from './deployment';
import { UsageError } from './errors';

/** ai4s-jobq's `track` port. */
export const DEFAULT_DASHBOARD_PORT = 8050;
/** The shortest --poll-interval. */
const MIN_POLL_INTERVAL_MS = 250;

/** `--dashboard-port` of `jobq dev` and `jobq workflow run` (with --dashboard). */
export const dashboardPortFlag = Flags.integer({
  description: `Port of the dashboard (with --dashboard; default ${DEFAULT_DASHBOARD_PORT}, 0 picks a free one)`,
  min: 0,
  max: 65_535,
  helpGroup: 'DASHBOARD',
});

/** `--poll-interval`: a duration of at least 250ms, in ms; a usage error otherwise. */
export function pollIntervalMs(text: string): number {
  let ms: number;
  try {
    ms = parseDurationInMs(text, '--poll-interval');
  } catch {
    throw new UsageError(`--poll-interval expects a duration such as 2s, 500ms or 1m, got "${text}"`);
  }
  if (!(ms >= MIN_POLL_INTERVAL_MS)) throw new UsageError(`--poll-interval must be at least ${MIN_POLL_INTERVAL_MS}ms, got "${text}"`);
  return ms;
}

/** `--host`: a loopback name or address; a usage error (exit 2) otherwise. */
export function dashboardHost(host: string): string {
  if (!isLoopbackHost(host)) {
    throw new UsageError(
      `--host ${host}: the dashboard listens on a loopback address only (127.0.0.1, ::1, localhost): it has no authentication. From another machine use ssh -L ${DEFAULT_DASHBOARD_PORT}:127.0.0.1:${DEFAULT_DASHBOARD_PORT} or a port-forward`,
    );
  }
  return host;
}

/** Starts the dashboard over a deployment's adapters. A taken port is a failure (exit 1) naming it. */
export async function startDeploymentDashboard(
  deployment: Deployment,
  options: { host?: string; port: number; pollIntervalMs?: number },
): Promise<Dashboard> {
  try {
    return await startDashboard({
      store: deployment.store,
      outputs: deployment.outputs,
      workers: deployment.workers,
      client: deployment.client,
      queues: (spec) => deployment.queue(spec),
      host: options.host ?? '127.0.0.1',
      port: options.port,
      ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
    });
  } catch (error) {
    if (isJobqError(error, 'invalid-argument')) throw new UsageError(error.message);
    if (isJobqError(error)) throw new Error(`the dashboard could not start: ${error.message}`);
    throw error;
  }
}

/** `jobq: dashboard on URL` */
export function dashboardLine(url: string): string {
  return `jobq: dashboard on ${url}`;
}

/** The URL of one workflow's page. */
export function workflowPageUrl(dashboard: Dashboard, workflowId: string): string {
  return `${dashboard.url}workflows/${encodeURIComponent(workflowId)}`;
}

/** Opens `url` in the desktop's browser (best effort); calls `onError` with one line when it cannot. */
export function openBrowser(url: string, onError: (line: string) => void): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => onError(`could not open a browser (${command} failed): open ${url} yourself`));
    child.unref();
  } catch {
    onError(`could not open a browser: open ${url} yourself`);
  }
}
