import { Command, Flags, Errors, type Interfaces } from '@oclif/core';
import { errorMessage, isJobqError } from '@jobq/ports';
import { closeEverything, closeWhenDone } from './closing';
import { maskSecret } from './config';
import { takeLegacyDurationFlags } from './duration-flags';
import { ReportedFailure, UsageError } from './errors';
import { oneLine, parseErrorLine } from './parse-errors';
import { serviceNameFor, startTracing, tracingWanted } from './tracing';

/** oclif's FlagOutput and ArgOutput (not exported by @oclif/core). */
type Output = { [name: string]: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One line for an error: its code when it is a jobq error, secrets masked. */
export function errorLine(error: unknown): string {
  if (isJobqError(error)) return maskSecret(`${error.code}: ${error.message}`);
  return maskSecret(oneLine(errorMessage(error)));
}

/**
 * The code of the `--json` error document (docs/json-output.md#errors): the CLI's own `usage`,
 * `invalid_workflow` and `failed`, else the jobq error code in snake_case.
 */
export function jsonErrorCode(error: unknown, exitCode: number): string {
  if (error instanceof ReportedFailure) return error.code ?? (exitCode === 2 ? 'usage' : 'failed');
  if (exitCode === 2) return 'usage';
  // A WorkflowValidationError of @jobq/coordinator (not imported here: every command loads this file).
  if (isJobqError(error, 'invalid-argument') && Array.isArray((error as { issues?: unknown }).issues)) return 'invalid_workflow';
  if (isJobqError(error)) return error.code.replace(/-/g, '_');
  return 'failed';
}

/**
 * The base of every jobq command: `--debug`, and the error contract of docs/cli.md#conventions — usage errors exit
 * 2, failures 1, each with one line on stderr (the stack only with `--debug`); stdout is left to the
 * command (with `--json`, exactly one JSON document: on a failure before the command printed its
 * own, `{"error": {"code", "message"}}`).
 */
export abstract class JobqCommand extends Command {
  static override baseFlags = {
    debug: Flags.boolean({ description: 'Print the stack of an error', default: false, helpGroup: 'GLOBAL' }),
  };

  /** False for a command whose `--json` flag is about its input (`task set-output`): its errors print no JSON. */
  static jsonOutput = true;

  /**
   * True for a command that runs work (submits, dispatches or runs tasks): with
   * `OTEL_EXPORTER_OTLP_ENDPOINT` set it registers the OpenTelemetry SDK (docs/observability.md#tracing).
   */
  static traced = false;

  /** `--json` as parsed (undefined until the flags are parsed). */
  private jsonFlag: boolean | undefined;
  private jsonPrinted = false;

  protected override async init(): Promise<void> {
    await super.init();
    if (!(this.constructor as typeof JobqCommand).traced || !tracingWanted()) return;
    const tracing = await startTracing({ serviceName: serviceNameFor(this.id), version: this.config.version });
    // Flushed when the command ends, whatever way it ends.
    if (tracing !== null) closeWhenDone(() => tracing.shutdown());
  }

  protected override async parse<F extends Output, B extends Output, A extends Output>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv);
    // Old spellings of duration flags (docs/cli.md#conventions): one warning line each, then read as the new flag.
    for (const warning of takeLegacyDurationFlags(parsed.flags)) process.stderr.write(`jobq: warning: ${warning}\n`);
    this.jsonFlag = (parsed.flags as { json?: unknown }).json === true;
    return parsed;
  }

  /** Writes one JSON document to stdout. */
  protected printJson(value: unknown): void {
    this.jsonPrinted = true;
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Whether a failure prints the JSON error document: `--json` given (or, when parsing failed, on the command line) and no document printed yet. */
  private jsonErrorWanted(): boolean {
    const ctor = this.constructor as typeof JobqCommand;
    if (!ctor.jsonOutput || ctor.flags?.json === undefined || this.jsonPrinted) return false;
    if (this.jsonFlag !== undefined) return this.jsonFlag;
    const end = this.argv.indexOf('--');
    return (end === -1 ? this.argv : this.argv.slice(0, end)).includes('--json');
  }

  /** Exits with `exitCode` after the JSON error document, when one is wanted. */
  private fail(error: unknown, exitCode: number): never {
    if (this.jsonErrorWanted()) {
      const message = maskSecret(oneLine(errorMessage(error)));
      this.printJson({ error: { code: jsonErrorCode(error, exitCode), message } });
    }
    return this.exit(exitCode);
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
      return this.fail(error, error.exitCode);
    }
    // oclif's own parse errors (unknown flag, missing argument, bad option) are usage errors: exit 2.
    if (error instanceof Errors.CLIError && !(error instanceof UsageError)) {
      process.stderr.write(`jobq: ${maskSecret(parseErrorLine(error, this.id, this.config))}\n`);
      if (debug) process.stderr.write(`${maskSecret(error.stack ?? '')}\n`);
      const exit = error.oclif?.exit;
      return this.fail(error, typeof exit === 'number' ? exit : 2);
    }
    process.stderr.write(`jobq: ${errorLine(error)}\n`);
    if (debug) process.stderr.write(`${maskSecret(error.stack ?? '')}\n`);
    return this.fail(error, error instanceof UsageError ? 2 : 1);
  }
}
