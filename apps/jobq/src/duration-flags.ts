import { Flags } from '@oclif/core';
import { errorMessage, formatDuration, parseDurationInMs } from '@jobq/ports';
import { UsageError } from './errors';

/**
 * A duration (docs/cli.md#conventions: `30s`, `10m`, `500ms`, a bare number of seconds) in ms; a malformed one, or
 * one shorter than `minMs`, is a usage error naming `flag`.
 */
export function durationMs(text: string, flag: string, minMs = 0): number {
  let ms: number;
  try {
    ms = parseDurationInMs(text, flag);
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
  if (ms < minMs) throw new UsageError(`${flag} must be at least ${formatDuration(minMs)}, got "${text}"`);
  return ms;
}

/** The unit an old spelling of a duration flag was given in. */
type LegacyUnit = 'seconds' | 'minutes' | 'milliseconds';

const MS_PER: Record<LegacyUnit, number> = { seconds: 1_000, minutes: 60_000, milliseconds: 1 };
const SUFFIX: Record<LegacyUnit, string> = { seconds: 's', minutes: 'm', milliseconds: 'ms' };

interface LegacySpelling {
  /** The flag that replaces it (without `--`). */
  flag: string;
  unit: LegacyUnit;
  /** The replacing flag's value for this many ms (its text for a string flag, its parsed value otherwise). */
  toFlagValue: (ms: number) => unknown;
}

/** Old spellings of duration flags by name (without `--`), mapped to their replacement by {@link takeLegacyDurationFlags}. */
const LEGACY = new Map<string, LegacySpelling>();

/**
 * The old spelling of a duration flag (`--stale-running-min 60`), kept for one minor version: a hidden flag taking
 * a number in its own unit. When given, it sets `flag` (exclusive with it) and prints one deprecation line
 * ({@link takeLegacyDurationFlags}, called for every command by the base class). `toFlagValue` turns ms into the new
 * flag's value (default: its text, such as `60m`).
 */
export function legacyDurationFlag(name: string, flag: string, unit: LegacyUnit, toFlagValue: (ms: number) => unknown = formatDuration) {
  LEGACY.set(name, { flag, unit, toFlagValue });
  return Flags.custom<number>({
    hidden: true,
    exclusive: [flag],
    description: `Deprecated: use --${flag} (this one is in ${unit})`,
    parse: (input) => {
      const value = Number(input);
      if (input.trim() === '' || !Number.isFinite(value) || value < 0)
        throw new UsageError(`--${name} expects a number of ${unit}, got "${input}" (use --${flag}, a duration)`);
      return Promise.resolve(value);
    },
  })();
}

/**
 * Replaces every old spelling among parsed `flags` by its new flag (its value converted from the old unit) and
 * returns one warning line for each, such as `--stale-running-min (minutes) is deprecated: use --stale-running 90m`.
 */
export function takeLegacyDurationFlags(flags: Record<string, unknown>): string[] {
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(flags)) {
    const legacy = LEGACY.get(name);
    if (legacy === undefined || typeof value !== 'number') continue;
    const ms = Math.round(value * MS_PER[legacy.unit]);
    flags[legacy.flag] = legacy.toFlagValue(ms);
    delete flags[name];
    warnings.push(
      `--${name} (${legacy.unit}) is deprecated and goes in the next minor version: use --${legacy.flag} ${value}${SUFFIX[legacy.unit]}`,
    );
  }
  return warnings;
}
