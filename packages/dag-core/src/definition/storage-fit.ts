import { withEnvelopeTrace } from '../wire/envelope';
import { SERVICE_BUS_MAX_MESSAGE_BYTES, STORAGE_QUEUE_MAX_MESSAGE_BYTES, encodeTaskMessage, messageByteLength } from '../wire/task-message';
import { upstreamOverflowBlobPath } from '../wire/upstream-refs';
import { MAX_WORKFLOW_QUEUES, WORST_CASE_ATTEMPT_NO, WORST_CASE_CONTAINER, WORST_CASE_WORKFLOW_ID } from './limits';
import { parseQueueSpec } from './names';
import { quoteForMessage, type PathSegment } from './path';
import type { RawIssue } from './raw-issue';

/** What the storage checks need of a task, read defensively from input that may be ill-typed. */
export interface FitTask {
  index: number;
  name: string | undefined;
  /** The task's own `queue` when it is a string. */
  queue: string | undefined;
  kwargs: Record<string, unknown> | undefined;
  hasParents: boolean;
}

/** The largest message a queue spec's backend takes: Service Bus for `sb://`, else Storage Queue. */
export function queueMessageLimit(spec: string): number {
  const parsed = parseQueueSpec(spec);
  return parsed.ok && parsed.value.backend === 'servicebus' ? SERVICE_BUS_MAX_MESSAGE_BYTES : STORAGE_QUEUE_MAX_MESSAGE_BYTES;
}

/** A W3C `traceparent` (all of them have this length). */
const WORST_CASE_TRACEPARENT = `00-${'f'.repeat(32)}-${'f'.repeat(16)}-01`;

/**
 * The size of the largest task message the task can need, in the bytes the queue limits count:
 * the message with the longest workflow id, an attempt number of 2^53 − 1, a timeout and,
 * for a task with parents, the reference to the overflow blob in place of the upstream refs (the
 * coordinator moves refs that do not fit there, so that is the smallest form it can always send)
 * and the top-level `traceparent` key a traced dispatch adds (docs/observability.md#tracing).
 * Null when the message cannot be encoded (the issues found elsewhere say why).
 */
export function worstCaseTaskMessageBytes(task: { name: string; kwargs: Record<string, unknown>; hasParents: boolean }): number | null {
  try {
    const upstreamBlob = task.hasParents
      ? `${WORST_CASE_CONTAINER}/${upstreamOverflowBlobPath(WORST_CASE_WORKFLOW_ID, task.name, WORST_CASE_ATTEMPT_NO)}`
      : undefined;
    const message = encodeTaskMessage({
      workflowId: WORST_CASE_WORKFLOW_ID,
      taskName: task.name,
      attemptNo: WORST_CASE_ATTEMPT_NO,
      timeoutS: Number.MAX_SAFE_INTEGER,
      kwargs: task.kwargs,
      ...(upstreamBlob === undefined ? {} : { upstreamBlob }),
    });
    return messageByteLength(withEnvelopeTrace(message, { traceparent: WORST_CASE_TRACEPARENT }));
  } catch {
    return null;
  }
}

/**
 * An upper bound of {@link worstCaseTaskMessageBytes} from the length of the kwargs' JSON text and
 * of the task name, so most tasks need no encoding. The kwargs text goes into the message with
 * the reserved kwargs (the name twice, JSON-escaped: at most 6 characters per character; ids,
 * numbers, keys and the container well under 1 000) and is then escaped once more into the
 * envelope, where no character takes more than 6 bytes (a `\uXXXX` escape, also for the
 * characters XML forbids); the id holds the name once more, and a `traceparent` key takes 72 bytes.
 * A property test checks the bound.
 */
export function taskMessageBytesBound(kwargsJsonLength: number, nameLength: number): number {
  return 6 * (kwargsJsonLength + 12 * nameLength + 1_000) + 6 * nameLength + 1_100;
}

/** Whether a task's message can pass its queue's limit: the exact size when the bound says it might. */
function messageOverLimit(task: { name: string; kwargs: Record<string, unknown>; hasParents: boolean }, limit: number): number | null {
  let kwargsJson: string;
  try {
    kwargsJson = JSON.stringify(task.kwargs);
  } catch {
    return null;
  }
  if (taskMessageBytesBound(kwargsJson.length, task.name.length) <= limit) return null;
  const size = worstCaseTaskMessageBytes(task);
  return size !== null && size > limit ? size : null;
}

/**
 * Checks that a definition fits the storage it meets at submit and run time: the distinct queues
 * fit one property of the index row ({@link MAX_WORKFLOW_QUEUES}), and every task's message fits
 * its queue (see {@link worstCaseTaskMessageBytes}). The workflow and task names are checked by
 * the model (`schema.ts`).
 */
export function checkStorageFit(tasks: readonly FitTask[], defaultQueue: string): RawIssue[] {
  const issues: RawIssue[] = [];
  const queues = new Set<string>();
  let tooMany: RawIssue | undefined;
  for (const task of tasks) {
    const at = (...rest: PathSegment[]): PathSegment[] => ['tasks', task.index, ...rest];
    const queue = task.queue ?? defaultQueue;
    queues.add(queue);
    if (tooMany === undefined && queues.size > MAX_WORKFLOW_QUEUES)
      tooMany = { code: 'storage-limit', path: task.queue === undefined ? at() : at('queue'), message: '' };

    if (task.name === undefined || task.kwargs === undefined) continue;
    const limit = queueMessageLimit(queue);
    const size = messageOverLimit({ name: task.name, kwargs: task.kwargs, hasParents: task.hasParents }, limit);
    if (size !== null) {
      issues.push({
        code: 'storage-limit',
        path: at('kwargs'),
        message: `the task message of ${quoteForMessage(task.name)} would be ${size} bytes; queue ${quoteForMessage(queue)} takes at most ${limit} (kwargs are too large)`,
      });
    }
  }
  if (tooMany) {
    tooMany.message = `the workflow uses ${queues.size} distinct queues; at most ${MAX_WORKFLOW_QUEUES} fit its index row`;
    issues.unshift(tooMany);
  }
  return issues;
}
