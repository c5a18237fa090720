/** How long a stopped task gets between SIGTERM and SIGKILL unless `JOBQ_KILL_TIMEOUT` says otherwise (docs/design.md#cancellation-on-the-worker). */
export const DEFAULT_KILL_TIMEOUT_IN_MS = 600_000;

/** Kept for compatibility: the duration grammar lives in `@jobq/ports` (docs/cli.md#conventions). */
export { parseDurationInMs } from '@jobq/ports';
