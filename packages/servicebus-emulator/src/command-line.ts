/**
 * The command line of `jobq-servicebus-emulator`: flags and a JSON config file (the options of
 * `startServiceBus` but `now`), flags winning over the file.
 */
import { readFileSync } from 'node:fs';
import type { ServiceBusOptions } from './emulator';
import { errorText } from './error-text';

export const USAGE = `Usage: jobq-servicebus-emulator [--port N] [--admin-port N] [--config FILE] [--ready-line]

An AMQP 1.0 broker with Azure Service Bus queue semantics on 127.0.0.1, for @azure/service-bus
clients (connection strings with UseDevelopmentEmulator=true). Nothing is persisted.

  --port N         AMQP port (default 5672; 0 picks a free one)
  --admin-port N   HTTP admin port for ServiceBusAdministrationClient (default 5300; 0 picks a free one)
  --config FILE    JSON options: sasKeyName, sasKey, autoCreateQueues, queues, defaults, limits,
                   profile ("azure" or "emulator"), lockDurationFloorMs
  --ready-line     print one JSON line (ports, connection string, admin endpoint) once listening,
                   answer each "stats" line on stdin with one JSON line {"stats": …} on stdout,
                   and exit when stdin closes (how a parent process runs it)
  --help           this text

It prints the connection string once listening and runs until SIGINT or SIGTERM.`;

export interface CommandLine {
  help: boolean;
  readyLine: boolean;
  options: ServiceBusOptions;
}

export class UsageError extends Error {}

const CONFIG_KEYS = new Set([
  'sasKeyName',
  'sasKey',
  'autoCreateQueues',
  'queues',
  'defaults',
  'limits',
  'profile',
  'lockDurationFloorMs',
  'port',
  'adminPort',
]);

function portOf(flag: string, value: string | undefined): number {
  const port = Number(value);
  if (value === undefined || value === '' || !Number.isInteger(port) || port < 0 || port > 65_535)
    throw new UsageError(`${flag} needs a port number (0–65535), got ${value === undefined ? 'nothing' : JSON.stringify(value)}`);
  return port;
}

function readConfig(file: string): ServiceBusOptions {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--config ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return configOf(`--config ${file}`, text);
}

function configOf(file: string, text: string): ServiceBusOptions {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not JSON (${errorText(error)})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${file}: must hold a JSON object`);
  for (const key of Object.keys(parsed))
    if (!CONFIG_KEYS.has(key)) throw new UsageError(`${file}: unknown option "${key}" (known: ${[...CONFIG_KEYS].join(', ')})`);
  const options = parsed as Record<string, unknown>;
  const expect = (key: string, ok: (v: unknown) => boolean, what: string) => {
    const v = options[key];
    if (v !== undefined && !ok(v)) throw new UsageError(`${file}: "${key}" must be ${what} (got ${JSON.stringify(v).slice(0, 60)})`);
  };
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  expect('port', (v) => typeof v === 'number', 'a port number');
  expect('adminPort', (v) => v === null || typeof v === 'number', 'a port number or null');
  expect('sasKeyName', (v) => typeof v === 'string', 'a string');
  expect('sasKey', (v) => typeof v === 'string', 'a string');
  expect('autoCreateQueues', (v) => typeof v === 'boolean', 'true or false');
  expect('profile', (v) => v === 'azure' || v === 'emulator', '"azure" or "emulator"');
  expect('lockDurationFloorMs', (v) => typeof v === 'number', 'a number');
  expect('defaults', isObject, 'an object');
  expect('limits', isObject, 'an object');
  const isQueue = (q: unknown) => {
    if (typeof q === 'string') return true;
    if (!isObject(q)) return false;
    const { name, properties } = q as { name?: unknown; properties?: unknown };
    return typeof name === 'string' && (properties === undefined || isObject(properties));
  };
  expect('queues', (v) => Array.isArray(v) && v.every(isQueue), 'a list of names or { name, properties } objects');
  if (isObject(options.defaults)) neverAsInfinity(options.defaults as Record<string, unknown>);
  if (isObject(options.limits)) neverAsInfinity(options.limits as Record<string, unknown>);
  for (const q of (options.queues as unknown[] | undefined) ?? []) {
    const properties: unknown = typeof q === 'object' && q !== null ? (q as { properties?: unknown }).properties : undefined;
    if (isObject(properties)) neverAsInfinity(properties as Record<string, unknown>);
  }
  return options;
}

/** Time-to-live properties whose "never" (Infinity, JSON's null) a config may spell `null` or `"Infinity"`. */
const NEVER_AS_NULL = new Set(['defaultMessageTimeToLiveMs', 'maxMessageTimeToLiveMs']);

/**
 * JSON has no Infinity: `"Infinity"` stands for it in any numeric option, and `null` too in the
 * time-to-live ones (README, "In a child process, and from the command line"). Other values are
 * left for `startServiceBus` to check.
 */
function neverAsInfinity(properties: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(properties)) {
    if (value === 'Infinity' || (value === null && NEVER_AS_NULL.has(key))) properties[key] = Infinity;
  }
}

/** `env.JOBQ_SERVICEBUS_EMULATOR_CONFIG` (JSON, how `startServiceBusProcess` passes options) is read first; `--config` replaces it. */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv = {}): CommandLine {
  const fromEnv = env['JOBQ_SERVICEBUS_EMULATOR_CONFIG'];
  let options: ServiceBusOptions = fromEnv === undefined || fromEnv === '' ? {} : configOf('JOBQ_SERVICEBUS_EMULATOR_CONFIG', fromEnv);
  let port: number | undefined;
  let adminPort: number | undefined;
  let readyLine = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    if (flag === '--help' || flag === '-h') return { help: true, readyLine: false, options: {} };
    else if (flag === '--port') port = portOf('--port', value());
    else if (flag === '--admin-port') adminPort = portOf('--admin-port', value());
    else if (flag === '--config') {
      const file = value();
      if (file === undefined) throw new UsageError('--config needs a file');
      options = readConfig(file);
    } else if (flag === '--ready-line') readyLine = true;
    else throw new UsageError(`unknown argument ${JSON.stringify(arg)} (see --help)`);
  }
  return {
    help: false,
    readyLine,
    options: { ...options, port: port ?? options.port ?? 5672, adminPort: adminPort ?? options.adminPort ?? 5300 },
  };
}
