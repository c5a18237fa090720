import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { useInstrumenter } from '@azure/core-tracing';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { startAzurite, type LocalStorage } from '@jobq/local';
import { trace } from '@opentelemetry/api';
import {
  AZURE_SDK_TRACING_VARIABLE,
  azureSdkTracing,
  gateSdkTracing,
  storageCorePipeline,
  tracerProviderRegistered,
  type AzureSdkTracing,
} from './index';
import { recordingInstrumenter, testTracerProvider as provider } from './testing';

describe('azureSdkTracing', () => {
  it('reads auto, on and off from JOBQ_AZURE_SDK_TRACING (auto when unset)', () => {
    expect(azureSdkTracing({})).toBe('auto');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: ' ' })).toBe('auto');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: 'AUTO' })).toBe('auto');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: 'on' })).toBe('on');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: '1' })).toBe('on');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: 'Off' })).toBe('off');
    expect(azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: 'false' })).toBe('off');
  });

  it('refuses any other value in one line naming the variable', () => {
    expect(() => azureSdkTracing({ [AZURE_SDK_TRACING_VARIABLE]: 'sometimes' })).toThrow(
      expect.objectContaining({ code: 'invalid-config', message: 'JOBQ_AZURE_SDK_TRACING="sometimes" is not one of auto, on, off' }),
    );
  });
});

describe('gateSdkTracing on a storage client (Azurite)', () => {
  let storage: LocalStorage;
  const started: string[] = [];
  let n = 0;

  beforeAll(async () => {
    storage = await startAzurite();
    useInstrumenter(recordingInstrumenter(started));
  });
  afterAll(async () => {
    trace.disable();
    await storage?.stop();
  });
  beforeEach(() => {
    trace.disable();
    started.length = 0;
  });

  /** A fresh service client (own pipeline) in `mode`, and one of its containers. */
  async function container(mode: AzureSdkTracing | null): Promise<{ service: BlobServiceClient; container: ContainerClient }> {
    const service = BlobServiceClient.fromConnectionString(storage.connectionString);
    const pipeline = storageCorePipeline(service);
    expect(pipeline).toBeDefined();
    if (mode !== null) expect(gateSdkTracing(pipeline!, mode)).toBe(true);
    const client = service.getContainerClient(`trace${++n}`);
    await client.create();
    started.length = 0;
    return { service, container: client };
  }

  /** Uploads one blob; the names of the spans started meanwhile. */
  async function upload(client: ContainerClient): Promise<string[]> {
    started.length = 0;
    await client.getBlockBlobClient('a.json').upload('{}', 2);
    return [...started];
  }

  it('finds the pipeline that the service client shares with its container and blob clients', async () => {
    const { service, container: client } = await container(null);
    const pipeline = storageCorePipeline(service);
    expect(storageCorePipeline(client)).toBe(pipeline);
    expect(storageCorePipeline(client.getBlockBlobClient('x'))).toBe(pipeline);
    expect(pipeline!.getOrderedPolicies().map((p) => p.name)).toContain('tracingPolicy');
  });

  it('without a gate the SDK starts a span per request even when no tracer provider is registered', async () => {
    const { container: client } = await container(null);
    expect(tracerProviderRegistered()).toBe(false);
    expect(await upload(client)).toEqual(['BlockBlobClient-upload', 'HTTP PUT']);
  });

  it('auto: no request span while no tracer provider is registered, one per request once one is, none after it is gone', async () => {
    const { container: client } = await container('auto');
    expect(tracerProviderRegistered()).toBe(false);
    expect(await upload(client)).toEqual(['BlockBlobClient-upload']);

    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    expect(tracerProviderRegistered()).toBe(true);
    expect(await upload(client)).toEqual(['BlockBlobClient-upload', 'HTTP PUT']);

    trace.disable();
    expect(tracerProviderRegistered()).toBe(false);
    expect(await upload(client)).toEqual(['BlockBlobClient-upload']);
  });

  it('keeps the order of the policies and gates only once', () => {
    const service = BlobServiceClient.fromConnectionString(storage.connectionString);
    const pipeline = storageCorePipeline(service)!;
    const before = pipeline.getOrderedPolicies().map((p) => p.name);
    gateSdkTracing(pipeline, 'auto');
    const gate = pipeline.getOrderedPolicies().find((p) => p.name === 'tracingPolicy');
    expect(gateSdkTracing(pipeline, 'auto')).toBe(true);
    expect(pipeline.getOrderedPolicies().find((p) => p.name === 'tracingPolicy')).toBe(gate);
    expect(pipeline.getOrderedPolicies().map((p) => p.name)).toEqual(before);
  });

  it('on: the SDK policy stays and traces without a provider; off: it is gone even with one', async () => {
    const on = await container('on');
    expect(await upload(on.container)).toEqual(['BlockBlobClient-upload', 'HTTP PUT']);

    const off = await container('off');
    trace.setGlobalTracerProvider(provider);
    expect(await upload(off.container)).toEqual(['BlockBlobClient-upload']);
    expect(
      storageCorePipeline(off.service)!
        .getOrderedPolicies()
        .map((p) => p.name),
    ).not.toContain('tracingPolicy');
    expect(gateSdkTracing(storageCorePipeline(off.service)!, 'auto')).toBe(false);
  });
});
