import type { Clock } from '@jobq/ports';

/** A clock whose sleepers never wake once {@link crash} was called: the loops on it stop dead, as in a killed process. */
export function crashableClock(clock: Clock): { clock: Clock; crash(): void } {
  let crashed = false;
  const never = new Promise<void>(() => undefined);
  return {
    clock: {
      now: () => clock.now(),
      sleep: (ms, signal) => (crashed ? never : clock.sleep(ms, signal).then(() => (crashed ? never : undefined))),
    },
    crash: () => {
      crashed = true;
    },
  };
}
