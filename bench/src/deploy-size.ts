/**
 * The production install of the CLI (scripts/prod-deploy.js): `pnpm --filter @jobq/cli --prod
 * deploy --legacy OUT` with its optional dependencies (what a plain `--prod deploy` gives, the
 * embedded stack included: "before") and with `--no-optional` (what the container image holds:
 * "after"). Needs the workspace built (`pnpm bench` builds it). Labelled lines on stdout, progress on
 * stderr; the lines are listed in bench/README.md.
 *
 * Usage: node dist/deploy-size.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { deployCli, measureDeploy } = require('../../scripts/prod-deploy.js') as {
  deployCli: (out: string, options?: { optional?: boolean }) => void;
  measureDeploy: (out: string) => { bytes: number; packages: number; names: string[] };
};

const progress = (message: string) => process.stderr.write(`[deploy bench] ${message}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

function measure(optional: boolean): { mb: number; packages: number; seconds: number; heavy: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'jobq-deploy-bench-'));
  try {
    const out = join(dir, 'app');
    progress(`pnpm deploy${optional ? '' : ' --no-optional'} into ${out}`);
    const started = process.hrtime.bigint();
    deployCli(out, { optional });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const size = measureDeploy(out);
    const heavy = size.names.filter((n) => /^(azurite|jest|@jest\/|@babel\/|@jobq\/local$)/.test(n));
    return { mb: size.bytes / 1e6, packages: size.packages, seconds, heavy };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

progress(`load ${load()}`);
const before = measure(true);
const after = measure(false);
process.stdout.write('\n## Production install (pnpm --filter @jobq/cli --prod deploy --legacy)\n\n');
process.stdout.write(
  `deploy with optional deps MB / package folders: ${before.mb.toFixed(1)} / ${before.packages} (azurite, jest, @babel, @jobq/local: ${before.heavy.length} folders; ${before.seconds.toFixed(1)} s)\n`,
);
process.stdout.write(
  `deploy --no-optional MB / package folders: ${after.mb.toFixed(1)} / ${after.packages} (azurite, jest, @babel, @jobq/local: ${after.heavy.length} folders; ${after.seconds.toFixed(1)} s)\n`,
);
process.stdout.write(`load average (1/5/15 min): ${load()}\n`);
