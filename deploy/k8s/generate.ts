/**
 * Renders the Kubernetes manifests of a jobq deployment from a values file (deploy/README.md):
 *
 *   pnpm --filter @jobq/deploy-k8s run generate            # values.example.yaml → the committed files
 *   node deploy/k8s/dist/generate.js my-values.yaml --out DIR
 *
 * writes `storage-queue.yaml` and/or `service-bus.yaml` (one per entry of `backends`: the same
 * deployment with its task queues on Storage Queues or on Service Bus) and `kustomization.yaml`.
 * Each holds: a ServiceAccount federated with the workload identity, a ConfigMap of `JOBQ_*`
 * settings, the TriggerAuthentication KEDA uses (`azure-workload`), one coordinator Deployment
 * (1 replica, `Recreate`; with `coordinator.shards` above 1, `coordinator.replicas` sharded
 * coordinators, docs/sharding.md), a worker Deployment and a KEDA ScaledObject per queue, and a
 * ScaledJob for long tasks. No Secret: every client signs with the workload identity. Bad values are refused
 * with one line naming the file and the YAML path.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isShardCount, parseQueueSpec } from '@jobq/dag-core';
import { parse, stringify } from 'yaml';

export type Backend = 'storage-queue' | 'service-bus';
export const BACKENDS: readonly Backend[] = ['storage-queue', 'service-bus'];

/** CPU/memory requests and limits of a container, as Kubernetes writes them (`500m`, `1Gi`). */
export interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export interface QueueValues {
  /** The queue's name (bare: on the storage account, or on the Service Bus namespace). */
  name: string;
  /** Tasks one worker pod runs at once (`--num-workers`), and the queue length per replica KEDA aims at. */
  numWorkers: number;
  maxReplicas: number;
  resources: Resources;
}

export interface Values {
  namespace: string;
  image: { registry: string; tag: string };
  /** The storage account of the workflow store (and of the task queues on `storage-queue`). */
  storageAccount: string;
  /** The workflow prefix: `JOBQ_WORKFLOW_PREFIX` is `storageAccount/prefix`. */
  prefix: string;
  /** The Service Bus namespace (NAME of NAME.servicebus.windows.net) of `service-bus.yaml`; null without that backend. */
  serviceBusNamespace: string | null;
  identity: { clientId: string };
  backends: Backend[];
  healthPort: number;
  metricsPort: number;
  /** The worker's drain: `--shutdown-grace` and `--shutdown-kill-timeout`, in seconds. */
  shutdownGraceSeconds: number;
  shutdownKillTimeoutSeconds: number;
  /**
   * `shards`: the deployment's shard count (1, 2, 4, 8 or 16; 1 without sharding). Above 1,
   * `replicas` coordinators (1 to `shards`) share the shards (docs/sharding.md).
   */
  coordinator: { resources: Resources; shards: number; replicas: number };
  queues: QueueValues[];
  /** A ScaledJob example: one Job per waiting task of this queue; null for none. */
  longTasks: QueueValues | null;
}

/** A bad value: `where` is its YAML path (`queues[1].numWorkers`). */
export class ValuesError extends Error {
  constructor(
    readonly where: string,
    problem: string,
  ) {
    super(`${where}: ${problem}`);
    this.name = 'ValuesError';
  }
}

/** Seconds a worker pod gets after SIGTERM beyond the grace and kill timeouts (abandoning messages, exit). */
export const TERMINATION_MARGIN_SECONDS = 15;
/** KEDA's wait after the last active trigger before scaling to zero. */
export const COOLDOWN_SECONDS = 300;
/**
 * The coordinator's own stop (it stops taking completions, flushes, releases the lease; sharded,
 * each shard's runner finishes its batch and writes its stats, then the shard is released).
 */
const COORDINATOR_TERMINATION_SECONDS = 60;
/** Non-root user and group of the image (deploy/docker/Dockerfile's `USER 1000:1000`). */
const IMAGE_UID = 1000;
const SERVICE_ACCOUNT = 'jobq';
const CONFIG_MAP = 'jobq-config';
const TRIGGER_AUTH = 'azure-workload';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

/** Reads and checks the values; refuses unknown keys too (a typo would otherwise be silently ignored). */
export function parseValues(raw: unknown): Values {
  const root = record(raw, '(top)');
  known(root, '', [
    'namespace',
    'image',
    'storageAccount',
    'prefix',
    'serviceBusNamespace',
    'identity',
    'backends',
    'healthPort',
    'metricsPort',
    'worker',
    'coordinator',
    'queues',
    'longTasks',
  ]);
  const namespace = text(
    root.namespace,
    'namespace',
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    'a Kubernetes namespace (lowercase letters, digits and "-", at most 63)',
  );
  const image = record(root.image, 'image');
  known(image, 'image.', ['registry', 'tag']);
  const registry = text(
    image.registry,
    'image.registry',
    /^[a-z0-9][a-z0-9.:/_-]*[a-z0-9]$/,
    'a registry and path, e.g. myregistry.azurecr.io or myregistry.azurecr.io/team',
  );
  const tag = text(image.tag, 'image.tag', /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, 'an image tag (the @jobq/cli version, e.g. 0.1.0)');
  if (tag === 'latest') throw new ValuesError('image.tag', 'must be a version, not "latest" (a rollout must name what it runs)');
  const storageAccount = text(
    root.storageAccount,
    'storageAccount',
    /^[a-z0-9]{3,24}$/,
    'a storage account name (3–24 lowercase letters and digits)',
  );
  const prefix = text(
    root.prefix,
    'prefix',
    /^[A-Za-z][A-Za-z0-9]{0,31}$/,
    'a workflow prefix (a letter, then up to 31 letters or digits)',
  );
  const identity = record(
    root.identity,
    'identity',
    'the workload identity is required: identity.clientId, the client id of the managed identity the pods use',
  );
  known(identity, 'identity.', ['clientId']);
  const clientId = text(
    identity.clientId,
    'identity.clientId',
    /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
    'the client id (a GUID) of the managed identity',
  );
  if (!Array.isArray(root.backends) || root.backends.length === 0)
    throw new ValuesError('backends', `must be a list of ${BACKENDS.join(' and/or ')}, got ${show(root.backends)}`);
  const backends = root.backends.map((b: unknown, i) => {
    if (!BACKENDS.includes(b as Backend)) throw new ValuesError(`backends[${i}]`, `must be ${BACKENDS.join(' or ')}, got ${show(b)}`);
    return b as Backend;
  });
  if (new Set(backends).size !== backends.length) throw new ValuesError('backends', 'lists a backend twice');
  let serviceBusNamespace: string | null = null;
  if (backends.includes('service-bus')) {
    serviceBusNamespace = text(
      root.serviceBusNamespace,
      'serviceBusNamespace',
      /^[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9]$/,
      'a Service Bus namespace name (NAME of NAME.servicebus.windows.net)',
    );
  } else if (root.serviceBusNamespace !== undefined && root.serviceBusNamespace !== null) {
    throw new ValuesError('serviceBusNamespace', 'is set but backends has no service-bus');
  }
  const healthPort = port(root.healthPort, 'healthPort');
  const metricsPort = port(root.metricsPort, 'metricsPort');
  if (healthPort === metricsPort) throw new ValuesError('metricsPort', `must differ from healthPort (${healthPort})`);
  const worker = record(root.worker, 'worker');
  known(worker, 'worker.', ['shutdownGraceSeconds', 'shutdownKillTimeoutSeconds']);
  const shutdownGraceSeconds = integer(worker.shutdownGraceSeconds, 'worker.shutdownGraceSeconds', 0, 3600);
  const shutdownKillTimeoutSeconds = integer(worker.shutdownKillTimeoutSeconds, 'worker.shutdownKillTimeoutSeconds', 0, 600);
  const coordinator = record(root.coordinator, 'coordinator');
  known(coordinator, 'coordinator.', ['resources', 'shards', 'replicas']);
  const shards = coordinator.shards ?? 1;
  if (!isShardCount(shards)) throw new ValuesError('coordinator.shards', `must be 1, 2, 4, 8 or 16, got ${show(shards)}`);
  if (shards === 1 && coordinator.replicas !== undefined && coordinator.replicas !== 1)
    throw new ValuesError(
      'coordinator.replicas',
      'more than 1 needs coordinator.shards above 1 (one coordinator holds an unsharded prefix)',
    );
  const replicas = coordinator.replicas === undefined ? 1 : integer(coordinator.replicas, 'coordinator.replicas', 1, shards);
  if (!Array.isArray(root.queues) || root.queues.length === 0)
    throw new ValuesError('queues', `must be a list of at least one queue, got ${show(root.queues)}`);
  const queues = root.queues.map((q: unknown, i) => queue(q, `queues[${i}]`));
  const seen = new Set<string>();
  queues.forEach((q, i) => {
    if (seen.has(q.name)) throw new ValuesError(`queues[${i}].name`, `"${q.name}" is listed twice`);
    seen.add(q.name);
  });
  const longTasks = root.longTasks === undefined || root.longTasks === null ? null : queue(root.longTasks, 'longTasks');
  if (longTasks !== null && seen.has(longTasks.name))
    throw new ValuesError(
      'longTasks.name',
      `"${longTasks.name}" is also in queues: one queue is scaled by either a Deployment or a ScaledJob`,
    );
  return {
    namespace,
    image: { registry, tag },
    storageAccount,
    prefix,
    serviceBusNamespace,
    identity: { clientId },
    backends,
    healthPort,
    metricsPort,
    shutdownGraceSeconds,
    shutdownKillTimeoutSeconds,
    coordinator: { resources: resources(coordinator.resources, 'coordinator.resources'), shards, replicas },
    queues,
    longTasks,
  };
}

function record(value: unknown, where: string, missing?: string): Json {
  if (value === undefined || value === null) throw new ValuesError(where, missing ?? 'is required (a mapping)');
  if (!isRecord(value)) throw new ValuesError(where, `must be a mapping, got ${show(value)}`);
  return value;
}

function known(value: Json, at: string, keys: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) throw new ValuesError(`${at}${key}`, `unknown key (expected one of ${keys.join(', ')})`);
  }
}

function text(value: unknown, where: string, pattern: RegExp, what: string): string {
  if (typeof value !== 'string' || !pattern.test(value)) throw new ValuesError(where, `must be ${what}, got ${show(value)}`);
  return value;
}

function integer(value: unknown, where: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValuesError(where, `must be a whole number from ${min} to ${max}, got ${show(value)}`);
  }
  return value;
}

function port(value: unknown, where: string): number {
  return integer(value, where, 1, 65535);
}

function queue(value: unknown, where: string): QueueValues {
  const q = record(value, where);
  known(q, `${where}.`, ['name', 'numWorkers', 'maxReplicas', 'resources']);
  if (typeof q.name !== 'string') throw new ValuesError(`${where}.name`, `must be a queue name, got ${show(q.name)}`);
  const parsed = parseQueueSpec(q.name);
  if (!parsed.ok) throw new ValuesError(`${where}.name`, parsed.error);
  if (parsed.value.backend !== 'default') {
    throw new ValuesError(
      `${where}.name`,
      `must be a bare queue name (it lives on storageAccount or serviceBusNamespace, per backend), got "${q.name}"`,
    );
  }
  return {
    name: q.name,
    numWorkers: integer(q.numWorkers, `${where}.numWorkers`, 1, 1024),
    maxReplicas: integer(q.maxReplicas, `${where}.maxReplicas`, 1, 1000),
    resources: resources(q.resources, `${where}.resources`),
  };
}

const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;

function resources(value: unknown, where: string): Resources {
  const r = record(value, where);
  known(r, `${where}.`, ['requests', 'limits']);
  const out: Resources = {};
  for (const kind of ['requests', 'limits'] as const) {
    if (r[kind] === undefined) continue;
    const entries = record(r[kind], `${where}.${kind}`);
    known(entries, `${where}.${kind}.`, ['cpu', 'memory', 'ephemeral-storage']);
    out[kind] = {};
    for (const [name, quantity] of Object.entries(entries)) {
      out[kind][name] = text(
        typeof quantity === 'number' ? String(quantity) : quantity,
        `${where}.${kind}.${name}`,
        QUANTITY,
        'a quantity such as 500m, 2 or 1Gi',
      );
    }
  }
  return out;
}

/** Reads a values file; a YAML syntax error names the file and line. */
export function loadValues(path: string): Values {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${basename(path)}: not YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    return parseValues(raw);
  } catch (error) {
    if (error instanceof ValuesError) throw new Error(`${basename(path)}: ${error.message}`);
    throw error;
  }
}

// ----- rendering -------------------------------------------------------------------------------

function labels(component: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'app.kubernetes.io/name': 'jobq', 'app.kubernetes.io/component': component, ...extra };
}

function image(values: Values, target: 'coordinator' | 'worker'): string {
  return `${values.image.registry}/jobq-${target}:${values.image.tag}`;
}

const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

/** A pod template: workload identity, non-root, read-only root with a `/tmp` emptyDir, health and metrics ports. */
function podTemplate(
  values: Values,
  component: string,
  extraLabels: Record<string, string>,
  container: Json,
  probes: boolean,
  terminationGraceSeconds: number,
  restartPolicy?: string,
): Json {
  const ports = [
    { name: 'health', containerPort: values.healthPort, protocol: 'TCP' },
    { name: 'metrics', containerPort: values.metricsPort, protocol: 'TCP' },
  ];
  const health = (path: string) => ({ httpGet: { path, port: 'health' } });
  return {
    metadata: {
      labels: { ...labels(component, extraLabels), 'azure.workload.identity/use': 'true' },
      annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(values.metricsPort), 'prometheus.io/path': '/metrics' },
    },
    spec: {
      serviceAccountName: SERVICE_ACCOUNT,
      ...(restartPolicy ? { restartPolicy } : {}),
      terminationGracePeriodSeconds: terminationGraceSeconds,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: IMAGE_UID,
        runAsGroup: IMAGE_UID,
        fsGroup: IMAGE_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          ...container,
          envFrom: [{ configMapRef: { name: CONFIG_MAP } }],
          ports,
          ...(probes
            ? {
                startupProbe: { ...health('/livez'), periodSeconds: 2, failureThreshold: 30 },
                livenessProbe: { ...health('/livez'), periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
                readinessProbe: { ...health('/readyz'), periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 1 },
              }
            : {}),
          securityContext: CONTAINER_SECURITY,
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
        },
      ],
      volumes: [{ name: 'tmp', emptyDir: {} }],
    },
  };
}

/** `terminationGracePeriodSeconds` of a worker: its grace, its kill timeout and a margin to abandon messages and exit. */
export function workerTerminationSeconds(values: Values): number {
  return values.shutdownGraceSeconds + values.shutdownKillTimeoutSeconds + TERMINATION_MARGIN_SECONDS;
}

function workerArgs(values: Values, q: QueueValues, extra: string[] = []): string[] {
  return [
    'worker',
    '--queue',
    q.name,
    '--num-workers',
    String(q.numWorkers),
    '--health-port',
    String(values.healthPort),
    '--metrics-port',
    String(values.metricsPort),
    '--shutdown-grace',
    `${values.shutdownGraceSeconds}s`,
    '--shutdown-kill-timeout',
    `${values.shutdownKillTimeoutSeconds}s`,
    ...extra,
  ];
}

function workerName(q: QueueValues): string {
  return `jobq-worker-${q.name}`;
}

/** The KEDA trigger of a queue: `azure-queue` on the storage account, `azure-servicebus` on the namespace. */
function trigger(values: Values, backend: Backend, q: QueueValues, perReplica: number): Json {
  const metadata: Record<string, string> =
    backend === 'storage-queue'
      ? {
          accountName: values.storageAccount,
          queueName: q.name,
          queueLength: String(perReplica),
          activationQueueLength: '0',
          queueLengthStrategy: 'all',
        }
      : { namespace: values.serviceBusNamespace ?? '', queueName: q.name, messageCount: String(perReplica), activationMessageCount: '0' };
  return { type: backend === 'storage-queue' ? 'azure-queue' : 'azure-servicebus', metadata, authenticationRef: { name: TRIGGER_AUTH } };
}

/**
 * The coordinator Deployment. Unsharded: one replica, `Recreate`, `--wait-for-lease`. Sharded
 * (docs/sharding.md): `replicas` members, each named by its pod (`JOBQ_COORDINATOR_ID` from the
 * downward API), the shard count in `JOBQ_WORKFLOW_SHARDS`; a rolling update starts the new pod
 * (a member that joins and is handed shards) before the old one releases its shards on SIGTERM.
 */
function coordinatorDeployment(values: Values, metadata: Json): Json {
  const { shards, replicas } = values.coordinator;
  const sharded = shards > 1;
  const ports = ['--health-port', String(values.healthPort), '--metrics-port', String(values.metricsPort)];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: sharded
      ? {
          replicas,
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
          selector: { matchLabels: labels('coordinator') },
          template: podTemplate(
            values,
            'coordinator',
            {},
            {
              name: 'coordinator',
              image: image(values, 'coordinator'),
              args: ['workflow', 'coordinator', ...ports],
              env: [
                { name: 'JOBQ_WORKFLOW_SHARDS', value: String(shards) },
                { name: 'JOBQ_COORDINATOR_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              ],
              resources: values.coordinator.resources,
            },
            true,
            COORDINATOR_TERMINATION_SECONDS,
          ),
        }
      : {
          // One coordinator per prefix; Recreate stops the old pod (releasing the lease) before the new
          // one starts, which waits for the lease meanwhile (--wait-for-lease) instead of crash-looping.
          replicas: 1,
          strategy: { type: 'Recreate' },
          selector: { matchLabels: labels('coordinator') },
          template: podTemplate(
            values,
            'coordinator',
            {},
            {
              name: 'coordinator',
              image: image(values, 'coordinator'),
              args: ['workflow', 'coordinator', '--wait-for-lease', ...ports],
              resources: values.coordinator.resources,
            },
            true,
            COORDINATOR_TERMINATION_SECONDS,
          ),
        },
  };
}

/** The documents of one backend, in apply order. */
export function renderBackend(values: Values, backend: Backend): Json[] {
  const ns = values.namespace;
  const meta = (name: string, component: string, extra: Json = {}) => ({ name, namespace: ns, labels: labels(component), ...extra });
  const docs: Json[] = [];
  docs.push({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { ...meta(SERVICE_ACCOUNT, 'identity'), annotations: { 'azure.workload.identity/client-id': values.identity.clientId } },
  });
  docs.push({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(CONFIG_MAP, 'config'),
    data: {
      JOBQ_WORKFLOW_PREFIX: `${values.storageAccount}/${values.prefix}`,
      JOBQ_WORKFLOW_QUEUES: backend === 'storage-queue' ? values.storageAccount : `sb://${values.serviceBusNamespace ?? ''}`,
      JOBQ_METRICS_HOST: '0.0.0.0',
    },
  });
  docs.push({
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'TriggerAuthentication',
    metadata: meta(TRIGGER_AUTH, 'autoscaling'),
    spec: { podIdentity: { provider: 'azure-workload', identityId: values.identity.clientId } },
  });
  docs.push(coordinatorDeployment(values, meta('jobq-coordinator', 'coordinator')));
  for (const q of values.queues) {
    const queueLabel = { 'jobq.io/queue': q.name };
    docs.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(workerName(q), 'worker'),
      spec: {
        // No replicas: KEDA owns the count (0 while the queue is empty), and a re-apply leaves it alone.
        selector: { matchLabels: labels('worker', queueLabel) },
        template: podTemplate(
          values,
          'worker',
          queueLabel,
          { name: 'worker', image: image(values, 'worker'), args: workerArgs(values, q), resources: q.resources },
          true,
          workerTerminationSeconds(values),
        ),
      },
    });
    docs.push({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: meta(workerName(q), 'autoscaling'),
      spec: {
        scaleTargetRef: { name: workerName(q) },
        minReplicaCount: 0,
        maxReplicaCount: q.maxReplicas,
        cooldownPeriod: COOLDOWN_SECONDS,
        pollingInterval: 15,
        triggers: [trigger(values, backend, q, q.numWorkers)],
      },
    });
  }
  if (values.longTasks !== null) {
    const q = values.longTasks;
    // One Job per waiting task: the worker runs what it receives and exits once the queue has been
    // empty for a minute, so a long task never holds a Deployment replica KEDA wants to remove.
    const template = podTemplate(
      values,
      'long-tasks',
      { 'jobq.io/queue': q.name },
      { name: 'worker', image: image(values, 'worker'), args: workerArgs(values, q, ['--idle-timeout', '60s']), resources: q.resources },
      false,
      workerTerminationSeconds(values),
      'Never',
    );
    docs.push({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledJob',
      metadata: meta(`jobq-long-${q.name}`, 'long-tasks'),
      spec: {
        jobTargetRef: { parallelism: 1, completions: 1, backoffLimit: 0, template },
        pollingInterval: 30,
        maxReplicaCount: q.maxReplicas,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 3,
        triggers: [trigger(values, backend, q, q.numWorkers)],
      },
    });
  }
  return docs;
}

const HEADER = (source: string) =>
  `# Generated by deploy/k8s/generate.ts from ${source}: do not edit; change the values and run it again.\n`;

function documents(docs: readonly Json[]): string {
  return docs.map((doc) => stringify(doc, { lineWidth: 0 })).join('---\n');
}

/** The files for these values: `storage-queue.yaml` and/or `service-bus.yaml`, and `kustomization.yaml`. */
export function renderFiles(values: Values, source: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const backend of values.backends) files[`${backend}.yaml`] = HEADER(source) + documents(renderBackend(values, backend));
  const first = values.backends[0]!;
  const others = values.backends.slice(1).map((b) => `${b}.yaml`);
  files['kustomization.yaml'] =
    HEADER(source) +
    `# The deployment with its task queues on ${first}${others.length > 0 ? `; for the other backend list ${others.join(', ')} instead (never both)` : ''}.\n` +
    stringify(
      { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', namespace: values.namespace, resources: [`${first}.yaml`] },
      { lineWidth: 0 },
    );
  return files;
}

function main(argv: string[]): number {
  const args = [...argv];
  let out: string | null = null;
  const outAt = args.indexOf('--out');
  if (outAt >= 0) {
    out = args[outAt + 1] ?? null;
    if (out === null) {
      process.stderr.write('generate: --out needs a directory\n');
      return 2;
    }
    args.splice(outAt, 2);
  }
  if (args.length !== 1) {
    process.stderr.write('usage: generate VALUES.yaml [--out DIR]   (DIR defaults to the folder of VALUES.yaml)\n');
    return 2;
  }
  const valuesPath = resolve(args[0]!);
  let files: Record<string, string>;
  try {
    files = renderFiles(loadValues(valuesPath), basename(valuesPath));
  } catch (error) {
    process.stderr.write(`generate: ${(error as Error).message}\n`);
    return 1;
  }
  const dir = out === null ? dirname(valuesPath) : resolve(out);
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), content);
    process.stdout.write(`${join(dir, name)}\n`);
  }
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
