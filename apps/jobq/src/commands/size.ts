import { Flags } from '@oclif/core';
import { JobqCommand } from '../base';
import { isDescribable } from '../queues';
import { chooseQueue, openQueueFromFlags, queueDisplayName, queueFlags } from './push';

export default class Size extends JobqCommand {
  static override summary = 'Print the approximate number of tasks in a queue';
  static override description =
    "Prints the queue's approximate message count (the backend's estimate: messages held by workers count too). " +
    'For a Service Bus queue the count of its dead-letter queue follows, e.g. "3 (dead-letter 1)"; without the Data Owner role (or the local ' +
    "broker's admin endpoint) both are counted by peeking, at most 250 each. " +
    'With --json, one JSON document {queue, approximate_count} (Service Bus: also dead_letter_count and counted_by). ' +
    "--failed counts the dead-letter queue ({queue}-failed; on Service Bus the queue's own).";
  static override examples = [
    '<%= config.bin %> devstoreaccount1/cpu size',
    '<%= config.bin %> size --queue myaccount/gpu --json',
    '<%= config.bin %> myaccount/gpu size --failed',
    '<%= config.bin %> sb://my-namespace/gpu size',
  ];
  static override flags = {
    ...queueFlags,
    failed: Flags.boolean({ description: "Count the dead-letter queue ({queue}-failed; on Service Bus the queue's own)", default: false }),
    json: Flags.boolean({ description: 'Print one JSON document', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Size);
    const queue = await openQueueFromFlags(flags, { createIfMissing: false });
    try {
      const name = queueDisplayName(flags.queue, queue, flags.failed);
      if (isDescribable(queue) && !flags.failed) {
        const described = await queue.describe();
        const countedBy = described.countedBy;
        if (countedBy === 'peek')
          this.note('counted by peeking (at most 250 each): reading exact counts needs the Azure Service Bus Data Owner role');
        if (flags.json) {
          this.printJson({
            queue: name,
            approximate_count: described.activeMessageCount,
            dead_letter_count: described.deadLetterMessageCount,
            counted_by: countedBy,
          });
        } else {
          process.stdout.write(`${described.activeMessageCount} (dead-letter ${described.deadLetterMessageCount})\n`);
        }
        return;
      }
      const count = await chooseQueue(queue, flags.failed).approximateMessageCount();
      if (flags.json) this.printJson({ queue: name, approximate_count: count });
      else process.stdout.write(`${count}\n`);
    } finally {
      await queue.close();
    }
  }
}
