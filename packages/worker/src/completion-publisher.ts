import { type Completion, type EnvelopeTrace, completionMessageId, encodeCompletion } from '@jobq/dag-core/wire';
import { errorMessage, isJobqError, messageByteLength, type Clock, type TaskQueue } from '@jobq/ports';
import { sleep as sleepFor } from './backoff';

/** Exponential back-off between completion sends (docs/design.md#the-workflow-processor: 1 s → 60 s cap). */
export interface BackoffSettings {
  initialInMs: number;
  maxInMs: number;
}

/** The default back-off of completion sends. */
export const DEFAULT_COMPLETION_BACKOFF: BackoffSettings = { initialInMs: 1_000, maxInMs: 60_000 };
/** Default of `JOBQ_COMPLETION_SEND_MAX_ATTEMPTS`. */
export const DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS = 5;

/** Options of {@link publishCompletion}. */
export interface PublishCompletionOptions {
  /** Attempts in all (≥ 1). Default {@link DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS}. */
  maxAttempts?: number;
  backoff?: BackoffSettings;
  log?: (line: string) => void;
  /** Waits between attempts; injectable for tests. Default: a sleep of `clock`. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock of the back-off (default the real one). */
  clock?: Clock;
  /**
   * The sending span's trace context, sent as the envelope's top-level keys (docs/observability.md#tracing);
   * left out when the completion would not fit the queue with it.
   */
  trace?: EnvelopeTrace;
}

/** What {@link publishCompletion} did. */
export type PublishResult =
  | { sent: true; attempts: number }
  /**
   * Not sent: `error` is the last send error; `permanent` when trying again cannot help (the
   * queue refused the message: too large, bad request, refused credentials…); `tooLarge` when the
   * message does not fit in the queue.
   */
  | { sent: false; attempts: number; error: string; permanent: boolean; tooLarge: boolean };

/** The pause before attempt `attempt + 1` (attempt ≥ 1): `initial · 2^(attempt−1)`, capped at `max`. */
export function backoffDelay(attempt: number, backoff: BackoffSettings): number {
  return Math.min(backoff.maxInMs, backoff.initialInMs * 2 ** Math.max(0, attempt - 1));
}

function describe(error: unknown): string {
  return errorMessage(error);
}

/**
 * Sends a completion message (docs/design.md#completion-and-wake-up-messages) to the completion queue, trying again with exponential
 * back-off up to `maxAttempts` times. Never throws. Only transient errors are tried again: a
 * `JobqError` that is not retryable (`message-too-large`, `auth` such as an expired SAS,
 * `invalid-argument` such as a 400, …) ends the attempts at once as `permanent`. The message id is the completion's id, so a duplicate send (an attempt
 * that went through but reported an error) is harmless: the coordinator applies a completion once.
 */
export async function publishCompletion(
  queue: TaskQueue,
  completion: Completion,
  options: PublishCompletionOptions = {},
): Promise<PublishResult> {
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? DEFAULT_COMPLETION_SEND_MAX_ATTEMPTS));
  const backoff = options.backoff ?? DEFAULT_COMPLETION_BACKOFF;
  const clock = options.clock;
  const sleep = options.sleep ?? ((ms: number) => sleepFor(ms, clock ? { clock } : {}));
  const log = options.log ?? (() => undefined);
  let body: string;
  let messageId: string;
  try {
    body = encodeCompletion(completion);
    if (options.trace !== undefined) {
      const traced = encodeCompletion(completion, options.trace);
      if (messageByteLength(traced) <= queue.maxMessageBytes) body = traced;
    }
    messageId = completionMessageId(completion);
  } catch (error) {
    return { sent: false, attempts: 0, error: `cannot encode the completion: ${describe(error)}`, permanent: true, tooLarge: false };
  }
  let lastError = '';
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    try {
      await queue.send({ body, messageId });
      return { sent: true, attempts: attempt };
    } catch (error) {
      lastError = describe(error);
      if (isJobqError(error, 'message-too-large')) {
        log(`the completion of task "${completion.taskName}" does not fit in queue "${queue.name}": ${lastError}`);
        return { sent: false, attempts: attempt, error: lastError, permanent: true, tooLarge: true };
      }
      if (isJobqError(error) && !error.retryable) {
        log(
          `sending the completion of task "${completion.taskName}" to queue "${queue.name}" failed with a permanent error (${error.code}): ${lastError}; not trying again`,
        );
        return { sent: false, attempts: attempt, error: lastError, permanent: true, tooLarge: false };
      }
      if (attempt === maxAttempts) break;
      const delay = backoffDelay(attempt, backoff);
      log(
        `sending the completion of task "${completion.taskName}" to queue "${queue.name}" failed (attempt ${attempt}/${maxAttempts}): ${lastError}; trying again in ${delay} ms`,
      );
      await sleep(delay);
    }
  }
  log(`giving up sending the completion of task "${completion.taskName}" after ${maxAttempts} attempts: ${lastError}`);
  return { sent: false, attempts: maxAttempts, error: lastError, permanent: false, tooLarge: false };
}
