import { messageByteLength, queueSafeText, utf8ByteLength } from '@jobq/dag-core/wire';
import { JobqError } from './errors';
import type { OutgoingMessage } from './task-queue';

export { messageByteLength, queueSafeText, utf8ByteLength };

/**
 * Throws `message-too-large` naming the limit and the message id when a body does not fit. The
 * size is {@link messageByteLength}: the bytes as sent, characters XML forbids escaped.
 */
export function assertMessageFits(queue: string, message: OutgoingMessage, maxMessageBytes: number): void {
  const size = messageByteLength(message.body);
  if (size > maxMessageBytes) {
    const which = message.messageId === undefined ? 'a message' : `message "${message.messageId}"`;
    throw new JobqError('message-too-large', `${which} for queue "${queue}" is ${size} bytes; the limit is ${maxMessageBytes}`, {
      details: { queue, size, limit: maxMessageBytes },
    });
  }
}

/** Throws `invalid-argument` unless `timeToLiveInMs` is undefined, `Number.POSITIVE_INFINITY` or a positive finite number. */
export function assertValidTimeToLive(queue: string, message: OutgoingMessage): void {
  const ttl = message.timeToLiveInMs;
  if (ttl === undefined || ttl === Number.POSITIVE_INFINITY || (typeof ttl === 'number' && Number.isFinite(ttl) && ttl > 0)) return;
  const which = message.messageId === undefined ? 'a message' : `message "${message.messageId}"`;
  throw new JobqError(
    'invalid-argument',
    `${which} for queue "${queue}": timeToLiveInMs must be a positive number of ms or Infinity, got ${String(ttl)}`,
  );
}

/**
 * Throws `invalid-argument` unless `delayInMs` is undefined or a finite number ≥ 0 that is smaller
 * than a finite `timeToLiveInMs` (both count from the send: a message must not expire before it can
 * be received).
 */
export function assertValidDelay(queue: string, message: OutgoingMessage): void {
  const delay = message.delayInMs;
  if (delay === undefined) return;
  const which = message.messageId === undefined ? 'a message' : `message "${message.messageId}"`;
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
    throw new JobqError(
      'invalid-argument',
      `${which} for queue "${queue}": delayInMs must be a finite number of ms ≥ 0, got ${String(delay)}`,
    );
  }
  const ttl = message.timeToLiveInMs;
  if (typeof ttl === 'number' && Number.isFinite(ttl) && delay >= ttl) {
    throw new JobqError(
      'invalid-argument',
      `${which} for queue "${queue}": delayInMs (${delay}) must be smaller than timeToLiveInMs (${ttl}), which also counts from the send`,
    );
  }
}
