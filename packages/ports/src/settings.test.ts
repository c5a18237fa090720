import { resolveSettings, type ResolvedSettings, type SettingDefaults } from './settings';

interface PumpOptions {
  /** Batch size. */
  batch?: number;
  /** Idle wait (null: none). */
  idleInMs?: number | null;
  verbose?: boolean;
  log?: (line: string) => void;
  name?: string;
}

const PUMP_DEFAULTS: SettingDefaults<PumpOptions> = { batch: 8, idleInMs: null, verbose: false };
type PumpSettings = ResolvedSettings<typeof PUMP_DEFAULTS>;

describe('resolveSettings', () => {
  it('takes each given value, and the default for one absent, undefined or null', () => {
    expect(resolveSettings<PumpSettings>(PUMP_DEFAULTS, undefined)).toStrictEqual({ batch: 8, idleInMs: null, verbose: false });
    expect(resolveSettings<PumpSettings>(PUMP_DEFAULTS, { batch: 3, idleInMs: 50, verbose: true })).toStrictEqual({
      batch: 3,
      idleInMs: 50,
      verbose: true,
    });
    expect(resolveSettings<PumpSettings>(PUMP_DEFAULTS, { batch: undefined, idleInMs: null })).toStrictEqual({
      batch: 8,
      idleInMs: null,
      verbose: false,
    });
  });

  it('reads only the table’s keys: other options do not show up in the settings', () => {
    const options: PumpOptions = { batch: 2, log: () => undefined, name: 'x' };
    expect(Object.keys(resolveSettings<PumpSettings>(PUMP_DEFAULTS, options)).sort()).toStrictEqual(['batch', 'idleInMs', 'verbose']);
  });

  it('rounds down, then raises to min, then lowers to max; a function range may refuse a value', () => {
    const ranges = { batch: { integer: true, min: 1, max: 16 } } as const;
    const batch = (given: number) => resolveSettings<PumpSettings>(PUMP_DEFAULTS, { batch: given }, ranges).batch;
    expect([batch(3.9), batch(0.5), batch(-4), batch(99), batch(16.5)]).toStrictEqual([3, 1, 1, 16, 16]);
    expect(resolveSettings<PumpSettings>(PUMP_DEFAULTS, {}, ranges).batch).toBe(8);
    const refuse = {
      batch: (n: number) => {
        if (n > 10) throw new RangeError(`batch must be at most 10, got ${n}`);
        return n;
      },
    };
    expect(() => resolveSettings<PumpSettings>(PUMP_DEFAULTS, { batch: 11 }, refuse)).toThrow('batch must be at most 10, got 11');
    expect(resolveSettings<PumpSettings>(PUMP_DEFAULTS, { batch: 10 }, refuse).batch).toBe(10);
  });

  it('ties the defaults table to the options interface (checked by the type checker)', () => {
    // @ts-expect-error a setting of the interface without a default
    const missing: SettingDefaults<PumpOptions> = { batch: 1, idleInMs: null };
    // @ts-expect-error a default the interface does not have
    const extra: SettingDefaults<PumpOptions> = { batch: 1, idleInMs: null, verbose: false, depth: 2 };
    expect([missing, extra]).toHaveLength(2);
  });
});
