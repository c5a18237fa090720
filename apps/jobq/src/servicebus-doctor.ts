import { formatDuration, type TaskQueue } from '@jobq/ports';
import type { ServiceBusQueueDescription } from '@jobq/queue-servicebus';
import { errorLine } from './base';
import { isDescribable } from './queues';

/** jobq creates its queues with this MaxDeliveryCount (see packages/queue-servicebus/README.md). */
export const CREATED_MAX_DELIVERY_COUNT = 1_000;
/** Below this, messages jobq leaves for redelivery on purpose risk the dead-letter queue. */
export const LOW_MAX_DELIVERY_COUNT = 100;
/** Below this, a lock is renewed every few seconds and a short pause of a worker loses it. */
export const SHORT_LOCK_MS = 10_000;

/** One Service Bus queue to check: its spec as the user writes it and whether it is the completion queue. */
export interface ServiceBusQueueToCheck {
  spec: string;
  queue: TaskQueue;
  completions: boolean;
}

/** The outcome of the Service Bus check (the doctor's `DoctorCheck` shape). */
export interface ServiceBusCheck {
  status: 'ok' | 'warn';
  message: string;
  hint: string | null;
}

/** What is said about one queue: the facts, and the warnings with what to do. */
function assess(
  spec: string,
  d: ServiceBusQueueDescription,
  completions: boolean,
): { facts: string[]; warnings: string[]; hints: string[] } {
  const facts: string[] = [];
  const warnings: string[] = [];
  const hints: string[] = [];
  const p = d.properties;
  if (p === null) {
    facts.push(
      'settings not readable (needs the Azure Service Bus Data Owner role, or JOBQ_SERVICEBUS_ADMIN_ENDPOINT for a local broker), counted by peeking',
    );
  } else {
    facts.push(`LockDuration ${formatDuration(p.lockDurationInMs)}`);
    if (p.lockDurationInMs < SHORT_LOCK_MS) {
      warnings.push(`LockDuration ${formatDuration(p.lockDurationInMs)} is short`);
      hints.push(
        `${spec}: with locks under ${SHORT_LOCK_MS / 1000}s a pause of a ${completions ? 'coordinator' : 'worker'} (GC, network) loses them and the message is delivered again; LockDuration can be raised on the queue (5s–5m)`,
      );
    }
    facts.push(`MaxDeliveryCount ${p.maxDeliveryCount}`);
    if (p.maxDeliveryCount < LOW_MAX_DELIVERY_COUNT) {
      warnings.push(`MaxDeliveryCount ${p.maxDeliveryCount} is low`);
      hints.push(
        `${spec}: jobq leaves messages for redelivery on purpose (${completions ? 'completions whose workflow could not be saved yet, wake-ups during a storage outage' : 'tasks of a workflow this deployment does not know, tasks stopped at shutdown, completions that could not be sent'}); ` +
          `after ${p.maxDeliveryCount} deliveries Service Bus dead-letters them and the work is lost. jobq creates its queues with ${CREATED_MAX_DELIVERY_COUNT}: ` +
          `raise it (az servicebus queue update --max-delivery-count ${CREATED_MAX_DELIVERY_COUNT})`,
      );
    }
    facts.push(
      p.requiresDuplicateDetection
        ? `duplicate detection ${p.duplicateDetectionHistoryTimeWindowInMs === null ? 'on' : formatDuration(p.duplicateDetectionHistoryTimeWindowInMs)}`
        : 'duplicate detection off (an optimisation only: repeats are still delivered and ignored; it can only be chosen when a queue is created, not on Basic)',
    );
    if (Number.isFinite(p.defaultMessageTimeToLiveInMs))
      facts.push(`messages expire after ${formatDuration(p.defaultMessageTimeToLiveInMs)}`);
  }
  facts.push(`${d.activeMessageCount} message${d.activeMessageCount === 1 ? '' : 's'}`);
  facts.push(`dead-letter ${d.deadLetterMessageCount}`);
  if (d.deadLetterMessageCount > 0) {
    warnings.push(`${d.deadLetterMessageCount} dead-lettered message${d.deadLetterMessageCount === 1 ? '' : 's'}`);
    hints.push(
      completions
        ? `${spec}: completions and wake-ups the coordinator could not apply (unreadable, of a corrupt workflow, or delivered too often): see the coordinator log, look with jobq ${spec} peek --failed`
        : `${spec}: tasks that failed after their retries or were delivered too often: look with jobq ${spec} peek --failed (jobq ${spec} pull --failed --complete removes one)`,
    );
  }
  return { facts, warnings, hints };
}

/**
 * The settings and dead-letter counts of the Service Bus queues of a deployment (the completion
 * queue and the task queues active workflows use); null when none of them is on Service Bus.
 */
export async function checkServiceBusQueues(queues: readonly ServiceBusQueueToCheck[]): Promise<ServiceBusCheck | null> {
  const describable = queues.filter((q) => isDescribable(q.queue));
  if (describable.length === 0) return null;
  const parts: string[] = [];
  const hints: string[] = [];
  let warn = false;
  for (const { spec, queue, completions } of describable) {
    if (!isDescribable(queue)) continue;
    let described: ServiceBusQueueDescription;
    try {
      described = await queue.describe();
    } catch (error) {
      warn = true;
      parts.push(`${spec}: cannot be described: ${errorLine(error)}`);
      continue;
    }
    const { facts, warnings, hints: own } = assess(spec, described, completions);
    if (warnings.length > 0) warn = true;
    parts.push(`${spec}: ${facts.join(', ')}${warnings.length > 0 ? ` — ${warnings.join(', ')}` : ''}`);
    hints.push(...own);
  }
  return { status: warn ? 'warn' : 'ok', message: parts.join('; '), hint: hints.length === 0 ? null : hints.join('; ') };
}
