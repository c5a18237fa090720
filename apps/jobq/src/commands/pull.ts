import { Flags } from '@oclif/core';
import { JobqCommand } from '../base';
import { ReportedFailure, UsageError } from '../errors';
import { messageDocument } from './peek';
import { durationMs } from '../duration-flags';
import { chooseQueue, openQueueFromFlags, queueDisplayName, queueFlags } from './push';

export default class Pull extends JobqCommand {
  static override summary = 'Take one task from a queue and print it as JSON';
  static override description =
    'Receives one message and prints it as one JSON document {id, kwargs, num_retries, message_id, delivery_count, enqueued_at, locked_until}. ' +
    'Without --complete the message stays on the queue, hidden for --visibility-timeout, and then becomes visible again (for another pull or a worker); ' +
    'with --complete it is deleted. Nothing is run. When no message arrives within --wait, prints a line on stderr (and null with --json) and exits 1. ' +
    "--failed takes from the dead-letter queue ({queue}-failed; on Service Bus the queue's own). On Service Bus, --visibility-timeout must be 5s–5m.";
  static override examples = [
    '<%= config.bin %> devstoreaccount1/cpu pull',
    '<%= config.bin %> myaccount/cpu pull --complete | jq -r .kwargs.cmd',
    '<%= config.bin %> myaccount/cpu pull --wait 30s --visibility-timeout 10m',
    'while task=$(<%= config.bin %> myaccount/cpu pull --complete); do echo "$task" | jq -r .kwargs.cmd; done',
  ];
  static override flags = {
    ...queueFlags,
    complete: Flags.boolean({ description: 'Delete the message once received', default: false }),
    'visibility-timeout': Flags.string({
      description: 'How long the message stays hidden when not completed (e.g. 30, 30s, 10m)',
      default: '30s',
    }),
    wait: Flags.string({ description: 'How long to wait for a message (e.g. 0, 5s, 1m)', default: '0' }),
    failed: Flags.boolean({
      description: "Take from the dead-letter queue ({queue}-failed; on Service Bus the queue's own)",
      default: false,
    }),
    json: Flags.boolean({ description: 'Also print null (instead of nothing) when no message arrives', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Pull);
    const lockDurationInMs = durationMs(flags['visibility-timeout'], '--visibility-timeout');
    const waitInMs = durationMs(flags.wait, '--wait');
    if (lockDurationInMs < 1_000 || lockDurationInMs > 7 * 24 * 3600 * 1000) {
      throw new UsageError(`--visibility-timeout must be between 1 s and 7 days, got "${flags['visibility-timeout']}"`);
    }
    const queue = await openQueueFromFlags(flags, { lockDurationInMs, createIfMissing: false });
    try {
      const source = chooseQueue(queue, flags.failed);
      const [message] = await source.receive({ maxMessages: 1, maxWaitTimeInMs: waitInMs });
      const name = queueDisplayName(flags.queue, queue, flags.failed);
      if (message === undefined) {
        if (flags.json) this.printJson(null);
        this.note(`no message in ${name}`);
        throw new ReportedFailure(`no message in ${name}`, 1);
      }
      if (flags.complete) await source.complete(message);
      const doc = messageDocument(message);
      if (flags.complete) delete doc.locked_until;
      this.printJson(doc);
      this.note(
        flags.complete
          ? `took message ${message.messageId} from ${name} and deleted it`
          : `took message ${message.messageId} from ${name}; it becomes visible again at ${message.lockedUntil.toISOString()} (use --complete to delete it)`,
      );
    } finally {
      await queue.close();
    }
  }
}
