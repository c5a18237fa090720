import { messageByteLength, queueSafeText, utf8ByteLength } from '@jobq/dag-core';
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
