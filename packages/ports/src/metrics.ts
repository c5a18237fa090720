/**
 * The metrics jobq's services record (docs/metrics.md): one table, read by the app that
 * exports them (the CLI's Prometheus endpoint) and by the docs. The worker and the coordinator
 * record through {@link Instruments} and never depend on a metrics library.
 */

/** Prometheus metric types used by jobq. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/** One row of {@link METRICS}. */
export interface MetricDefinition {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  /** Label names, in order. No label ever holds an id (workflow, task, message, worker). */
  readonly labels: readonly string[];
  /** Upper bounds of a histogram's buckets (seconds or counts). */
  readonly buckets?: readonly number[];
}

const SECONDS_SHORT = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SECONDS_LONG = [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400];

/** Every metric jobq records, by name (the exporter registers exactly these). */
export const METRICS = {
  jobq_coordinator_completions_total: {
    name: 'jobq_coordinator_completions_total',
    type: 'counter',
    help: 'Completion messages handled by the coordinator, by result (applied, ignored, poison)',
    labels: ['result'],
  },
  jobq_coordinator_batch_messages: {
    name: 'jobq_coordinator_batch_messages',
    type: 'histogram',
    help: 'Messages per completion batch received by the coordinator',
    labels: [],
    buckets: [1, 2, 4, 8, 16, 32],
  },
  jobq_coordinator_flush_duration_seconds: {
    name: 'jobq_coordinator_flush_duration_seconds',
    type: 'histogram',
    help: 'Duration of the conditional runtime saves, by result (ok, conflict: 412, error)',
    labels: ['result'],
    buckets: SECONDS_SHORT,
  },
  jobq_coordinator_dispatches_total: {
    name: 'jobq_coordinator_dispatches_total',
    type: 'counter',
    help: 'Task messages sent by the coordinator, by queue and result (ok, error); a batch send that fails is counted again per message when retried one by one',
    labels: ['queue', 'result'],
  },
  jobq_queue_messages: {
    name: 'jobq_queue_messages',
    type: 'gauge',
    help: 'Approximate messages in a queue (role: completions, tasks), sampled by the coordinator with its stats',
    labels: ['queue', 'role'],
  },
  jobq_worker_task_duration_seconds: {
    name: 'jobq_worker_task_duration_seconds',
    type: 'histogram',
    help: 'Run time of the tasks a worker ran, by queue and outcome (done, failed, leave); a workflow task whose command failed is failed',
    labels: ['queue', 'outcome'],
    buckets: SECONDS_LONG,
  },
  jobq_worker_task_queue_wait_seconds: {
    name: 'jobq_worker_task_queue_wait_seconds',
    type: 'histogram',
    help: 'From the enqueue time of a task message to the start of its run (when the queue reports it)',
    labels: ['queue'],
    buckets: SECONDS_LONG,
  },
  jobq_worker_slots: {
    name: 'jobq_worker_slots',
    type: 'gauge',
    help: 'Task slots of the worker, by queue',
    labels: ['queue'],
  },
  jobq_worker_slots_busy: {
    name: 'jobq_worker_slots_busy',
    type: 'gauge',
    help: 'Task slots holding a message, by queue',
    labels: ['queue'],
  },
  jobq_worker_receive_errors_total: {
    name: 'jobq_worker_receive_errors_total',
    type: 'counter',
    help: 'Failed receives of a worker, by queue and error code',
    labels: ['queue', 'code'],
  },
  jobq_worker_task_log_upload_failures_total: {
    name: 'jobq_worker_task_log_upload_failures_total',
    type: 'counter',
    help: 'Task-log uploads of a worker that failed (each only warned about; the task goes on), by queue',
    labels: ['queue'],
  },
  jobq_storage_requests_total: {
    name: 'jobq_storage_requests_total',
    type: 'counter',
    help: 'HTTP requests sent to Azure Storage, by service (blob, table, queue), method and status class (2xx, 3xx, 4xx, 5xx, error); calls to Service Bus as service servicebus, by operation, ok or error',
    labels: ['service', 'method', 'status_class'],
  },
} as const satisfies Record<string, MetricDefinition>;

/** A metric's name. */
export type MetricName = keyof typeof METRICS;
/** Names of the metrics in {@link METRICS} of type `T`. */
export type MetricNamesOf<T extends MetricType> = { [K in MetricName]: (typeof METRICS)[K]['type'] extends T ? K : never }[MetricName];
/** Names of the counters in {@link METRICS}. */
export type CounterName = MetricNamesOf<'counter'>;
/** Names of the gauges in {@link METRICS}. */
export type GaugeName = MetricNamesOf<'gauge'>;
/** Names of the histograms in {@link METRICS}. */
export type HistogramName = MetricNamesOf<'histogram'>;
/** The labels of a metric, each a string value. */
export type MetricLabels<N extends MetricName> = { readonly [L in (typeof METRICS)[N]['labels'][number]]: string };

/**
 * Where the worker and the coordinator record their metrics (by name from {@link METRICS}). An
 * implementation never throws: a metric error must not stop a process.
 */
export interface Instruments {
  /** Adds `value` (default 1) to a counter. */
  inc<N extends CounterName>(name: N, labels: MetricLabels<N>, value?: number): void;
  /** Records one observation of a histogram. */
  observe<N extends HistogramName>(name: N, labels: MetricLabels<N>, value: number): void;
  /** Sets a gauge. */
  set<N extends GaugeName>(name: N, labels: MetricLabels<N>, value: number): void;
  /** False for {@link noopInstruments}: recorders may skip work (a queue count) done only for metrics. */
  readonly enabled: boolean;
}

/** Records nothing: the default of the worker and the coordinator. */
export const noopInstruments: Instruments = {
  inc() {},
  observe() {},
  set() {},
  enabled: false,
};

/** Distinct values a `queue` label takes at most; later queues are recorded as {@link OTHER_LABEL_VALUE}. */
export const MAX_QUEUE_LABEL_VALUES = 100;
/** The label value of the queues past {@link MAX_QUEUE_LABEL_VALUES}. */
export const OTHER_LABEL_VALUE = 'other';

/**
 * Bounds the values of a label: the first `max` distinct values pass, every later one becomes
 * `other`, so a deployment with many queues keeps a bounded number of series.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number = MAX_QUEUE_LABEL_VALUES) {}

  value(raw: string): string {
    if (this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max) return OTHER_LABEL_VALUE;
    this.seen.add(raw);
    return raw;
  }
}

/** The Markdown table of {@link METRICS} (metric, type, labels, help), as in the docs and the README. */
export function metricsMarkdownTable(): string {
  const rows = Object.values(METRICS).map(
    (m: MetricDefinition) =>
      `| \`${m.name}\` | ${m.type} | ${m.labels.length === 0 ? '—' : m.labels.map((l) => `\`${l}\``).join(', ')} | ${m.help} |`,
  );
  return ['| metric | type | labels | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
