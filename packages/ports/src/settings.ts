/**
 * Settings declared once (docs/architecture.md#conventions): a component's options interface
 * names and documents each setting, one defaults table gives each its default, and
 * {@link resolveSettings} merges what the caller gave over the table. The table is checked against
 * the interface ({@link SettingDefaults}), so a setting added to one and not the other does not compile.
 */

/** The keys of an options type whose values are numbers or booleans (null allowed): its settings. */
export type SettingKeys<O> = {
  [K in keyof O]-?: [Exclude<O[K], undefined | null>] extends [never]
    ? never
    : Exclude<O[K], undefined | null> extends number | boolean
      ? K
      : never;
}[keyof O];

/** A defaults table for the settings of an options type: every setting, with a value of its type. */
export type SettingDefaults<O> = { readonly [K in SettingKeys<O>]-?: Exclude<O[K], undefined> };

/** The resolved settings of a defaults table: each value widened from its literal type, writable. */
export type ResolvedSettings<D> = {
  -readonly [K in keyof D]: D[K] extends boolean ? boolean : D[K] extends number ? number : D[K];
};

/**
 * How a given value is brought into its range: rounded down to an integer (`integer`), then raised
 * to `min`, then lowered to `max` — or a function that returns the value to use or throws a
 * `RangeError`/`JobqError` saying what is wrong.
 */
export type SettingRange<T> = { readonly integer?: boolean; readonly min?: number; readonly max?: number } | ((value: T) => T);

/** The ranges of some settings of a resolved type (settings without one are taken as given). */
export type SettingRanges<S> = { readonly [K in keyof S]?: SettingRange<S[K]> };

/**
 * The settings `S`: each one the caller's value (absent, `undefined` or `null`: the default),
 * brought into its range. Only the table's keys are read, so an `undefined` in `options` never
 * hides a default and other options (a clock, a log) are left alone.
 */
export function resolveSettings<S extends object>(
  defaults: { readonly [K in keyof S]: S[K] },
  options: { readonly [K in keyof S]?: S[K] | undefined } | undefined,
  ranges: SettingRanges<S> = {},
): S {
  const out = {} as S;
  for (const key of Object.keys(defaults) as (keyof S)[]) {
    const given = options?.[key] ?? defaults[key];
    const range = ranges[key];
    out[key] = range === undefined ? given : inRange(given, range);
  }
  return out;
}

function inRange<T>(value: T, range: SettingRange<T>): T {
  if (typeof range === 'function') return range(value);
  if (typeof value !== 'number') return value;
  let n: number = value;
  if (range.integer === true) n = Math.floor(n);
  if (range.min !== undefined) n = Math.max(range.min, n);
  if (range.max !== undefined) n = Math.min(range.max, n);
  return n as T;
}
