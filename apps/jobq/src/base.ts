import { Command, Flags, Errors } from '@oclif/core';
import { isJobqError } from '@jobq/ports';
import { closeEverything } from './closing';
import { maskSecret } from './config';
import { ReportedFailure, UsageError } from './errors';
import { parseErrorLine } from './parse-errors';

/** A multi-line message (oclif's "Missing 1 required arg:\nfile …") folded into one line. */
function oneLine(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
}

/** One line for an error: its code when it is a jobq error, secrets masked. */
export function errorLine(error: unknown): string {
  if (isJobqError(error)) return maskSecret(`${error.code}: ${error.message}`);
  return maskSecret(oneLine(error instanceof Error ? error.message : String(error)));
}

/**
 * The base of every jobq command: `--debug`, and the error contract of docs/cli.md#conventions — usage errors exit
 * 2, failures 1, each with one line on stderr (the stack only with `--debug`); stdout is left to the
 * command (with `--json`, exactly one JSON document).
 */
export abstract class JobqCommand extends Command {
  static override baseFlags = {
    debug: Flags.boolean({ description: 'Print the stack of an error', default: false, helpGroup: 'GLOBAL' }),
  };

  /** Writes one JSON document to stdout. */
  protected printJson(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Progress and informational lines: always stderr, so stdout stays clean for ids and JSON. */
  protected note(line: string): void {
    process.stderr.write(`${line}\n`);
  }

  /** Closes what the command left open (Service Bus connections would keep the process alive). */
  protected override async finally(error: Error | undefined): Promise<unknown> {
    await closeEverything();
    return super.finally(error);
  }

  protected override catch(error: Error & { exitCode?: number }): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    const debug = this.argv.includes('--debug');
    if (error instanceof ReportedFailure) {
      if (debug) process.stderr.write(`${maskSecret(error.stack ?? '')}\n`);
      return this.exit(error.exitCode);
    }
    // oclif's own parse errors (unknown flag, missing argument, bad option) are usage errors: exit 2.
    if (error instanceof Errors.CLIError && !(error instanceof UsageError)) {
      process.stderr.write(`jobq: ${maskSecret(parseErrorLine(error, this.id, this.config))}\n`);
      if (debug) process.stderr.write(`${maskSecret(error.stack ?? '')}\n`);
      const exit = error.oclif?.exit;
      return this.exit(typeof exit === 'number' ? exit : 2);
    }
    process.stderr.write(`jobq: ${errorLine(error)}\n`);
    if (debug) process.stderr.write(`${maskSecret(error.stack ?? '')}\n`);
    return this.exit(error instanceof UsageError ? 2 : 1);
  }
}
