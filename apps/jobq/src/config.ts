import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { isStorageAccountName } from '@jobq/dag-core';
import { errorMessage, parseWorkflowPrefix, type WorkflowPrefix } from '@jobq/ports';
import { durationMs } from './duration-flags';
import { UsageError } from './errors';
import { serviceBusNamespaceProblem } from './servicebus-access';

/** Where a configuration value came from (docs/cli.md#conventions precedence: flag → environment → file → default). */
export type ValueSource = 'flag' | 'env' | 'file' | 'default';

export interface Resolved<T> {
  value: T;
  source: ValueSource;
  /** The flag, environment variable or file key the value came from (null for defaults). */
  from: string | null;
  /** Never printed in full (connection strings). */
  secret?: boolean;
}

/** The coordinator settings (docs/azure.md#configuration): flag name, environment variable, file key, default. */
export const COORDINATOR_SETTINGS = [
  {
    key: 'batchSize',
    description: 'Completion messages taken per receive',
    flag: 'batch-size',
    env: 'JOBQ_COMPLETION_BATCH_SIZE',
    file: 'batch_size',
    default: 32,
    integer: true,
    min: 1,
    max: 32,
  },
  {
    key: 'visibilityTimeoutS',
    description: 'How long a received completion stays hidden before redelivery',
    flag: 'visibility-timeout',
    legacyFlag: 'visibility-timeout-s',
    env: 'JOBQ_COMPLETION_VISIBILITY_TIMEOUT_S',
    file: 'visibility_timeout_s',
    default: 60,
    integer: false,
    min: 1,
    max: 7 * 24 * 3600,
  },
  {
    key: 'pipelineDepth',
    description:
      'Completion batches received and folded at once: the next is received, folded and its tasks sent while earlier ones are saved; up to 8× as many may wait for their save (1 = one at a time)',
    flag: 'pipeline-depth',
    env: 'JOBQ_COORDINATOR_PIPELINE_DEPTH',
    file: 'pipeline_depth',
    default: 8,
    integer: true,
    min: 1,
    max: 16,
  },
  {
    key: 'idleSleepS',
    description: 'Sleep after a receive error',
    flag: 'idle-sleep',
    time: true,
    env: 'JOBQ_COORDINATOR_IDLE_SLEEP_S',
    file: 'idle_sleep_s',
    default: 0.5,
    integer: false,
    min: 0,
    max: 3600,
  },
  {
    key: 'cancelPollIntervalS',
    description: 'Time between scans for cancel/retry requests whose wake-up was lost and never-activated workflows',
    flag: 'cancel-poll-interval',
    legacyFlag: 'cancel-poll-interval-s',
    env: 'JOBQ_COORDINATOR_CANCEL_POLL_INTERVAL_S',
    file: 'cancel_poll_interval_s',
    default: 1.0,
    integer: false,
    min: 0.05,
    max: 3600,
  },
  {
    key: 'flushRetryLimit',
    description: 'Re-reads after a 412 on the flush before the messages are left for redelivery',
    flag: 'flush-retry-limit',
    env: 'JOBQ_COORDINATOR_FLUSH_RETRY_LIMIT',
    file: 'flush_retry_limit',
    default: 2,
    integer: true,
    min: 0,
    max: 100,
  },
  {
    key: 'readySweepIntervalS',
    description: 'Time between ready-repair sweeps',
    flag: 'ready-sweep-interval',
    legacyFlag: 'ready-sweep-interval-s',
    env: 'JOBQ_COORDINATOR_READY_SWEEP_INTERVAL_S',
    file: 'ready_sweep_interval_s',
    default: 60,
    integer: false,
    min: 0.1,
    max: 86_400,
  },
  {
    key: 'readyRepairThresholdS',
    description: 'How long a runtime must be unchanged before ready-repair re-dispatches its ready tasks',
    flag: 'ready-repair-threshold',
    legacyFlag: 'ready-repair-threshold-s',
    env: 'JOBQ_COORDINATOR_READY_REPAIR_THRESHOLD_S',
    file: 'ready_repair_threshold_s',
    default: 300,
    integer: false,
    min: 0,
    max: 86_400 * 7,
  },
  {
    key: 'timeoutSweepIntervalS',
    description: 'Time between lost-task sweeps',
    flag: 'timeout-sweep-interval',
    legacyFlag: 'timeout-sweep-interval-s',
    env: 'JOBQ_COORDINATOR_TIMEOUT_SWEEP_INTERVAL_S',
    file: 'timeout_sweep_interval_s',
    default: 30,
    integer: false,
    min: 0.1,
    max: 86_400,
  },
  {
    key: 'taskMessageTtlS',
    description:
      'How long a task message lives in its queue (0 = never expires); a running task with timeout_s counts as lost this long + timeout_s + 15 min after its dispatch',
    flag: 'task-message-ttl',
    legacyFlag: 'task-message-ttl-s',
    env: 'JOBQ_TASK_MESSAGE_TTL_S',
    file: 'task_message_ttl_s',
    default: 7 * 86_400,
    integer: false,
    min: 0,
    max: 365 * 86_400,
  },
  {
    key: 'maxDeliveries',
    description:
      'Deliveries of a completion or wake-up that cannot be applied before it goes to the dead-letter queue (storage outages do not count)',
    flag: 'max-deliveries',
    env: 'JOBQ_MAX_DELIVERIES',
    file: 'max_deliveries',
    default: 20,
    integer: true,
    min: 1,
    max: 1_000,
  },
  {
    key: 'retentionS',
    description:
      'Purge finished workflows (outputs included) this long after they finished: a duration such as 30d or 12h, or seconds; 0 keeps them',
    flag: 'retention',
    env: 'JOBQ_COORDINATOR_RETENTION',
    file: 'retention',
    default: 0,
    integer: false,
    min: 0,
    max: 100 * 365 * 86_400,
    duration: true,
  },
  {
    key: 'shards',
    description:
      'Shards of the deployment (1, 2, 4, 8 or 16; docs/sharding.md): creates the shard manifest, or must match it; without it, the manifest says (none: one shard, one coordinator)',
    flag: 'shards',
    env: 'JOBQ_WORKFLOW_SHARDS',
    file: 'shards',
    default: 1,
    integer: true,
    min: 1,
    max: 16,
    values: [1, 2, 4, 8, 16],
    sharding: true,
  },
  {
    key: 'balanceIntervalS',
    description: 'Time between balancing rounds of a sharded coordinator, a duration such as 10s (each one ±20 % at random)',
    flag: 'balance-interval',
    env: 'JOBQ_COORDINATOR_BALANCE_INTERVAL',
    file: 'balance_interval',
    default: 10,
    integer: false,
    min: 1,
    max: 3600,
    duration: true,
    sharding: true,
  },
] as const;

/** True for the settings only a sharded `workflow coordinator` takes (docs/sharding.md#running-sharded-coordinators). */
export function isShardingSetting(setting: (typeof COORDINATOR_SETTINGS)[number]): boolean {
  return 'sharding' in setting && setting.sharding;
}

/**
 * True for the settings whose flag takes a duration (docs/cli.md#conventions: `30s`, `10m`, or seconds); their value is
 * in seconds. The old `-s` spellings of their flags (`legacyFlag`) stay as deprecated aliases for one minor version.
 */
export function isTimeSetting(setting: (typeof COORDINATOR_SETTINGS)[number]): boolean {
  return 'time' in setting || 'legacyFlag' in setting || isDurationSetting(setting);
}

/** True for the settings also given as a duration in the environment and the config file (`30d`, `12h`, or seconds), shown as one. */
export function isDurationSetting(setting: (typeof COORDINATOR_SETTINGS)[number]): boolean {
  return 'duration' in setting && setting.duration;
}

/** A setting's text (flag or environment variable) as its number: seconds for a duration setting. */
export function parseSettingText(text: string, setting: (typeof COORDINATOR_SETTINGS)[number], where: string): number {
  if (isDurationSetting(setting)) return durationMs(text, where) / 1000;
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new UsageError(`${where}: "${text}" is not a number`);
  return value;
}

export type CoordinatorSettingKey = (typeof COORDINATOR_SETTINGS)[number]['key'];

/** The resolved configuration of one command run. */
export interface CliConfig {
  /** The config file read, or null. */
  file: string | null;
  /** `ACCOUNT/PREFIX`; null when nothing configures it. */
  prefix: Resolved<WorkflowPrefix | null>;
  /** `JOBQ_WORKFLOW_QUEUES`: `ACCOUNT` or `sb://NAMESPACE`; null = the prefix's account. */
  queues: Resolved<string | null>;
  /** `JOBQ_WORKFLOW_BLOBS`: `ACCOUNT/CONTAINER`; null = container `{p}-outputs` on the prefix's account. */
  blobs: Resolved<string | null>;
  /** A storage connection string (Azurite or an account key); null = `DefaultAzureCredential`. */
  connectionString: Resolved<string | null>;
  /**
   * `JOBQ_SERVICEBUS_CONNECTION_STRING`: used for the Service Bus namespace its Endpoint names and
   * for `sb://local`; null = `DefaultAzureCredential` (see `servicebus-access.ts`).
   */
  serviceBusConnectionString: Resolved<string | null>;
  /**
   * `JOBQ_SERVICEBUS_ADMIN_ENDPOINT`: the admin (HTTP) endpoint of a local Service Bus broker, for
   * a `UseDevelopmentEmulator=true` connection string (creating queues, reading their properties
   * and counts); ignored for other connection strings.
   */
  serviceBusAdminEndpoint: Resolved<string | null>;
  coordinator: Record<CoordinatorSettingKey, Resolved<number>>;
}

/** What the commands hand to {@link resolveConfig}. */
export interface ConfigInputs {
  /** `--config PATH`. */
  configPath?: string | undefined;
  prefix?: string | undefined;
  queues?: string | undefined;
  blobs?: string | undefined;
  /** Coordinator flags by setting key. */
  coordinator?: Partial<Record<CoordinatorSettingKey, number | undefined>>;
}

/** An environment variable, with empty counting as unset (docs/design.md#names). */
function env(environment: NodeJS.ProcessEnv, name: string): string | null {
  const value = environment[name];
  return value === undefined || value.trim() === '' ? null : value.trim();
}

const FILE_SECTIONS = {
  connection: ['prefix', 'queues', 'blobs', 'connection_string', 'servicebus_connection_string', 'servicebus_admin_endpoint'],
  coordinator: COORDINATOR_SETTINGS.map((s) => s.file) as string[],
} as const;

type FileValues = { connection: Record<string, unknown>; coordinator: Record<string, unknown> };

/** Reads and checks a config file: two sections, known keys only. */
export function readConfigFile(path: string): FileValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`config file ${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new UsageError(`config file ${path} is not valid YAML: ${errorMessage(error).split('\n')[0]}`);
  }
  const out: FileValues = { connection: {}, coordinator: {} };
  if (doc === null || doc === undefined) return out;
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new UsageError(`config file ${path}: the top level must be a mapping with "connection" and/or "coordinator"`);
  for (const [section, body] of Object.entries(doc as Record<string, unknown>)) {
    if (section !== 'connection' && section !== 'coordinator') {
      throw new UsageError(`config file ${path}: unknown section "${section}" (expected "connection" or "coordinator")`);
    }
    if (body === null || body === undefined) continue;
    if (typeof body !== 'object' || Array.isArray(body)) throw new UsageError(`config file ${path}: "${section}" must be a mapping`);
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      if (!(FILE_SECTIONS[section] as readonly string[]).includes(key)) {
        throw new UsageError(`config file ${path}: unknown key "${section}.${key}" (known: ${FILE_SECTIONS[section].join(', ')})`);
      }
      out[section][key] = value;
    }
  }
  return out;
}

/** The config file to read: `--config`, then `JOBQ_WORKFLOW_CONFIG` (both must exist), then `./jobq.yaml` when present. */
export function findConfigFile(configPath: string | undefined, environment: NodeJS.ProcessEnv, cwd: string): string | null {
  const explicit = configPath ?? env(environment, 'JOBQ_WORKFLOW_CONFIG');
  if (explicit !== null && explicit !== undefined) {
    const path = resolve(cwd, explicit);
    if (!existsSync(path)) {
      throw new UsageError(
        `config file ${explicit} does not exist (from ${configPath !== undefined ? '--config' : 'JOBQ_WORKFLOW_CONFIG'})`,
      );
    }
    return path;
  }
  const local = resolve(cwd, 'jobq.yaml');
  return existsSync(local) ? local : null;
}

function fileString(file: FileValues, key: string, path: string): string | null {
  const value = file.connection[key];
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw new UsageError(`config file ${path}: "connection.${key}" must be a string`);
  return value.trim() === '' ? null : value.trim();
}

function pick<T>(candidates: Array<{ value: T | null | undefined; source: ValueSource; from: string }>, fallback: T): Resolved<T> {
  for (const c of candidates) {
    if (c.value !== null && c.value !== undefined) return { value: c.value, source: c.source, from: c.from };
  }
  return { value: fallback, source: 'default', from: null };
}

function parseNumber(text: string, setting: (typeof COORDINATOR_SETTINGS)[number], where: string): number {
  return checkNumber(parseSettingText(text, setting, where), setting, where);
}

function checkNumber(value: number, setting: (typeof COORDINATOR_SETTINGS)[number], where: string): number {
  if ('values' in setting && !(setting.values as readonly number[]).includes(value))
    throw new UsageError(`${where}: ${value} is not allowed (one of ${setting.values.join(', ')})`);
  if (setting.integer && !Number.isInteger(value)) throw new UsageError(`${where}: ${value} must be a whole number`);
  if (value < setting.min || value > setting.max)
    throw new UsageError(`${where}: ${value} must be between ${setting.min} and ${setting.max}`);
  return value;
}

/**
 * Resolves every setting (docs/cli.md#conventions): flag → environment → config file → default. Empty
 * environment variables count as unset. Malformed values are usage errors naming where they came
 * from; no value is ever echoed when it is a connection string.
 */
export function resolveConfig(inputs: ConfigInputs, environment: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): CliConfig {
  for (const legacy of ['JOBQ_WORKFLOW_STATE', 'JOBQ_WORKFLOW']) {
    if (env(environment, legacy) !== null)
      throw new UsageError(`${legacy} is no longer read: set JOBQ_WORKFLOW_PREFIX=ACCOUNT/PREFIX instead`);
  }
  const path = findConfigFile(inputs.configPath, environment, cwd);
  const file = path === null ? { connection: {}, coordinator: {} } : readConfigFile(path);
  const filePath = path ?? '';

  const prefixText = pick<string>(
    [
      { value: inputs.prefix, source: 'flag', from: '--prefix' },
      { value: env(environment, 'JOBQ_WORKFLOW_PREFIX'), source: 'env', from: 'JOBQ_WORKFLOW_PREFIX' },
      { value: path === null ? null : fileString(file, 'prefix', filePath), source: 'file', from: 'connection.prefix' },
    ],
    '',
  );
  const prefix: Resolved<WorkflowPrefix | null> =
    prefixText.source === 'default'
      ? { value: null, source: 'default', from: null }
      : { ...prefixText, value: parsePrefixOrUsage(prefixText.value, prefixText.from ?? 'prefix') };

  const stringSetting = (flag: string | undefined, flagName: string, envName: string, fileKey: string): Resolved<string | null> =>
    pick<string | null>(
      [
        { value: flag, source: 'flag', from: flagName },
        { value: env(environment, envName), source: 'env', from: envName },
        { value: path === null ? null : fileString(file, fileKey, filePath), source: 'file', from: `connection.${fileKey}` },
      ],
      null,
    );
  const queues = stringSetting(inputs.queues, '--queues', 'JOBQ_WORKFLOW_QUEUES', 'queues');
  if (queues.value !== null) {
    if (queues.value.startsWith('sb://')) {
      const problem = serviceBusNamespaceProblem(queues.value.slice('sb://'.length));
      if (problem !== null) throw new UsageError(`${queues.from}: "${queues.value}" is not sb://NAMESPACE: ${problem}`);
    } else if (!isStorageAccountName(queues.value)) {
      throw new UsageError(`${queues.from}: "${queues.value}" must be a storage ACCOUNT or sb://NAMESPACE`);
    }
  }
  const blobs = stringSetting(inputs.blobs, '--blobs', 'JOBQ_WORKFLOW_BLOBS', 'blobs');
  if (blobs.value !== null && !/^[a-z0-9]{3,24}\/[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/.test(blobs.value)) {
    throw new UsageError(`${blobs.from}: "${blobs.value}" must be ACCOUNT/CONTAINER`);
  }

  const connectionString: Resolved<string | null> = {
    ...pick<string | null>(
      [
        { value: env(environment, 'JOBQ_STORAGE_CONNECTION_STRING'), source: 'env', from: 'JOBQ_STORAGE_CONNECTION_STRING' },
        { value: env(environment, 'AZURE_STORAGE_CONNECTION_STRING'), source: 'env', from: 'AZURE_STORAGE_CONNECTION_STRING' },
        {
          value: path === null ? null : fileString(file, 'connection_string', filePath),
          source: 'file',
          from: 'connection.connection_string',
        },
      ],
      null,
    ),
    secret: true,
  };
  const serviceBusConnectionString: Resolved<string | null> = {
    ...pick<string | null>(
      [
        { value: env(environment, 'JOBQ_SERVICEBUS_CONNECTION_STRING'), source: 'env', from: 'JOBQ_SERVICEBUS_CONNECTION_STRING' },
        {
          value: path === null ? null : fileString(file, 'servicebus_connection_string', filePath),
          source: 'file',
          from: 'connection.servicebus_connection_string',
        },
      ],
      null,
    ),
    secret: true,
  };
  const serviceBusAdminEndpoint = pick<string | null>(
    [
      { value: env(environment, 'JOBQ_SERVICEBUS_ADMIN_ENDPOINT'), source: 'env', from: 'JOBQ_SERVICEBUS_ADMIN_ENDPOINT' },
      {
        value: path === null ? null : fileString(file, 'servicebus_admin_endpoint', filePath),
        source: 'file',
        from: 'connection.servicebus_admin_endpoint',
      },
    ],
    null,
  );
  if (serviceBusAdminEndpoint.value !== null && !/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?\/?$/.test(serviceBusAdminEndpoint.value)) {
    throw new UsageError(
      `${serviceBusAdminEndpoint.from}: "${serviceBusAdminEndpoint.value}" must be http://HOST:PORT (the admin endpoint of a local Service Bus broker)`,
    );
  }

  const coordinator = {} as Record<CoordinatorSettingKey, Resolved<number>>;
  for (const setting of COORDINATOR_SETTINGS) {
    const flagValue = inputs.coordinator?.[setting.key];
    const envText = env(environment, setting.env);
    const fileValue = file.coordinator[setting.file];
    if (flagValue !== undefined) {
      coordinator[setting.key] = { value: checkNumber(flagValue, setting, `--${setting.flag}`), source: 'flag', from: `--${setting.flag}` };
    } else if (envText !== null) {
      coordinator[setting.key] = { value: parseNumber(envText, setting, setting.env), source: 'env', from: setting.env };
    } else if (fileValue !== undefined && fileValue !== null) {
      const where = `config file ${filePath}: coordinator.${setting.file}`;
      let value: number;
      if (typeof fileValue === 'number') value = fileValue;
      else if (typeof fileValue === 'string' && isDurationSetting(setting)) value = parseSettingText(fileValue, setting, where);
      else throw new UsageError(`${where} must be a number${isDurationSetting(setting) ? ' of seconds or a duration such as 30d' : ''}`);
      coordinator[setting.key] = { value: checkNumber(value, setting, where), source: 'file', from: `coordinator.${setting.file}` };
    } else {
      coordinator[setting.key] = { value: setting.default, source: 'default', from: null };
    }
  }
  return { file: path, prefix, queues, blobs, connectionString, serviceBusConnectionString, serviceBusAdminEndpoint, coordinator };
}

function parsePrefixOrUsage(text: string, from: string): WorkflowPrefix {
  try {
    return parseWorkflowPrefix(text, from);
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

/** True when a prefix is configured (positional/flag, non-empty `JOBQ_WORKFLOW_PREFIX`, or a config file). */
export function storageConfigured(config: CliConfig): boolean {
  return config.prefix.value !== null;
}

/** A connection string with its key and signature masked, for display. */
export function maskSecret(text: string): string {
  return text.replace(/(AccountKey|SharedAccessSignature|SharedAccessKey|sig)=([^;&\s"']*)/gi, (_m, key: string) => `${key}=***`);
}

/** `prefix` or a clear usage error naming every way to set it. */
export function requirePrefix(config: CliConfig): WorkflowPrefix {
  if (config.prefix.value === null) {
    throw new UsageError(
      'no workflow prefix configured: pass ACCOUNT/PREFIX (jobq workflow ACCOUNT/PREFIX <command>), set JOBQ_WORKFLOW_PREFIX, or put connection.prefix in jobq.yaml',
    );
  }
  return config.prefix.value;
}
