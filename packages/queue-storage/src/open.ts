import { JobqError, resolveSettings } from '@jobq/ports';
import { createQueueServiceClient, type PipelineSettings, type StorageConnection } from './connection';
import { translateError } from './errors';
import { StorageTaskQueue, type StorageTaskQueueSettings } from './storage-queue';

/** Options of {@link openStorageQueue}. */
export interface OpenStorageQueueOptions extends Partial<StorageTaskQueueSettings>, PipelineSettings {
  connection: StorageConnection;
  queueName: string;
  /** Create the queue when missing (default true). */
  createIfMissing?: boolean;
}

/** Storage Queue names: 3–63 lowercase letters, digits and single hyphens, not starting or ending with one. */
const QUEUE_NAME = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/;

/**
 * Defaults: a 30 s lock, 30 s per call, 16 sends in flight; an empty queue is polled every 10 ms for
 * 1 s after the last message received, then at intervals doubling up to 1 s.
 */
export const STORAGE_QUEUE_DEFAULTS: StorageTaskQueueSettings = {
  lockDurationInMs: 30_000,
  operationTimeoutInMs: 30_000,
  sendConcurrency: 16,
  maxPollIntervalInMs: 1_000,
  minPollIntervalInMs: 10,
  hotPollWindowInMs: 1_000,
};

/**
 * Opens a Storage Queue as a {@link StorageTaskQueue}, creating it when missing. The SDK's own
 * retries are kept short (3 tries, 0.2–2 s apart) so a dead endpoint fails fast with an
 * `unavailable` error instead of hanging; callers decide whether to try again.
 */
export async function openStorageQueue(options: OpenStorageQueueOptions): Promise<StorageTaskQueue> {
  if (!QUEUE_NAME.test(options.queueName)) {
    throw new JobqError(
      'invalid-config',
      `"${options.queueName}" is not a Storage Queue name (3–63 lowercase letters, digits and single hyphens)`,
    );
  }
  const settings = resolveSettings<StorageTaskQueueSettings>(STORAGE_QUEUE_DEFAULTS, options);
  if (settings.lockDurationInMs < 1_000 || settings.lockDurationInMs > 7 * 24 * 3600 * 1000) {
    throw new JobqError('invalid-config', `lockDurationInMs must be between 1 s and 7 days, got ${settings.lockDurationInMs}`);
  }
  let service;
  try {
    service = createQueueServiceClient(options.connection, {
      retryOptions: options.retryOptions ?? {
        maxTries: 3,
        retryDelayInMs: 200,
        maxRetryDelayInMs: 2_000,
        tryTimeoutInMs: settings.operationTimeoutInMs,
      },
      ...(options.policies ? { policies: options.policies } : {}),
    });
  } catch (error) {
    throw translateError(error, { operation: 'open', queue: options.queueName });
  }
  const queue = new StorageTaskQueue(service, service.getQueueClient(options.queueName), options.queueName, settings);
  if (options.createIfMissing ?? true) await queue.ensureExists();
  return queue;
}
