#!/usr/bin/env node
/** `jobq-servicebus-emulator`: the broker as a process. See `--help` and README.md. */
import { parseCommandLine, USAGE, UsageError } from './command-line';
import { answerRequest } from './control';
import { startServiceBus } from './emulator';
import { errorText } from './error-text';
import { QueueRegistryError } from './types';

async function main(): Promise<void> {
  let line;
  try {
    line = parseCommandLine(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`jobq-servicebus-emulator: ${error.message}\n`);
    process.exitCode = 2;
    return;
  }
  if (line.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let emulator;
  try {
    emulator = await startServiceBus(line.options);
  } catch (error) {
    process.stderr.write(`jobq-servicebus-emulator: ${errorText(error)}\n`);
    // A value the broker refuses came from the config: a usage error, like a bad flag.
    process.exitCode = error instanceof QueueRegistryError ? 2 : 1;
    return;
  }
  const stop = () => void emulator.stop().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (line.readyLine) {
    process.stdout.write(
      `${JSON.stringify({ port: emulator.port, adminEndpoint: emulator.adminEndpoint, connectionString: emulator.connectionString, pid: process.pid })}\n`,
    );
    // The parent holds stdin open; when it goes away (killed included), so does this process.
    // Each line it writes is a request, answered by one JSON line on stdout (README, "In a child process").
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    let pending = '';
    process.stdin.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
        const request = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (request !== '') process.stdout.write(`${JSON.stringify(answerRequest(request, emulator))}\n`);
      }
      // A line that never ends is not a request: do not keep it growing.
      if (pending.length > 4_096) pending = '';
    });
  } else {
    process.stdout.write(
      `Service Bus emulator listening on 127.0.0.1:${emulator.port} (admin ${emulator.adminEndpoint ?? 'off'})\nconnection string: ${emulator.connectionString}\n`,
    );
  }
}

void main();
