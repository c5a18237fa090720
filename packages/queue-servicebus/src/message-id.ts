import { createHash, randomUUID } from 'node:crypto';

/** Service Bus refuses a message id longer than this. */
export const SERVICE_BUS_MAX_MESSAGE_ID_LENGTH = 128;

/**
 * The Service Bus message id for a jobq message id, which duplicate detection keys on. No id, or
 * one whose attempt is `current` (`…/current`, `…/current/done`: the attempt is unknown, so two such
 * messages may differ) → a random UUID; an id over 128 characters → `h:` + base64url(sha256(id)),
 * so repeats of it are still recognised; any other id is kept as it is.
 */
export function serviceBusMessageId(messageId: string | undefined): string {
  if (messageId === undefined || messageId === '' || /\/current(\/done)?$/.test(messageId)) return randomUUID();
  if (messageId.length <= SERVICE_BUS_MAX_MESSAGE_ID_LENGTH) return messageId;
  return `h:${createHash('sha256').update(messageId, 'utf8').digest('base64url')}`;
}
