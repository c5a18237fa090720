import { randomUUID } from 'node:crypto';
import { Flags } from '@oclif/core';
import { encodeEnvelope } from '@jobq/dag-core/wire';
import { errorMessage, type TaskQueue } from '@jobq/ports';
import { JobqCommand } from '../base';
import { resolveConfig } from '../config';
import { UsageError } from '../errors';
import { openPlainQueue } from '../plain-queue';
import { isDescribable } from '../queues';
import { readStdin } from '../io';

/** The flags of the plain-queue commands: the queue (also the positional `jobq ACCOUNT/QUEUE <command>`) and the config file. */
export const queueFlags = {
  queue: Flags.string({
    char: 'q',
    description: 'The queue: NAME, ACCOUNT/NAME or sb://NAMESPACE/NAME (also the positional: jobq ACCOUNT/QUEUE <command>)',
    required: true,
    helpGroup: 'QUEUE',
  }),
  config: Flags.string({ description: 'Config file (default: $JOBQ_WORKFLOW_CONFIG, else ./jobq.yaml when present)', helpGroup: 'QUEUE' }),
};

/** Opens the queue named by `--queue` with the resolved configuration (connection strings, default account or namespace). */
export async function openQueueFromFlags(
  flags: { queue: string; config?: string | undefined },
  options: { lockDurationInMs?: number; createIfMissing?: boolean } = {},
): Promise<TaskQueue> {
  const config = resolveConfig({ configPath: flags.config });
  return openPlainQueue(config, flags.queue, options);
}

/** The queue itself or, with `failed`, its dead-letter queue (`{queue}-failed`; Service Bus: the queue's own). */
export function chooseQueue(queue: TaskQueue, failed: boolean): TaskQueue {
  return failed ? queue.deadLetterQueue() : queue;
}

/** How the commands name the queue or, with `failed`, its dead-letter queue (`{spec}-failed`; Service Bus: `{spec}/$DeadLetterQueue`). */
export function queueDisplayName(spec: string, queue: TaskQueue, failed: boolean): string {
  if (!failed) return spec;
  return isDescribable(queue) ? `${spec}/$DeadLetterQueue` : `${spec}-failed`;
}

/** A fresh task id: 32 hex characters, as the Python library makes them. */
export function newTaskId(): string {
  return randomUUID().replace(/-/g, '');
}

function parseEnvPairs(pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env expects NAME=VALUE, got "${pair}"`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** The kwargs of every task to push: `-c` commands, else the lines of `input` (commands, or JSON objects with `jsonLines`). */
export function tasksFromInput(options: {
  commands: readonly string[];
  input: string | null;
  jsonLines: boolean;
  env: Record<string, string>;
  cwd: string | undefined;
}): Array<Record<string, unknown>> {
  const tasks: Array<Record<string, unknown>> = [];
  if (options.commands.length > 0) {
    for (const cmd of options.commands) {
      if (cmd.trim() === '') throw new UsageError('-c/--command: the command is empty');
      tasks.push({ cmd });
    }
  } else {
    const lines = (options.input ?? '').split('\n').map((line) => line.replace(/\r$/, ''));
    lines.forEach((line, index) => {
      if (line.trim() === '') return;
      if (!options.jsonLines) {
        if (!line.trimStart().startsWith('#')) tasks.push({ cmd: line });
        return;
      }
      let kwargs: unknown;
      try {
        kwargs = JSON.parse(line) as unknown;
      } catch (error) {
        throw new UsageError(`stdin line ${index + 1}: not valid JSON: ${errorMessage(error)}`);
      }
      if (typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs)) {
        throw new UsageError(`stdin line ${index + 1}: each line must be a JSON object of kwargs, e.g. {"cmd": "echo hi"}`);
      }
      tasks.push(kwargs as Record<string, unknown>);
    });
  }
  return tasks.map((kwargs) => {
    const out = { ...kwargs };
    if (Object.keys(options.env).length > 0) {
      const own = out.env;
      out.env = { ...options.env, ...(typeof own === 'object' && own !== null && !Array.isArray(own) ? own : {}) };
    }
    if (options.cwd !== undefined && out.cwd === undefined) out.cwd = options.cwd;
    return out;
  });
}

export default class Push extends JobqCommand {
  static override summary = 'Push plain tasks (shell commands) onto a queue';
  static override description =
    'Sends one task per -c/--command, or, without -c, one per line of standard input (blank lines and lines starting with # are skipped). ' +
    'With --json-lines each input line is a JSON object of kwargs ({"cmd": …, "env": {…}, "cwd": …}) instead. ' +
    'Messages use the envelope of the Python ai4s-jobq library, so "jobq worker" and Python workers both run them: ' +
    'kwargs.cmd runs with bash -c; a failed task is retried --num-retries times, then moved to {queue}-failed. ' +
    'Prints the id of every task pushed (with --json, one JSON document). The queue is created when missing.';
  static override examples = [
    '<%= config.bin %> devstoreaccount1/cpu push -c "python train.py --seed 1"',
    '<%= config.bin %> push --queue myaccount/gpu -c "nvidia-smi" -c "python bench.py" --num-retries 2',
    'seq 1 100 | sed "s/.*/python run.py --shard &/" | <%= config.bin %> myaccount/cpu push',
    `echo '{"cmd": "make", "cwd": "/src", "env": {"JOBS": "4"}}' | <%= config.bin %> myaccount/cpu push --json-lines`,
  ];
  static override flags = {
    ...queueFlags,
    command: Flags.string({ char: 'c', description: 'A shell command to run as one task (repeatable)', multiple: true }),
    'json-lines': Flags.boolean({
      description: 'Read one JSON object of kwargs per line of standard input',
      default: false,
      exclusive: ['command'],
    }),
    'num-retries': Flags.integer({ description: 'Retries after a failure before the task is dead-lettered', default: 0, min: 0 }),
    env: Flags.string({ description: 'NAME=VALUE added to the environment of every task (repeatable)', multiple: true }),
    cwd: Flags.string({ description: 'Working directory of every task (unless its kwargs set one)' }),
    json: Flags.boolean({ description: 'Print one JSON document: {queue, pushed, ids}', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Push);
    const commands = flags.command ?? [];
    let input: string | null = null;
    if (commands.length === 0) {
      if (process.stdin.isTTY)
        throw new UsageError('nothing to push: pass -c CMD, or pipe commands (or --json-lines kwargs) on standard input');
      input = await readStdin();
    }
    const tasks = tasksFromInput({ commands, input, jsonLines: flags['json-lines'], env: parseEnvPairs(flags.env ?? []), cwd: flags.cwd });
    if (tasks.length === 0) throw new UsageError('nothing to push: the input holds no command');
    const messages = tasks.map((kwargs) => {
      const id = newTaskId();
      return { id, body: encodeEnvelope({ id, kwargs, numRetries: flags['num-retries'] }) };
    });
    const queue = await openQueueFromFlags(flags, { createIfMissing: true });
    try {
      await queue.send(messages.map((m) => ({ body: m.body, messageId: m.id })));
    } finally {
      await queue.close();
    }
    const ids = messages.map((m) => m.id);
    this.note(`pushed ${ids.length} task${ids.length === 1 ? '' : 's'} to ${flags.queue}`);
    if (flags.json) this.printJson({ queue: flags.queue, pushed: ids.length, ids });
    else process.stdout.write(ids.map((id) => `${id}\n`).join(''));
  }
}
