import { Flags } from '@oclif/core';
import { decodeEnvelope } from '@jobq/dag-core/wire';
import type { PeekedMessage, ReceivedMessage } from '@jobq/ports';
import { JobqCommand } from '../base';
import { chooseQueue, openQueueFromFlags, queueDisplayName, queueFlags } from './push';

/** A queue message as JSON: the decoded envelope, or the raw body with the reason it is not one. */
export function messageDocument(message: PeekedMessage | ReceivedMessage): Record<string, unknown> {
  const meta: Record<string, unknown> = {
    message_id: message.messageId,
    delivery_count: message.deliveryCount,
    enqueued_at: message.enqueuedAt === null ? null : message.enqueuedAt.toISOString(),
  };
  if ('lockedUntil' in message) meta.locked_until = message.lockedUntil.toISOString();
  const decoded = decodeEnvelope(message.body);
  if (!decoded.ok) return { ...meta, body: message.body, error: decoded.error };
  const envelope = decoded.value;
  return {
    id: envelope.id,
    kwargs: envelope.kwargs,
    num_retries: envelope.numRetries,
    version: envelope.version,
    reply_requested: envelope.replyRequested,
    ...meta,
  };
}

/** One line for a person: the task id and its command (or kwargs). */
export function messageLine(message: PeekedMessage): string {
  const decoded = decodeEnvelope(message.body);
  if (!decoded.ok) return `${message.messageId}  (not a jobq task: ${decoded.error})`;
  const { id, kwargs } = decoded.value;
  const what = typeof kwargs.cmd === 'string' && Object.keys(kwargs).length === 1 ? kwargs.cmd : JSON.stringify(kwargs);
  const deliveries = message.deliveryCount > 0 ? `  (delivered ${message.deliveryCount}×)` : '';
  return `${id}  ${what}${deliveries}`;
}

export default class Peek extends JobqCommand {
  static override summary = 'Show the next tasks of a queue without taking them';
  static override description =
    'Prints up to -n visible messages of the queue (at most 32), oldest first, one line each: the task id and its command (or kwargs). ' +
    'Nothing is taken or changed; messages held by a worker are not visible. With --json, one JSON array of ' +
    "{id, kwargs, num_retries, message_id, delivery_count, enqueued_at}. --failed looks at the dead-letter queue ({queue}-failed; on Service Bus the queue's own).";
  static override examples = [
    '<%= config.bin %> devstoreaccount1/cpu peek',
    '<%= config.bin %> myaccount/gpu peek -n 32 --json',
    '<%= config.bin %> myaccount/gpu peek --failed',
  ];
  static override flags = {
    ...queueFlags,
    count: Flags.integer({ char: 'n', description: 'How many messages to show (1–32)', default: 10, min: 1, max: 32 }),
    failed: Flags.boolean({
      description: "Peek at the dead-letter queue ({queue}-failed; on Service Bus the queue's own)",
      default: false,
    }),
    json: Flags.boolean({ description: 'Print one JSON array', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Peek);
    const queue = await openQueueFromFlags(flags, { createIfMissing: false });
    try {
      const messages = await chooseQueue(queue, flags.failed).peek(flags.count);
      if (flags.json) {
        this.printJson(messages.map(messageDocument));
        return;
      }
      if (messages.length === 0) this.note(`no visible message in ${queueDisplayName(flags.queue, queue, flags.failed)}`);
      process.stdout.write(messages.map((m) => `${messageLine(m)}\n`).join(''));
    } finally {
      await queue.close();
    }
  }
}
