import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, runCli } from '../../test-helpers/cli';

const KEY = 'c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWs=';

interface Shown {
  value: string | number | null;
  source: string;
  from: string | null;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-config-show-'));
  await writeFile(
    join(dir, 'jobq.yaml'),
    'connection:\n  prefix: fileacct/FromFile\n  blobs: fileacct/outputs\ncoordinator:\n  batch_size: 8\n  flush_retry_limit: 5\n',
  );
  await writeFile(join(dir, 'bad.yaml'), 'coordinator:\n  batchsize: 8\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('jobq config show', () => {
  it('prints every value with its source (flag > env > file > default) and masks secrets', async () => {
    const env = cleanEnv({
      JOBQ_WORKFLOW_PREFIX: 'envacct/FromEnv',
      JOBQ_WORKFLOW_QUEUES: '',
      JOBQ_COMPLETION_BATCH_SIZE: '16',
      JOBQ_STORAGE_CONNECTION_STRING: `DefaultEndpointsProtocol=https;AccountName=envacct;AccountKey=${KEY};EndpointSuffix=core.windows.net`,
    });
    const result = await runCli(['config', 'show', '--json', '--batch-size', '4'], { env, cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain(KEY);
    expect(result.stderr).not.toContain(KEY);
    const doc = JSON.parse(result.stdout) as { file: string; settings: Record<string, Shown> };
    expect(doc.file).toBe(join(dir, 'jobq.yaml'));
    expect(doc.settings.prefix).toEqual({ value: 'envacct/FromEnv', source: 'env', from: 'JOBQ_WORKFLOW_PREFIX' });
    expect(doc.settings.queues).toEqual({ value: null, source: 'default', from: null });
    expect(doc.settings.blobs).toEqual({ value: 'fileacct/outputs', source: 'file', from: 'connection.blobs' });
    expect(doc.settings.batch_size).toEqual({ value: 4, source: 'flag', from: '--batch-size' });
    expect(doc.settings.flush_retry_limit).toEqual({ value: 5, source: 'file', from: 'coordinator.flush_retry_limit' });
    expect(doc.settings.idle_sleep_s).toEqual({ value: 0.5, source: 'default', from: null });
    expect(doc.settings.connection_string).toMatchObject({ source: 'env', from: 'JOBQ_STORAGE_CONNECTION_STRING' });
    expect(doc.settings.connection_string?.value).toContain('AccountKey=***');

    const flagged = await runCli(['config', 'show', '--json', '--prefix', 'flagacct/FromFlag'], { env, cwd: dir });
    expect((JSON.parse(flagged.stdout) as { settings: Record<string, Shown> }).settings.prefix).toMatchObject({
      value: 'flagacct/FromFlag',
      source: 'flag',
    });
  });

  it('says what really reaches each account: a SAS connection string (no AccountName), or DefaultAzureCredential and why', async () => {
    const sig = 'c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw%3D%3D';
    const sasString =
      'BlobEndpoint=https://envacct.blob.core.windows.net;QueueEndpoint=https://envacct.queue.core.windows.net;' +
      `TableEndpoint=https://envacct.table.core.windows.net;SharedAccessSignature=sv=2024-08-04&ss=bqt&srt=sco&sp=rl&se=2030-01-01&sig=${sig}`;
    const env = cleanEnv({
      JOBQ_WORKFLOW_PREFIX: 'envacct/FromEnv',
      JOBQ_WORKFLOW_QUEUES: 'otheracct',
      JOBQ_STORAGE_CONNECTION_STRING: sasString,
    });
    const json = await runCli(['config', 'show', '--json'], { env, cwd: dir });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { storage_access: unknown[] };
    expect(doc.storage_access).toEqual([
      { account: 'envacct', uses: 'connection string', from: 'JOBQ_STORAGE_CONNECTION_STRING', credential: 'SAS', note: null },
      {
        account: 'otheracct',
        uses: 'DefaultAzureCredential',
        from: null,
        credential: 'DefaultAzureCredential',
        note: 'the connection string from JOBQ_STORAGE_CONNECTION_STRING is for account envacct: not used for otheracct',
      },
      // The blobs account of ./jobq.yaml.
      expect.objectContaining({ account: 'fileacct', uses: 'DefaultAzureCredential' }),
    ]);
    const text = await runCli(['config', 'show'], { env, cwd: dir });
    expect(text.stdout).toContain(
      'Storage access:\n  envacct: connection string from JOBQ_STORAGE_CONNECTION_STRING (SAS)\n  otheracct: DefaultAzureCredential (',
    );
    // Not a terminal: the masked connection string stays on one line, however long.
    expect(text.stdout).toMatch(
      /connection string\s+BlobEndpoint=\S+SharedAccessSignature=\*\*\*&ss=bqt&srt=sco&sp=rl&se=2030-01-01&sig=\*\*\*\s+env/,
    );
    for (const out of [json.stdout, text.stdout, json.stderr, text.stderr]) expect(out).not.toContain(sig);
  });

  it('masks the Service Bus connection string and says which namespace it reaches', async () => {
    const sbKey = 'c2VydmljZWJ1cy1rZXktdGhhdC1tdXN0LW5vdC1sZWFr';
    const env = cleanEnv({
      JOBQ_WORKFLOW_QUEUES: 'sb://my-namespace',
      JOBQ_SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://my-namespace.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${sbKey}`,
    });
    const json = await runCli(['config', 'show', '--json'], { env, cwd: dir });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { settings: Record<string, Shown>; servicebus_access: string[] };
    expect(doc.settings.servicebus_connection_string).toMatchObject({ source: 'env', from: 'JOBQ_SERVICEBUS_CONNECTION_STRING' });
    expect(doc.settings.servicebus_connection_string?.value).toContain('SharedAccessKey=***');
    expect(doc.servicebus_access).toEqual([
      'sb://my-namespace: connection string from JOBQ_SERVICEBUS_CONNECTION_STRING (my-namespace.servicebus.windows.net)',
    ]);
    const other = await runCli(['config', 'show', '--queues', 'sb://other-namespace'], { env, cwd: dir });
    expect(other.stdout).toContain(
      'Service Bus access:\n  sb://other-namespace: DefaultAzureCredential on other-namespace.servicebus.windows.net (the connection string',
    );
    for (const out of [json.stdout, json.stderr, other.stdout, other.stderr]) expect(out).not.toContain(sbKey);
  });

  it('prints a table with sources without --json', async () => {
    const result = await runCli(['config', 'show'], { env: cleanEnv(), cwd: dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/prefix\s+fileacct\/FromFile\s+file \(connection\.prefix\)/);
    expect(result.stdout).toMatch(/batch-size\s+8\s+file/);
    expect(result.stdout).toMatch(/idle-sleep\s+0\.5\s+default/);
  });

  it('takes durations for the coordinator time settings; the old -s spellings are deprecated aliases in seconds', async () => {
    const settingsOf = (stdout: string) => (JSON.parse(stdout) as { settings: Record<string, Shown> }).settings;
    const current = await runCli(['config', 'show', '--json', '--visibility-timeout', '2m', '--idle-sleep', '250ms'], {
      env: cleanEnv(),
      cwd: dir,
    });
    expect(current.code).toBe(0);
    expect(current.stderr).toBe('');
    expect(settingsOf(current.stdout).visibility_timeout_s).toEqual({ value: 120, source: 'flag', from: '--visibility-timeout' });
    expect(settingsOf(current.stdout).idle_sleep_s).toEqual({ value: 0.25, source: 'flag', from: '--idle-sleep' });

    const old = await runCli(['config', 'show', '--json', '--visibility-timeout-s', '90', '--task-message-ttl-s', '3600'], {
      env: cleanEnv(),
      cwd: dir,
    });
    expect(old.code).toBe(0);
    expect(old.stderr.split('\n').filter((l) => l !== '')).toEqual([
      'jobq: warning: --visibility-timeout-s (seconds) is deprecated and goes in the next minor version: use --visibility-timeout 90s',
      'jobq: warning: --task-message-ttl-s (seconds) is deprecated and goes in the next minor version: use --task-message-ttl 3600s',
    ]);
    expect(settingsOf(old.stdout).visibility_timeout_s).toEqual({ value: 90, source: 'flag', from: '--visibility-timeout' });
    expect(settingsOf(old.stdout).task_message_ttl_s).toEqual({ value: 3600, source: 'flag', from: '--task-message-ttl' });

    const both = await runCli(['config', 'show', '--visibility-timeout-s', '90', '--visibility-timeout', '1m'], {
      env: cleanEnv(),
      cwd: dir,
    });
    expect(both.code).toBe(2);
    expect(both.stderr.trim().split('\n')).toHaveLength(1);
    expect(both.stderr).toContain('--visibility-timeout');
    const bad = await runCli(['config', 'show', '--visibility-timeout', 'soon'], { env: cleanEnv(), cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toMatch(/^jobq: .*--visibility-timeout must be a duration .*got "soon"/);
  });

  it('exits 2 with one line for an unknown config key or a missing --config', async () => {
    const unknown = await runCli(['config', 'show', '--config', join(dir, 'bad.yaml')], { env: cleanEnv(), cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain('coordinator.batchsize');
    const missing = await runCli(['config', 'show', '--config', join(dir, 'nope.yaml')], { env: cleanEnv(), cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect(missing.stdout).toBe('');
  });
});
