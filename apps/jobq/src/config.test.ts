import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { maskSecret, resolveConfig } from './config';
import { configFromFlags } from './flags';
import { coordinatorOptions } from './services';
import { UsageError } from './errors';

let dir: string;
let empty: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jobq-config-'));
  empty = await mkdtemp(join(tmpdir(), 'jobq-config-empty-'));
  file = join(dir, 'jobq.yaml');
  await writeFile(
    file,
    'connection:\n  prefix: fileacct/FromFile\n  queues: filequeues\ncoordinator:\n  batch_size: 8\n  idle_sleep_s: 2\n',
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(empty, { recursive: true, force: true });
});

describe('resolveConfig precedence (flag → env → file → default)', () => {
  it('takes the flag over the environment over the file over the default', () => {
    const env = { JOBQ_WORKFLOW_PREFIX: 'envacct/FromEnv', JOBQ_COMPLETION_BATCH_SIZE: '16' };
    const flagged = resolveConfig({ configPath: file, prefix: 'flagacct/FromFlag', coordinator: { batchSize: 4 } }, env, dir);
    expect(flagged.prefix).toMatchObject({ value: { account: 'flagacct', prefix: 'FromFlag' }, source: 'flag', from: '--prefix' });
    expect(flagged.coordinator.batchSize).toMatchObject({ value: 4, source: 'flag' });

    const fromEnv = resolveConfig({ configPath: file }, env, dir);
    expect(fromEnv.prefix).toMatchObject({ value: { account: 'envacct', prefix: 'FromEnv' }, source: 'env', from: 'JOBQ_WORKFLOW_PREFIX' });
    expect(fromEnv.coordinator.batchSize).toMatchObject({ value: 16, source: 'env', from: 'JOBQ_COMPLETION_BATCH_SIZE' });

    const fromFile = resolveConfig({ configPath: file }, {}, dir);
    expect(fromFile.file).toBe(file);
    expect(fromFile.prefix).toMatchObject({
      value: { account: 'fileacct', prefix: 'FromFile' },
      source: 'file',
      from: 'connection.prefix',
    });
    expect(fromFile.queues).toMatchObject({ value: 'filequeues', source: 'file' });
    expect(fromFile.coordinator.batchSize).toMatchObject({ value: 8, source: 'file', from: 'coordinator.batch_size' });
    expect(fromFile.coordinator.idleSleepS).toMatchObject({ value: 2, source: 'file' });

    const defaults = resolveConfig({}, {}, empty);
    expect(defaults.file).toBeNull();
    expect(defaults.prefix).toEqual({ value: null, source: 'default', from: null });
    expect(defaults.coordinator.batchSize).toEqual({ value: 32, source: 'default', from: null });
    expect(defaults.coordinator.readyRepairThresholdS.value).toBe(300);
  });

  it('finds ./jobq.yaml in the working directory and JOBQ_WORKFLOW_CONFIG', () => {
    expect(resolveConfig({}, {}, dir).prefix.source).toBe('file');
    expect(resolveConfig({}, { JOBQ_WORKFLOW_CONFIG: file }, empty).file).toBe(file);
  });

  it('counts an empty environment variable as unset', () => {
    const config = resolveConfig(
      { configPath: file },
      { JOBQ_WORKFLOW_PREFIX: '', JOBQ_COMPLETION_BATCH_SIZE: '  ', JOBQ_WORKFLOW_CONFIG: '' },
      dir,
    );
    expect(config.prefix.source).toBe('file');
    expect(config.coordinator.batchSize.source).toBe('file');
    expect(resolveConfig({}, { JOBQ_WORKFLOW_PREFIX: '' }, empty).prefix.value).toBeNull();
  });

  it('refuses an unknown key, an unknown section and a missing explicit file as usage errors', async () => {
    const unknownKey = join(dir, 'unknown-key.yaml');
    await writeFile(unknownKey, 'connection:\n  prefx: a/B\n');
    expect(() => resolveConfig({ configPath: unknownKey }, {}, dir)).toThrow(UsageError);
    expect(() => resolveConfig({ configPath: unknownKey }, {}, dir)).toThrow(/unknown key "connection.prefx"/);
    const unknownSection = join(dir, 'unknown-section.yaml');
    await writeFile(unknownSection, 'workers:\n  n: 1\n');
    expect(() => resolveConfig({ configPath: unknownSection }, {}, dir)).toThrow(/unknown section "workers"/);
    expect(() => resolveConfig({ configPath: join(dir, 'missing.yaml') }, {}, dir)).toThrow(UsageError);
    expect(() => resolveConfig({}, { JOBQ_WORKFLOW_CONFIG: join(dir, 'missing.yaml') }, dir)).toThrow(/JOBQ_WORKFLOW_CONFIG/);
  });

  it('refuses malformed values and legacy variables as usage errors naming their origin', () => {
    expect(() => resolveConfig({}, { JOBQ_WORKFLOW_PREFIX: 'no-slash' }, empty)).toThrow(UsageError);
    expect(() => resolveConfig({}, { JOBQ_COMPLETION_BATCH_SIZE: 'many' }, empty)).toThrow(/JOBQ_COMPLETION_BATCH_SIZE/);
    expect(() => resolveConfig({ coordinator: { batchSize: 64 } }, {}, empty)).toThrow(/--batch-size/);
    expect(() => resolveConfig({}, { JOBQ_WORKFLOW_STATE: 'x' }, empty)).toThrow(/JOBQ_WORKFLOW_STATE/);
  });

  it('takes --pipeline-depth (1–16, default 8) into the coordinator options', () => {
    expect(coordinatorOptions(resolveConfig({}, {}, empty)).pipelineDepth).toBe(8);
    expect(coordinatorOptions(resolveConfig({}, { JOBQ_COORDINATOR_PIPELINE_DEPTH: '1' }, empty)).pipelineDepth).toBe(1);
    expect(coordinatorOptions(configFromFlags({ 'pipeline-depth': 16 }, {}, empty)).pipelineDepth).toBe(16);
    expect(() => resolveConfig({}, { JOBQ_COORDINATOR_PIPELINE_DEPTH: '17' }, empty)).toThrow(/JOBQ_COORDINATOR_PIPELINE_DEPTH/);
    expect(() => resolveConfig({}, { JOBQ_COORDINATOR_PIPELINE_DEPTH: '2.5' }, empty)).toThrow(/JOBQ_COORDINATOR_PIPELINE_DEPTH/);
  });

  it('takes --retention as a duration (30d, 12h, or seconds) from the flag, the environment or the file; off by default', async () => {
    expect(resolveConfig({}, {}, empty).coordinator.retentionS).toEqual({ value: 0, source: 'default', from: null });
    expect(coordinatorOptions(resolveConfig({}, {}, empty)).retentionInMs).toBe(0);
    const fromEnv = resolveConfig({}, { JOBQ_COORDINATOR_RETENTION: '30d' }, empty);
    expect(fromEnv.coordinator.retentionS).toMatchObject({ value: 30 * 86_400, source: 'env', from: 'JOBQ_COORDINATOR_RETENTION' });
    expect(coordinatorOptions(fromEnv).retentionInMs).toBe(30 * 86_400_000);
    const retentionFile = join(dir, 'retention.yaml');
    await writeFile(retentionFile, 'coordinator:\n  retention: 12h\n');
    expect(resolveConfig({ configPath: retentionFile }, {}, dir).coordinator.retentionS).toMatchObject({ value: 43_200, source: 'file' });
    await writeFile(retentionFile, 'coordinator:\n  retention: 600\n');
    expect(resolveConfig({ configPath: retentionFile }, {}, dir).coordinator.retentionS.value).toBe(600);
    expect(configFromFlags({ retention: 7 * 86_400 }, {}, empty).coordinator.retentionS).toMatchObject({ value: 604_800, source: 'flag' });
    expect(() => resolveConfig({}, { JOBQ_COORDINATOR_RETENTION: 'a month' }, empty)).toThrow(
      /JOBQ_COORDINATOR_RETENTION must be a duration/,
    );
    await writeFile(retentionFile, 'coordinator:\n  retention: forever\n');
    expect(() => resolveConfig({ configPath: retentionFile }, {}, dir)).toThrow(/coordinator.retention must be a duration/);
  });

  it('takes --shards (1, 2, 4, 8 or 16) and --balance-interval (a duration) from the flag, the environment or the file', async () => {
    expect(resolveConfig({}, {}, empty).coordinator.shards).toEqual({ value: 1, source: 'default', from: null });
    expect(resolveConfig({}, {}, empty).coordinator.balanceIntervalS).toEqual({ value: 10, source: 'default', from: null });
    for (const shards of [0, 3, 32]) {
      expect(() => configFromFlags({ shards }, {}, empty)).toThrow(`--shards: ${shards} is not allowed (one of 1, 2, 4, 8, 16)`);
    }
    expect(() => resolveConfig({}, { JOBQ_WORKFLOW_SHARDS: '5' }, empty)).toThrow(/JOBQ_WORKFLOW_SHARDS: 5 is not allowed/);
    expect(resolveConfig({}, { JOBQ_WORKFLOW_SHARDS: '8' }, empty).coordinator.shards).toMatchObject({ value: 8, source: 'env' });
    const file = join(dir, 'shards.yaml');
    await writeFile(file, 'coordinator:\n  shards: 4\n  balance_interval: 2s\n');
    const fromFile = resolveConfig({ configPath: file }, {}, dir);
    expect(fromFile.coordinator.shards).toMatchObject({ value: 4, source: 'file', from: 'coordinator.shards' });
    expect(fromFile.coordinator.balanceIntervalS).toMatchObject({ value: 2, source: 'file', from: 'coordinator.balance_interval' });
    expect(() => resolveConfig({}, { JOBQ_COORDINATOR_BALANCE_INTERVAL: '500ms' }, empty)).toThrow(/JOBQ_COORDINATOR_BALANCE_INTERVAL/);
  });

  it('marks the connection string secret and masks keys for display', () => {
    const config = resolveConfig({}, { JOBQ_STORAGE_CONNECTION_STRING: 'AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=x' }, empty);
    expect(config.connectionString).toMatchObject({ source: 'env', secret: true });
    expect(maskSecret(config.connectionString.value ?? '')).toBe('AccountName=a;AccountKey=***;EndpointSuffix=x');
  });
});
