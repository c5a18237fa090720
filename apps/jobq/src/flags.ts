import { Flags } from '@oclif/core';
import { formatDuration } from '@jobq/ports';
import { UsageError } from './errors';
import {
  COORDINATOR_SETTINGS,
  isDurationSetting,
  isShardingSetting,
  isTimeSetting,
  resolveConfig,
  type CliConfig,
  type CoordinatorSettingKey,
} from './config';
import { durationMs, legacyDurationFlag } from './duration-flags';

/** The flags every command that reaches storage takes (docs/cli.md#conventions; the positional ACCOUNT/PREFIX becomes --prefix). */
export const configFlags = {
  prefix: Flags.string({
    description:
      'ACCOUNT/PREFIX of the deployment (also the positional: jobq workflow ACCOUNT/PREFIX <command>) [env: JOBQ_WORKFLOW_PREFIX]',
    helpGroup: 'CONFIGURATION',
  }),
  queues: Flags.string({
    description: "Task and completion queues: a storage ACCOUNT (default: the prefix's account) [env: JOBQ_WORKFLOW_QUEUES]",
    helpGroup: 'CONFIGURATION',
  }),
  blobs: Flags.string({
    description: "Outputs target ACCOUNT/CONTAINER (default: {prefix}-outputs on the prefix's account) [env: JOBQ_WORKFLOW_BLOBS]",
    helpGroup: 'CONFIGURATION',
  }),
  config: Flags.string({
    description: 'Config file (default: $JOBQ_WORKFLOW_CONFIG, else ./jobq.yaml when present)',
    helpGroup: 'CONFIGURATION',
  }),
};

/** A coordinator setting's default as its flag takes it: a duration (`1m`) for a time setting. */
function defaultText(s: (typeof COORDINATOR_SETTINGS)[number]): string {
  return isTimeSetting(s) && s.default > 0 ? formatDuration(Math.round(s.default * 1000)) : String(s.default);
}

type CoordinatorSetting = (typeof COORDINATOR_SETTINGS)[number];
type SettingFlag = ReturnType<ReturnType<typeof Flags.custom<number>>>;

/** The flags of `settings` (each with its env and default in its description, in the COORDINATOR help group). */
function settingFlags(settings: readonly CoordinatorSetting[]): Record<string, SettingFlag> {
  return Object.fromEntries(
    settings.flatMap((s): Array<[string, unknown]> => [
      [
        s.flag,
        Flags.custom<number>({
          description: `${s.description} (${isTimeSetting(s) && !isDurationSetting(s) ? 'a duration; ' : ''}default ${defaultText(s)}) [env: ${s.env}]`,
          helpGroup: 'COORDINATOR',
          parse: (input) => {
            if (isTimeSetting(s)) return Promise.resolve(durationMs(input, `--${s.flag}`) / 1000);
            const value = Number(input);
            if (input.trim() === '' || !Number.isFinite(value)) throw new UsageError(`--${s.flag} expects a number, got "${input}"`);
            return Promise.resolve(value);
          },
        })(),
      ],
      ...('legacyFlag' in s
        ? [[s.legacyFlag, legacyDurationFlag(s.legacyFlag, s.flag, 'seconds', (ms) => ms / 1000)] as [string, unknown]]
        : []),
    ]),
  ) as Record<string, SettingFlag>;
}

/**
 * The coordinator flags (docs/azure.md#configuration; flag → env → config file → default, resolved by {@link configFromFlags}).
 * A time setting's flag takes a duration (docs/cli.md#conventions); its old `-s` spelling is a deprecated alias in seconds.
 * The sharding settings are not among them: see {@link shardingFlags}.
 */
export const coordinatorFlags = settingFlags(COORDINATOR_SETTINGS.filter((s) => !isShardingSetting(s))) as Record<
  Exclude<CoordinatorSetting, { sharding: true }>['flag'],
  SettingFlag
>;

/** The flags of a sharded coordinator (`--shards`, `--balance-interval`; docs/sharding.md#running-sharded-coordinators), only on `workflow coordinator`. */
export const shardingFlags = settingFlags(COORDINATOR_SETTINGS.filter((s) => isShardingSetting(s))) as Record<
  Extract<CoordinatorSetting, { sharding: true }>['flag'],
  SettingFlag
>;

type ConfigFlagValues = {
  prefix?: string | undefined;
  queues?: string | undefined;
  blobs?: string | undefined;
  config?: string | undefined;
};

/** Resolves the configuration from parsed flags (config flags and, when present, coordinator flags). */
export function configFromFlags(
  flags: ConfigFlagValues & Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): CliConfig {
  const coordinator: Partial<Record<CoordinatorSettingKey, number | undefined>> = {};
  for (const s of COORDINATOR_SETTINGS) {
    const value = flags[s.flag];
    if (typeof value === 'number') coordinator[s.key] = value;
  }
  return resolveConfig({ configPath: flags.config, prefix: flags.prefix, queues: flags.queues, blobs: flags.blobs, coordinator }, env, cwd);
}
