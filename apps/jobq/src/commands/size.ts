import { Flags } from '@oclif/core';
import { JobqCommand } from '../base';
import { chooseQueue, openQueueFromFlags, queueFlags } from './push';

export default class Size extends JobqCommand {
  static override summary = 'Print the approximate number of tasks in a queue';
  static override description =
    "Prints the queue's approximate message count (the backend's estimate: messages held by workers count too). " +
    'With --json, one JSON document {queue, approximate_count}. --failed counts the dead-letter queue {queue}-failed.';
  static override examples = ['<%= config.bin %> devstoreaccount1/cpu size', '<%= config.bin %> size --queue myaccount/gpu --json', '<%= config.bin %> myaccount/gpu size --failed'];
  static override flags = {
    ...queueFlags,
    failed: Flags.boolean({ description: 'Count the dead-letter queue {queue}-failed', default: false }),
    json: Flags.boolean({ description: 'Print one JSON document', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Size);
    const queue = await openQueueFromFlags(flags, { createIfMissing: false });
    try {
      const count = await chooseQueue(queue, flags.failed).approximateMessageCount();
      const name = `${flags.queue}${flags.failed ? '-failed' : ''}`;
      if (flags.json) this.printJson({ queue: name, approximate_count: count });
      else process.stdout.write(`${count}\n`);
    } finally {
      await queue.close();
    }
  }
}
