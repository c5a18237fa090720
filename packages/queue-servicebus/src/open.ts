import type { RetryOptions, ServiceBusAdministrationClient } from '@azure/service-bus';
import { JobqError, type Instruments } from '@jobq/ports';
import { acquireClient, createAdminClient, describeConnection, type AdminPolicy, type ServiceBusConnection } from './connection';
import { translateError } from './errors';
import { isoDuration, parseIsoDuration } from './iso-duration';
import { QueueCore, ServiceBusTaskQueue } from './servicebus-queue';

export { isoDuration, parseIsoDuration } from './iso-duration';

/** Options of {@link openServiceBusQueue}. */
export interface OpenServiceBusQueueOptions {
  connection: ServiceBusConnection;
  queueName: string;
  /**
   * The lock duration to assume when the queue's own LockDuration cannot be read (no Data Owner
   * role), and the LockDuration of a queue this call creates. Default 60 s; 1 s – 5 min.
   */
  lockDurationInMs?: number;
  /**
   * Create the queue when it is missing, with jobq's settings (see the README); needs the Azure
   * Service Bus Data Owner role. Default false: a missing queue is `not-found` when that can be told.
   */
  createIfMissing?: boolean;
  /** Policies for the administration client, e.g. `adminPolicy(endpoint)` of `@jobq/servicebus-emulator`. */
  adminPolicies?: readonly AdminPolicy[];
  /** The SDK's retries; default 3 retries 0.2–2 s apart, 30 s per try. */
  retryOptions?: RetryOptions;
  /** Limit of each administration call (default 30 s). */
  operationTimeoutInMs?: number;
  /** The longest `receive` waits for more messages once the first is there (default 50 ms; shorter on a fast link, see the README). */
  batchFillWaitInMs?: number;
  /**
   * Where each call to the broker is counted, in `jobq_storage_requests_total` with
   * `service="servicebus"` (docs/metrics.md; default nowhere).
   */
  instruments?: Instruments;
}

/** The settings of the queues jobq creates (see the README). */
export const CREATED_QUEUE_SETTINGS = {
  maxDeliveryCount: 1_000,
  duplicateDetectionHistoryTimeWindow: 'PT10M',
} as const;

/** Azure's rules for queue names: letters, digits, `.`, `-`, `_`, `/`-separated segments starting and ending with a letter or digit; at most 260. */
const QUEUE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)*$/;

const DEFAULT_LOCK_DURATION_MS = 60_000;
const DEFAULT_RETRY: RetryOptions = { maxRetries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2_000, timeoutInMs: 30_000 };

function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

function createRefused(queueName: string, host: string, lockDurationInMs: number): JobqError {
  return new JobqError(
    'invalid-config',
    `cannot create Service Bus queue "${queueName}" on ${host}: creating (and reading) queues needs the "Azure Service Bus Data Owner" role ` +
      `(or a SAS rule with Manage). Grant it, or create the queue yourself with LockDuration ${isoDuration(lockDurationInMs)}, ` +
      `MaxDeliveryCount ${CREATED_QUEUE_SETTINGS.maxDeliveryCount}, duplicate detection on with a ${CREATED_QUEUE_SETTINGS.duplicateDetectionHistoryTimeWindow} window ` +
      '(Standard or Premium tier) and no DefaultMessageTimeToLive, and open it without createIfMissing',
    { details: { queue: queueName, namespace: host } },
  );
}

/** Creates the queue with jobq's settings; a queue created meanwhile by someone else is fine. */
async function createQueue(
  admin: ServiceBusAdministrationClient,
  queueName: string,
  host: string,
  lockDurationInMs: number,
  signal: () => AbortSignal,
): Promise<void> {
  let basic = false;
  try {
    basic = (await admin.getNamespaceProperties({ abortSignal: signal() })).messagingSku === 'Basic';
  } catch (error) {
    const status = statusOf(error);
    if (status === 401 || status === 403) throw createRefused(queueName, host, lockDurationInMs);
    throw translateError(error, { operation: 'create', queue: queueName });
  }
  try {
    await admin.createQueue(queueName, {
      lockDuration: isoDuration(lockDurationInMs),
      maxDeliveryCount: CREATED_QUEUE_SETTINGS.maxDeliveryCount,
      // Basic tier has no duplicate detection; jobq stays correct without it.
      ...(basic
        ? {}
        : {
            requiresDuplicateDetection: true,
            duplicateDetectionHistoryTimeWindow: CREATED_QUEUE_SETTINGS.duplicateDetectionHistoryTimeWindow,
          }),
      abortSignal: signal(),
    });
  } catch (error) {
    const status = statusOf(error);
    if (status === 409) return;
    if (status === 401 || status === 403) throw createRefused(queueName, host, lockDurationInMs);
    if (status === 400) {
      throw new JobqError(
        'invalid-config',
        `Service Bus refused to create queue "${queueName}" with LockDuration ${isoDuration(lockDurationInMs)} (it must be 5 s – 5 min)`,
        {
          details: { queue: queueName, namespace: host, statusCode: 400 },
        },
      );
    }
    throw translateError(error, { operation: 'create', queue: queueName });
  }
}

/**
 * Opens a Service Bus queue as a {@link ServiceBusTaskQueue}. Reads the queue's LockDuration when
 * the credential may (Data Owner), creates the queue when asked and missing; the sender and
 * receiver links attach on first use, on one client per namespace shared by every open queue.
 */
export async function openServiceBusQueue(options: OpenServiceBusQueueOptions): Promise<ServiceBusTaskQueue> {
  const { queueName } = options;
  if (queueName.length > 260 || !QUEUE_NAME.test(queueName) || /\$/.test(queueName)) {
    throw new JobqError(
      'invalid-config',
      `"${queueName}" is not a Service Bus queue name (letters, digits, ".", "-", "_" and "/"-separated segments, at most 260)`,
    );
  }
  const configured = options.lockDurationInMs ?? DEFAULT_LOCK_DURATION_MS;
  if (!Number.isFinite(configured) || configured < 1_000 || configured > 300_000) {
    throw new JobqError('invalid-config', `lockDurationInMs must be between 1 s and 5 min (Service Bus LockDuration), got ${configured}`);
  }
  const operationTimeoutInMs = options.operationTimeoutInMs ?? 30_000;
  const { host } = describeConnection(options.connection);
  const admin = createAdminClient(options.connection, options.adminPolicies ?? []);
  const signal = () => AbortSignal.timeout(operationTimeoutInMs);
  let lockDurationInMs = configured;
  let adminRefused = false;
  if (admin) {
    try {
      const properties = await admin.getQueue(queueName, { abortSignal: signal() });
      lockDurationInMs = parseIsoDuration(properties.lockDuration) ?? configured;
    } catch (error) {
      const status = statusOf(error);
      // The service answers a missing queue with an empty feed, which the SDK reports as this code.
      const missing = status === 404 || (error as { code?: unknown } | null)?.code === 'MessageEntityNotFoundError';
      if (missing) {
        if (!options.createIfMissing) {
          throw new JobqError(
            'not-found',
            `Service Bus queue "${queueName}" does not exist on ${host}; create it, or open it with createIfMissing`,
            {
              details: { queue: queueName, namespace: host },
            },
          );
        }
        await createQueue(admin, queueName, host, configured, signal);
      } else if (status === 401 || status === 403) {
        if (options.createIfMissing) throw createRefused(queueName, host, configured);
        adminRefused = true;
      } else {
        throw translateError(error, { operation: 'open', queue: queueName });
      }
    }
  }
  const lease = acquireClient(options.connection, options.retryOptions ?? { ...DEFAULT_RETRY });
  const core = new QueueCore(lease, admin, queueName, {
    lockDurationInMs,
    operationTimeoutInMs,
    batchFillWaitInMs: options.batchFillWaitInMs ?? 50,
    ...(options.instruments ? { instruments: options.instruments } : {}),
  });
  core.adminRefused = adminRefused;
  return new ServiceBusTaskQueue(core);
}
