import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { namespaceHost } from '@jobq/queue-servicebus';
import { maskSecret, resolveConfig } from './config';
import { UsageError } from './errors';
import { plainQueueLocation } from './plain-queue';
import { queueLocation, type QueueLocation } from './queues';
import { serviceBusAccess, serviceBusAccessLine, serviceBusHost, serviceBusNamespaceProblem } from './servicebus-access';

const SB_KEY = 'c2VydmljZWJ1cy1rZXktdGhhdC1tdXN0LW5vdC1sZWFr';
const SB_STRING = `Endpoint=sb://my-namespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${SB_KEY}`;
const LOCAL_STRING =
  'Endpoint=sb://127.0.0.1:10003;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true';

let empty: string;
beforeAll(async () => {
  empty = await mkdtemp(join(tmpdir(), 'jobq-queues-'));
});
afterAll(() => rm(empty, { recursive: true, force: true }));

function config(env: NodeJS.ProcessEnv, inputs: { prefix?: string; queues?: string } = {}) {
  return resolveConfig(inputs, env, empty);
}

/** A location without the connection string, for comparing. */
function where(location: QueueLocation): string {
  return location.backend === 'storage'
    ? `storage ${location.account}/${location.queueName}`
    : `servicebus ${location.access.key} ${location.queueName}`;
}

describe('the Service Bus settings', () => {
  it('reads JOBQ_SERVICEBUS_CONNECTION_STRING (secret) and the admin endpoint from the environment or the config file', async () => {
    const fromEnv = config({ JOBQ_SERVICEBUS_CONNECTION_STRING: SB_STRING, JOBQ_SERVICEBUS_ADMIN_ENDPOINT: 'http://127.0.0.1:10004' });
    expect(fromEnv.serviceBusConnectionString).toMatchObject({
      value: SB_STRING,
      source: 'env',
      from: 'JOBQ_SERVICEBUS_CONNECTION_STRING',
      secret: true,
    });
    expect(fromEnv.serviceBusAdminEndpoint).toMatchObject({ value: 'http://127.0.0.1:10004', source: 'env' });
    expect(maskSecret(SB_STRING)).not.toContain(SB_KEY);
    const file = join(empty, 'sb.yaml');
    await writeFile(file, `connection:\n  queues: sb://my-namespace\n  servicebus_connection_string: "${SB_STRING}"\n`);
    const fromFile = resolveConfig({ configPath: file }, {}, empty);
    expect(fromFile.serviceBusConnectionString).toMatchObject({
      value: SB_STRING,
      source: 'file',
      from: 'connection.servicebus_connection_string',
    });
    expect(fromFile.queues).toMatchObject({ value: 'sb://my-namespace', source: 'file' });
    expect(() => config({ JOBQ_SERVICEBUS_ADMIN_ENDPOINT: 'ftp://x' })).toThrow(/JOBQ_SERVICEBUS_ADMIN_ENDPOINT/);
  });

  it('takes sb://local, a namespace NAME or a host for --queues; anything else is a usage error naming its origin', () => {
    for (const ok of ['sb://local', 'sb://my-namespace', 'sb://my-namespace.servicebus.windows.net', 'sb://Local']) {
      expect(config({}, { queues: ok }).queues.value).toBe(ok);
    }
    for (const bad of ['sb://ab', 'sb://my-namespace/q', 'sb://-bad', 'sb://', 'sb://1abcdef']) {
      expect(() => config({}, { queues: bad })).toThrow(UsageError);
    }
    expect(() => config({ JOBQ_WORKFLOW_QUEUES: 'sb://ab' })).toThrow(/^JOBQ_WORKFLOW_QUEUES: "sb:\/\/ab" is not sb:\/\/NAMESPACE/);
  });

  it('names hosts as the adapter does', () => {
    for (const ns of ['my-namespace', 'My-Namespace', 'my-namespace.servicebus.windows.net', 'sb.example.org']) {
      expect(serviceBusNamespaceProblem(ns)).toBeNull();
      expect(serviceBusHost(ns)).toBe(namespaceHost(ns));
    }
  });
});

describe('serviceBusAccess', () => {
  it('uses the connection string when its Endpoint is the namespace (NAME or host, any case), else DefaultAzureCredential', () => {
    const c = config({ JOBQ_SERVICEBUS_CONNECTION_STRING: SB_STRING });
    for (const ns of ['my-namespace', 'MY-NAMESPACE', 'my-namespace.servicebus.windows.net']) {
      expect(serviceBusAccess(c, ns)).toMatchObject({
        connection: { connectionString: SB_STRING },
        key: 'cs:my-namespace.servicebus.windows.net',
        adminEndpoint: null,
      });
    }
    const other = serviceBusAccess(c, 'other-namespace');
    expect(other).toMatchObject({
      connection: { namespace: 'other-namespace.servicebus.windows.net' },
      key: 'ns:other-namespace.servicebus.windows.net',
    });
    expect(other.description).toContain('is for my-namespace.servicebus.windows.net: not used');
    expect(serviceBusAccess(config({}), 'other-namespace').connection).toEqual({ namespace: 'other-namespace.servicebus.windows.net' });
    for (const line of [serviceBusAccessLine(c, 'my-namespace'), serviceBusAccessLine(c, 'other-namespace')])
      expect(line).not.toContain(SB_KEY);
  });

  it('sb://local takes any connection string (with the admin endpoint only for a local broker) and is a usage error without one', () => {
    const local = serviceBusAccess(
      config({ JOBQ_SERVICEBUS_CONNECTION_STRING: LOCAL_STRING, JOBQ_SERVICEBUS_ADMIN_ENDPOINT: 'http://127.0.0.1:10004' }),
      'local',
    );
    expect(local).toMatchObject({
      connection: { connectionString: LOCAL_STRING },
      adminEndpoint: 'http://127.0.0.1:10004',
      key: 'cs:127.0.0.1:10003',
    });
    const remote = serviceBusAccess(
      config({ JOBQ_SERVICEBUS_CONNECTION_STRING: SB_STRING, JOBQ_SERVICEBUS_ADMIN_ENDPOINT: 'http://127.0.0.1:10004' }),
      'local',
    );
    expect(remote).toMatchObject({ connection: { connectionString: SB_STRING }, adminEndpoint: null });
    expect(() => serviceBusAccess(config({}), 'local')).toThrow(UsageError);
    expect(() => serviceBusAccess(config({}), 'local')).toThrow(/JOBQ_SERVICEBUS_CONNECTION_STRING/);
    expect(() => serviceBusAccess(config({ JOBQ_SERVICEBUS_CONNECTION_STRING: 'SharedAccessKey=x' }), 'local')).toThrow(/no Endpoint/);
  });
});

describe('queueLocation', () => {
  it('puts bare names on --queues sb://NS, sb:// specs on their namespace, ACCOUNT/NAME on storage', () => {
    const c = config({ JOBQ_SERVICEBUS_CONNECTION_STRING: SB_STRING }, { prefix: 'myacct/Prod', queues: 'sb://my-namespace' });
    const at = (spec: string) => where(queueLocation(c, spec, { defaultAccount: 'myacct' }));
    expect(at('gpu')).toBe('servicebus cs:my-namespace.servicebus.windows.net gpu');
    expect(at('sb://my-namespace/gpu')).toBe('servicebus cs:my-namespace.servicebus.windows.net gpu');
    expect(at('sb://other-namespace/cpu')).toBe('servicebus ns:other-namespace.servicebus.windows.net cpu');
    expect(at('otheracct/cpu')).toBe('storage otheracct/cpu');
    const storage = config({}, { prefix: 'myacct/Prod', queues: 'queueacct' });
    expect(where(queueLocation(storage, 'gpu', { defaultAccount: 'myacct' }))).toBe('storage queueacct/gpu');
    expect(where(queueLocation(config({}), 'gpu', { defaultAccount: 'myacct' }))).toBe('storage myacct/gpu');
  });

  it('pools Service Bus names case-insensitively, storage names as written', () => {
    const c = config({ JOBQ_SERVICEBUS_CONNECTION_STRING: SB_STRING }, { queues: 'sb://my-namespace' });
    const key = (spec: string) => queueLocation(c, spec, { defaultAccount: 'myacct' }).key;
    expect(key('sb://MY-NAMESPACE/Gpu-A100')).toBe(key('sb://my-namespace.servicebus.windows.net/gpu-a100'));
    expect(key('gpu-a100')).toBe(key('sb://my-namespace/GPU-A100'));
    expect(key('myacct/gpu-a100')).not.toBe(key('gpu-a100'));
  });

  it('maps every account and namespace onto the embedded stack', () => {
    const c = config({ JOBQ_SERVICEBUS_CONNECTION_STRING: LOCAL_STRING }, { prefix: 'devstoreaccount1/Local' });
    const at = (spec: string) => where(queueLocation(c, spec, { defaultAccount: 'devstoreaccount1', mapAllTo: 'devstoreaccount1' }));
    expect(at('otheracct/gpu')).toBe('storage devstoreaccount1/gpu');
    expect(at('sb://prod-namespace/gpu')).toBe('servicebus cs:127.0.0.1:10003 gpu');
    expect(at('gpu')).toBe('storage devstoreaccount1/gpu');
  });

  it('refuses a malformed spec and an unconfigured sb://local as usage errors', () => {
    const c = config({});
    expect(() => plainQueueLocation(c, 'sb://ns')).toThrow(UsageError);
    expect(() => plainQueueLocation(c, 'sb://my-namespace/bad$name')).toThrow(UsageError);
    expect(() => plainQueueLocation(c, 'sb://local/gpu')).toThrow(/sb:\/\/local/);
    expect(() => plainQueueLocation(config({}, { queues: 'sb://local' }), 'gpu')).toThrow(UsageError);
    expect(() => plainQueueLocation(c, 'sb://ab/gpu')).toThrow(/not a Service Bus namespace name/);
  });
});
