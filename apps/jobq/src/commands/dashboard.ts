import { Flags } from '@oclif/core';
import { JobqCommand } from '../base';
import { DEFAULT_DASHBOARD_PORT, dashboardHost, dashboardLine, openBrowser, pollIntervalMs, startDeploymentDashboard } from '../dashboard';
import { openDeployment } from '../deployment';
import { configFlags, configFromFlags } from '../flags';

/** The `--json` document of `jobq dashboard`, printed once it listens. */
export interface DashboardReport {
  url: string;
  host: string;
  port: number;
  poll_interval_ms: number;
  target: string;
}

export default class DashboardCommand extends JobqCommand {
  static override summary =
    'Serve a read-only web UI of the deployment on this machine: workflows, their live DAG, tasks, logs and workers';
  static override description =
    'Starts the dashboard (packages/dashboard/README.md) on a loopback address and prints "jobq: dashboard on http://127.0.0.1:PORT/"; it runs until Ctrl-C or SIGTERM, which stop it and exit 0. ' +
    'Pages: / (the workflow list), /workflows/ID (a workflow: counts, rate, ETA and its DAG, live; ?task=NAME opens a task) and /workers. ' +
    "It reads a workflow's runtime every --poll-interval while a page shows it (once for all open pages), and the list at most every 10 s. " +
    'Read-only: it has no buttons that change anything (the task drawer shows the CLI lines to copy), so Data Reader roles are enough. ' +
    'Only loopback hosts are accepted (there is no authentication): reach it from another machine with ssh -L or a port-forward. ' +
    'A port already in use is an error (exit 1); --port 0 picks a free one.';
  static override examples = [
    '<%= config.bin %> dashboard',
    '<%= config.bin %> dashboard --port 0 --open',
    '<%= config.bin %> dashboard --poll-interval 5s --json',
    '<%= config.bin %> dashboard --prefix myaccount/Prod',
  ];
  static override flags = {
    ...configFlags,
    port: Flags.integer({ description: `Port to listen on (0 picks a free one)`, default: DEFAULT_DASHBOARD_PORT, min: 0, max: 65_535 }),
    host: Flags.string({ description: 'Loopback address to listen on (127.0.0.1, ::1 or localhost; nothing else)', default: '127.0.0.1' }),
    'poll-interval': Flags.string({ description: 'How often a shown workflow is read: 2s, 500ms, 1m (at least 250ms)', default: '2s' }),
    open: Flags.boolean({ description: "Open the dashboard in the desktop's browser", default: false }),
    json: Flags.boolean({
      description: 'Print one JSON document once it listens: {url, host, port, poll_interval_ms, target} (then keep running)',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DashboardCommand);
    const host = dashboardHost(flags.host);
    const interval = pollIntervalMs(flags['poll-interval']);
    const deployment = await openDeployment(configFromFlags(flags), { createIfMissing: false });
    const dashboard = await startDeploymentDashboard(deployment, { host, port: flags.port, pollIntervalMs: interval });
    let stop: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const onSignal = (): void => stop();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      if (flags.json) {
        const report: DashboardReport = {
          url: dashboard.url,
          host: dashboard.host,
          port: dashboard.port,
          poll_interval_ms: interval,
          target: deployment.target,
        };
        this.printJson(report);
      }
      this.note(dashboardLine(dashboard.url));
      if (flags.open) openBrowser(dashboard.url, (line) => this.note(`jobq: ${line}`));
      await stopped;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await dashboard.close();
    }
    this.note('jobq: dashboard stopped');
  }
}
