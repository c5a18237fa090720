import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { ScaledJob, ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { TERMINATION_MARGIN_SECONDS, loadValues, parseValues, renderFiles, type Values } from './generate';

const HERE = __dirname;
const ROOT = join(HERE, '..', '..');
const VALUES_FILE = join(HERE, 'values.example.yaml');
const rawValues = (): Record<string, unknown> => parse(readFileSync(VALUES_FILE, 'utf8')) as Record<string, unknown>;
const values: Values = parseValues(rawValues());
const CLI_VERSION = (JSON.parse(readFileSync(join(ROOT, 'apps', 'jobq', 'package.json'), 'utf8')) as { version: string }).version;

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function docsOf(file: string): Doc[] {
  return parseAllDocuments(readFileSync(join(HERE, file), 'utf8')).map((d) => d.toJS() as Doc);
}

const BACKEND_FILES = ['storage-queue.yaml', 'service-bus.yaml'] as const;
const byKind = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);
const containersOf = (doc: Doc): Doc[] =>
  (doc.kind === 'ScaledJob' ? doc.spec.jobTargetRef.template.spec.containers : doc.spec.template.spec.containers) as Doc[];
const podSpecOf = (doc: Doc): Doc => (doc.kind === 'ScaledJob' ? doc.spec.jobTargetRef.template.spec : doc.spec.template.spec) as Doc;
const flagValue = (args: string[], flag: string): string | undefined => {
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args[at + 1];
};

describe('the committed manifests', () => {
  it('are what the generator renders from values.example.yaml', () => {
    const files = renderFiles(values, 'values.example.yaml');
    expect(Object.keys(files).sort()).toEqual(['kustomization.yaml', 'service-bus.yaml', 'storage-queue.yaml']);
    for (const [name, content] of Object.entries(files))
      expect(`${name}:\n${readFileSync(join(HERE, name), 'utf8')}`).toBe(`${name}:\n${content}`);
  });

  it('pass the Kubernetes and KEDA schemas, document by document', () => {
    const models: Record<string, new (doc: Doc) => { validate(): void }> = {
      ServiceAccount,
      ConfigMap,
      Deployment,
      ScaledObject,
      ScaledJob,
      TriggerAuthentication,
    } as never;
    for (const file of BACKEND_FILES) {
      const docs = docsOf(file);
      expect(docs.map((d) => d.kind as string).sort()).toEqual(
        [
          'ConfigMap',
          'Deployment',
          'Deployment',
          'Deployment',
          'ScaledJob',
          'ScaledObject',
          'ScaledObject',
          'ServiceAccount',
          'TriggerAuthentication',
        ].sort(),
      );
      for (const doc of docs) {
        const Model = models[doc.kind as string];
        expect(Model).toBeDefined();
        expect(() => new Model!(doc).validate()).not.toThrow();
      }
    }
    const kustomization = parse(readFileSync(join(HERE, 'kustomization.yaml'), 'utf8')) as Doc;
    expect(kustomization).toMatchObject({ kind: 'Kustomization', namespace: values.namespace, resources: ['storage-queue.yaml'] });
  });

  it('hold no Secret and no connection string or key', () => {
    for (const file of BACKEND_FILES) {
      const text = readFileSync(join(HERE, file), 'utf8');
      expect(byKind(docsOf(file), 'Secret')).toEqual([]);
      expect(text).not.toMatch(/AccountKey|SharedAccessKey|SharedAccessSignature|CONNECTION_STRING|secretKeyRef/);
    }
  });

  it('scale each worker Deployment with a ScaledObject whose queueName is the --queue of that Deployment, and the ScaledJob likewise', () => {
    for (const file of BACKEND_FILES) {
      const docs = docsOf(file);
      const deployments = new Map(byKind(docs, 'Deployment').map((d) => [d.metadata.name as string, d]));
      const scaled = byKind(docs, 'ScaledObject');
      expect(scaled.map((s) => s.spec.triggers[0].metadata.queueName as string)).toEqual(values.queues.map((q) => q.name));
      for (const so of scaled) {
        const target = deployments.get(so.spec.scaleTargetRef.name as string);
        expect(target).toBeDefined();
        const args = containersOf(target!)[0]!.args as string[];
        expect(args[0]).toBe('worker');
        expect(flagValue(args, '--queue')).toBe(so.spec.triggers[0].metadata.queueName);
        expect(so.spec).toMatchObject({ minReplicaCount: 0, cooldownPeriod: 300 });
        expect(target!.spec.replicas).toBeUndefined();
      }
      for (const job of byKind(docs, 'ScaledJob')) {
        expect(flagValue(containersOf(job)[0]!.args as string[], '--queue')).toBe(job.spec.triggers[0].metadata.queueName);
      }
    }
  });

  it('give each trigger type only its own metadata keys, with the queue length per replica = numWorkers and activation 0', () => {
    const allowed: Record<string, string[]> = {
      'azure-queue': [
        'queueName',
        'accountName',
        'queueLength',
        'activationQueueLength',
        'queueLengthStrategy',
        'cloud',
        'endpointSuffix',
        'connectionFromEnv',
      ],
      'azure-servicebus': [
        'queueName',
        'namespace',
        'messageCount',
        'activationMessageCount',
        'topicName',
        'subscriptionName',
        'cloud',
        'endpointSuffix',
        'connectionFromEnv',
        'useRegex',
        'operation',
      ],
    };
    const expectedType: Record<string, string> = { 'storage-queue.yaml': 'azure-queue', 'service-bus.yaml': 'azure-servicebus' };
    for (const file of BACKEND_FILES) {
      for (const so of [...byKind(docsOf(file), 'ScaledObject'), ...byKind(docsOf(file), 'ScaledJob')]) {
        const [trig] = so.spec.triggers as Doc[];
        expect(trig!.type).toBe(expectedType[file]);
        const keys = Object.keys(trig!.metadata as object);
        expect(keys.filter((k) => !allowed[trig!.type as string]!.includes(k))).toEqual([]);
        expect(trig!.authenticationRef).toEqual({ name: 'azure-workload' });
        const queue = [...values.queues, values.longTasks!].find((q) => q.name === trig!.metadata.queueName)!;
        if (trig!.type === 'azure-queue') {
          expect(trig!.metadata).toEqual({
            accountName: values.storageAccount,
            queueName: queue.name,
            queueLength: String(queue.numWorkers),
            activationQueueLength: '0',
            queueLengthStrategy: 'all',
          });
        } else {
          expect(trig!.metadata).toEqual({
            namespace: values.serviceBusNamespace,
            queueName: queue.name,
            messageCount: String(queue.numWorkers),
            activationMessageCount: '0',
          });
        }
      }
      const auth = byKind(docsOf(file), 'TriggerAuthentication')[0]!;
      expect(auth.spec.podIdentity).toEqual({ provider: 'azure-workload', identityId: values.identity.clientId });
    }
  });

  it('run one coordinator (Recreate, waiting for the lease) and federate every pod with the workload identity', () => {
    for (const file of BACKEND_FILES) {
      const docs = docsOf(file);
      const coordinator = byKind(docs, 'Deployment').filter((d) => (containersOf(d)[0]!.args as string[])[1] === 'coordinator');
      expect(coordinator).toHaveLength(1);
      expect(coordinator[0]!.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
      expect(containersOf(coordinator[0]!)[0]!.args).toEqual(expect.arrayContaining(['--wait-for-lease']));
      const account = byKind(docs, 'ServiceAccount')[0]!;
      expect(account.metadata.annotations).toEqual({ 'azure.workload.identity/client-id': values.identity.clientId });
      for (const doc of [...byKind(docs, 'Deployment'), ...byKind(docs, 'ScaledJob')]) {
        const template = doc.kind === 'ScaledJob' ? doc.spec.jobTargetRef.template : doc.spec.template;
        expect(template.metadata.labels['azure.workload.identity/use']).toBe('true');
        expect(podSpecOf(doc).serviceAccountName).toBe(account.metadata.name);
      }
    }
  });

  it('probe /livez and /readyz on the health port, expose metrics with scrape annotations, and pass both ports as flags', () => {
    for (const file of BACKEND_FILES) {
      for (const doc of [...byKind(docsOf(file), 'Deployment'), ...byKind(docsOf(file), 'ScaledJob')]) {
        const container = containersOf(doc)[0]!;
        const args = container.args as string[];
        expect(flagValue(args, '--health-port')).toBe(String(values.healthPort));
        expect(flagValue(args, '--metrics-port')).toBe(String(values.metricsPort));
        expect(container.ports).toEqual([
          { name: 'health', containerPort: values.healthPort, protocol: 'TCP' },
          { name: 'metrics', containerPort: values.metricsPort, protocol: 'TCP' },
        ]);
        const template = doc.kind === 'ScaledJob' ? doc.spec.jobTargetRef.template : doc.spec.template;
        expect(template.metadata.annotations).toEqual({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(values.metricsPort),
          'prometheus.io/path': '/metrics',
        });
        if (doc.kind === 'Deployment') {
          expect(container.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'health' });
          expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
        }
      }
    }
  });

  it('give workers a termination grace of at least --shutdown-grace + --shutdown-kill-timeout + 15 s', () => {
    for (const file of BACKEND_FILES) {
      for (const doc of [...byKind(docsOf(file), 'Deployment'), ...byKind(docsOf(file), 'ScaledJob')]) {
        const args = containersOf(doc)[0]!.args as string[];
        if (args[0] !== 'worker') continue;
        const seconds = (flag: string) => Number(/^(\d+)s$/.exec(flagValue(args, flag) ?? '')?.[1] ?? NaN);
        const grace = seconds('--shutdown-grace');
        const kill = seconds('--shutdown-kill-timeout');
        expect([grace, kill]).toEqual([values.shutdownGraceSeconds, values.shutdownKillTimeoutSeconds]);
        expect(podSpecOf(doc).terminationGracePeriodSeconds).toBeGreaterThanOrEqual(grace + kill + TERMINATION_MARGIN_SECONDS);
      }
    }
  });

  it('run as non-root with a read-only root, a /tmp emptyDir and no capabilities', () => {
    for (const file of BACKEND_FILES) {
      for (const doc of [...byKind(docsOf(file), 'Deployment'), ...byKind(docsOf(file), 'ScaledJob')]) {
        const pod = podSpecOf(doc);
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
        const container = containersOf(doc)[0]!;
        expect(container.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
        expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: {} }]);
      }
    }
  });

  it('tag every image with the @jobq/cli version', () => {
    for (const file of BACKEND_FILES) {
      for (const doc of [...byKind(docsOf(file), 'Deployment'), ...byKind(docsOf(file), 'ScaledJob')]) {
        const image = containersOf(doc)[0]!.image as string;
        expect(image).toMatch(/\/jobq-(coordinator|worker):[^:]+$/);
        expect(image.split(':').pop()).toBe(CLI_VERSION);
      }
    }
  });

  it('set only environment variables that the docs describe', () => {
    const docs = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => readFileSync(join(ROOT, 'docs', f), 'utf8'))
      .join('\n');
    for (const file of BACKEND_FILES) {
      const names = new Set<string>();
      for (const map of byKind(docsOf(file), 'ConfigMap')) for (const name of Object.keys(map.data as object)) names.add(name);
      for (const doc of [...byKind(docsOf(file), 'Deployment'), ...byKind(docsOf(file), 'ScaledJob')]) {
        for (const env of (containersOf(doc)[0]!.env ?? []) as Doc[]) names.add(env.name as string);
      }
      expect(names.size).toBeGreaterThan(0);
      for (const name of names)
        expect(`${name}: ${docs.includes(`\`${name}\``) ? 'documented' : 'not in docs/'}`).toBe(`${name}: documented`);
    }
    expect(docsOf('service-bus.yaml').find((d) => d.kind === 'ConfigMap')!.data.JOBQ_WORKFLOW_QUEUES).toBe(
      `sb://${values.serviceBusNamespace}`,
    );
  });
});

describe('sharded coordinators', () => {
  const sharded = (shards: number, replicas: number): Values => {
    const v = rawValues() as Record<string, Doc>;
    v.coordinator = { ...v.coordinator, shards, replicas };
    return parseValues(v);
  };
  const coordinatorOf = (v: Values): Doc => {
    const file = renderFiles(v, 'values.yaml')['storage-queue.yaml']!;
    return parse(file.split('---\n').find((d) => d.includes('name: jobq-coordinator\n'))!) as Doc;
  };

  it('run `replicas` members named by their pods, with the shard count, rolling one pod at a time, schema-valid', () => {
    const doc = coordinatorOf(sharded(8, 3));
    expect(() => new Deployment(doc as never).validate()).not.toThrow();
    expect(doc.spec).toMatchObject({ replicas: 3, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } });
    const container = containersOf(doc)[0]!;
    expect(container.args).toEqual(['workflow', 'coordinator', '--health-port', '8080', '--metrics-port', '9464']);
    expect(container.env).toEqual([
      { name: 'JOBQ_WORKFLOW_SHARDS', value: '8' },
      { name: 'JOBQ_COORDINATOR_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    // SIGTERM releases every shard (each runner's batch finished, its stats written) before exiting.
    expect(podSpecOf(doc).terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
    const docs = readFileSync(join(ROOT, 'docs', 'sharding.md'), 'utf8');
    for (const env of container.env as Doc[]) expect(docs).toContain(`\`${env.name as string}\``);
  });

  it('leave the manifests as they are with one shard, and refuse counts that are not allowed', () => {
    expect(renderFiles(sharded(1, 1), 'values.example.yaml')).toEqual(renderFiles(values, 'values.example.yaml'));
    expect(() => sharded(3, 1)).toThrow('coordinator.shards: must be 1, 2, 4, 8 or 16, got 3');
    expect(() => sharded(2, 4)).toThrow('coordinator.replicas: must be a whole number from 1 to 2, got 4');
    expect(() => sharded(1, 2)).toThrow(/^coordinator\.replicas: more than 1 needs coordinator\.shards above 1/);
  });
});

describe('bad values', () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const refused = (edit: (v: Record<string, any>) => void): string => {
    const v = rawValues();
    edit(v);
    try {
      parseValues(v);
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('are refused with their YAML path', () => {
    expect(refused((v) => (v.queues[1].name = 'GPU_queue'))).toMatch(/^queues\[1\]\.name: queue "GPU_queue": /);
    expect(refused((v) => (v.queues[0].name = 'myaccount/default'))).toMatch(/^queues\[0\]\.name: must be a bare queue name/);
    expect(refused((v) => (v.queues[1].name = 'default'))).toBe('queues[1].name: "default" is listed twice');
    expect(refused((v) => (v.queues[0].numWorkers = 0))).toBe('queues[0].numWorkers: must be a whole number from 1 to 1024, got 0');
    expect(refused((v) => (v.longTasks.maxReplicas = 1.5))).toBe('longTasks.maxReplicas: must be a whole number from 1 to 1000, got 1.5');
    expect(refused((v) => (v.backends = ['storage-queue', 'rabbitmq']))).toBe(
      'backends[1]: must be storage-queue or service-bus, got "rabbitmq"',
    );
    expect(refused((v) => delete v.identity)).toBe(
      'identity: the workload identity is required: identity.clientId, the client id of the managed identity the pods use',
    );
    expect(refused((v) => (v.identity = { clientId: '' }))).toBe(
      'identity.clientId: must be the client id (a GUID) of the managed identity, got ""',
    );
    expect(refused((v) => (v.image.tag = 'latest'))).toMatch(/^image\.tag: must be a version/);
    expect(refused((v) => (v.queues[0].resources.requests.memory = 'lots'))).toBe(
      'queues[0].resources.requests.memory: must be a quantity such as 500m, 2 or 1Gi, got "lots"',
    );
    expect(refused((v) => (v.worker.shutdownGrace = 30))).toMatch(/^worker\.shutdownGrace: unknown key/);
    expect(refused((v) => delete v.serviceBusNamespace)).toMatch(/^serviceBusNamespace: must be a Service Bus namespace name/);
  });

  it('name the file too when read from one, as the generator prints them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'jobq-k8s-'));
    try {
      const file = join(dir, 'my-values.yaml');
      writeFileSync(file, readFileSync(VALUES_FILE, 'utf8').replace('numWorkers: 4', 'numWorkers: 0'));
      expect(() => loadValues(file)).toThrow('my-values.yaml: queues[0].numWorkers: must be a whole number from 1 to 1024, got 0');
      writeFileSync(file, 'queues: [\n');
      expect(() => loadValues(file)).toThrow(/^my-values\.yaml: not YAML: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
