import { toConfiguredId, type Interfaces } from '@oclif/core';

/** oclif's parse errors end with this line (`CLIParseError`). */
const SEE_MORE = /\n?See more help with --help\s*$/;

/** A multi-line message (oclif's "Missing 1 required arg:\nfile …") folded into one line. */
export function oneLine(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
}

/** What a missing argument looks like on oclif's `RequiredArgsError`. */
interface MissingArg {
  name: string;
  description?: string;
}

function isRequiredArgsError(error: Error): error is Error & { args: MissingArg[] } {
  const args = (error as { args?: unknown }).args;
  return (
    /^Missing \d+ required args?\b/.test(error.message) &&
    Array.isArray(args) &&
    args.every((a) => typeof (a as MissingArg)?.name === 'string')
  );
}

/** `Workflow id` → `workflow id` (an acronym such as `URL` stays). */
function lowerFirst(text: string): string {
  return /^[A-Z][a-z]/.test(text) ? `${text[0]!.toLowerCase()}${text.slice(1)}` : text;
}

function describeArg(arg: MissingArg): string {
  const name = arg.name.toUpperCase();
  return arg.description ? `${name} (${lowerFirst(arg.description)})` : name;
}

/**
 * One line for an oclif parse error (missing argument, unknown flag, bad option; docs/cli.md#conventions):
 * `missing argument ID (workflow id); see "jobq workflow status --help"` instead of oclif's
 * multi-line text with "See more help with --help".
 */
export function parseErrorLine(error: Error, commandId: string | undefined, config: Interfaces.Config): string {
  const help = commandId ? `see "${config.bin} ${toConfiguredId(commandId, config)} --help"` : `see "${config.bin} --help"`;
  if (isRequiredArgsError(error)) {
    const args = error.args;
    const what = args.length === 1 ? `missing argument ${describeArg(args[0]!)}` : `missing arguments ${args.map(describeArg).join(', ')}`;
    // oclif's note when a flag taking several values came first: the arguments must go before it.
    const note = /\nNote: (.*) allows? multiple values\./.exec(error.message);
    const order = note ? `; give the arguments before ${note[1]} (or after "--")` : '';
    return `${what}${order}; ${help}`;
  }
  if (!SEE_MORE.test(error.message)) return oneLine(error.message);
  return `${oneLine(error.message.replace(SEE_MORE, ''))}; ${help}`;
}
