import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import {
  commandOf,
  deployCommand,
  DOCKERIGNORE_PATH,
  dockerfileText,
  effective,
  execForm,
  flagsOf,
  ignored,
  parseDockerfile,
  ROOT,
  stage,
} from './dockerfile';

// deploy/docker/Dockerfile and .dockerignore, checked without Docker: dockerfile-utils' diagnostics
// and rules on dockerfile-ast's tree (deploy/README.md#images).

const text = dockerfileText();
const dockerfile = parseDockerfile(text);
const version = (JSON.parse(readFileSync(join(ROOT, 'apps', 'jobq', 'package.json'), 'utf8')) as { version: string }).version;
const args = (i: Instruction) => i.getArgumentsContent() ?? '';

describe('deploy/docker/Dockerfile', () => {
  it('has no dockerfile-utils diagnostics', () => {
    expect(
      validate(text).map((d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`),
    ).toEqual([]);
  });

  it('stages base, build, runtime; targets coordinator and worker; every image by a pinned tag, the digest a marked placeholder', () => {
    const froms = dockerfile.getFROMs();
    expect(froms.map((f) => f.getBuildStage())).toEqual(['base', 'build', 'runtime', 'coordinator', 'worker']);
    const stages = new Set(froms.map((f) => f.getBuildStage()));
    const external = froms.filter((f) => !stages.has(f.getImageName() ?? ''));
    expect(external.map((f) => `${f.getImageName()}:${f.getImageTag()}`)).toEqual(['node:22-bookworm-slim']);
    for (const f of external) expect(f.getImageTag()).toMatch(/^\d+[-.\w]*$/);
    // No digest is made up: either the placeholder comment stands, or a real one was pinned at a build.
    expect(text).toMatch(/digest: PLACEHOLDER, filled in at the first real build/);
    for (const f of external) expect([f.getImageDigest()].filter((d) => d !== null && !/^sha256:[0-9a-f]{64}$/.test(d))).toEqual([]);
    expect(text).toContain('ENV PNPM_VERSION=10.34.9');
  });

  it('build: the lockfile, workspace file and patches/ before pnpm fetch --frozen-lockfile with a cache mount; an offline frozen install; the CLI build and its prod deploy', () => {
    const build = stage(dockerfile, 'build');
    const index = (pred: (i: Instruction) => boolean) => build.findIndex(pred);
    const fetch = index((i) => i.getKeyword() === 'RUN' && /^pnpm fetch --frozen-lockfile$/.test(args(i).trim()));
    expect(fetch).toBeGreaterThan(0);
    expect(flagsOf(build[fetch]!)).toEqual([expect.stringMatching(/^--mount=type=cache,/)]);
    const copied = build
      .slice(0, fetch)
      .filter((i) => i.getKeyword() === 'COPY')
      .flatMap((i) => args(i).split(/\s+/).slice(0, -1));
    expect(copied.sort()).toEqual(['patches/', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']);
    const install = index((i) => i.getKeyword() === 'RUN' && args(i).includes('pnpm install'));
    expect(args(build[install]!)).toMatch(/pnpm install --offline --frozen-lockfile/);
    expect(install).toBeGreaterThan(index((i) => i.getKeyword() === 'COPY' && args(i).trim() === '. .'));
    expect(build.some((i) => i.getKeyword() === 'RUN' && args(i).includes('turbo run build --filter=@jobq/cli...'))).toBe(true);
    expect(deployCommand(dockerfile)).toEqual(['pnpm', '--filter', '@jobq/cli', '--prod', 'deploy', '--legacy', '--no-optional', '/out']);
    // Every install in the file is frozen.
    for (const run of dockerfile.getInstructions().filter((i) => i.getKeyword() === 'RUN' && /pnpm (install|fetch)/.test(args(i))))
      expect(args(run)).toContain('--frozen-lockfile');
  });

  it('runtime: Debian tini, /app from the build stage only, NODE_ENV=production, a numeric non-root USER, the version label', () => {
    const runtime = stage(dockerfile, 'runtime');
    expect(runtime.some((i) => i.getKeyword() === 'RUN' && /apt-get install -y --no-install-recommends tini/.test(args(i)))).toBe(true);
    const copies = ['runtime', 'coordinator', 'worker']
      .flatMap((s) => stage(dockerfile, s))
      .filter((i) => i.getKeyword() === 'COPY' || i.getKeyword() === 'ADD');
    expect(copies.map((i) => `${i.getKeyword()} ${flagsOf(i).join(' ')} ${args(i)}`)).toEqual(['COPY --from=build /out /app']);
    // No --chown: /app stays root's, read-only to the process.
    expect(text).not.toMatch(/--chown/);
    for (const target of ['coordinator', 'worker']) {
      const users = effective(dockerfile, target, 'USER');
      expect(users.map(args)).toEqual(['1000:1000']);
      expect(args(users[0]!)).toMatch(/^[1-9]\d*(:\d+)?$/);
      expect(effective(dockerfile, target, 'ENV').map(args)).toContain('NODE_ENV=production');
      const labels = effective(dockerfile, target, 'LABEL').map(args).join(' ');
      expect(labels).toContain(`org.opencontainers.image.version="${version}"`);
    }
  });

  it('ENTRYPOINT is exec form through tini; the targets run the coordinator standby and a worker, both with health on 8080', () => {
    for (const target of ['coordinator', 'worker']) {
      const entrypoints = effective(dockerfile, target, 'ENTRYPOINT');
      expect(entrypoints).toHaveLength(1);
      expect(execForm(entrypoints[0]!)).toEqual(['tini', '--', 'node', '/app/bin/run.js']);
      expect(stage(dockerfile, target).filter((i) => i.getKeyword() === 'CMD')).toHaveLength(1);
    }
    expect(commandOf(dockerfile, 'coordinator').slice(4)).toEqual(['workflow', 'coordinator', '--wait-for-lease', '--health-port', '8080']);
    expect(commandOf(dockerfile, 'worker').slice(4)).toEqual(['worker', '--queue', 'default', '--health-port', '8080']);
  });

  it('no ENV or ARG that looks like a secret', () => {
    const names = dockerfile
      .getInstructions()
      .filter((i) => i.getKeyword() === 'ENV' || i.getKeyword() === 'ARG')
      .flatMap((i) =>
        args(i)
          .split(/\s+/)
          .map((pair) => pair.split('=')[0]!),
      );
    expect(names.filter((n) => /KEY|SECRET|PASSWORD|TOKEN|CONNECTION_STRING|SAS|CREDENTIAL/i.test(n))).toEqual([]);
    expect(text).not.toMatch(/AccountKey=|SharedAccessKey=|sig=/);
  });

  it('the checks can fail: a second CMD, an unknown flag, a shell-form ENTRYPOINT, a broken JSON array', () => {
    expect(validate(`${text}\nCMD ["x"]\n`).length).toBeGreaterThan(0);
    expect(validate(text.replace('COPY --from=build', 'COPY --frm=build')).length).toBeGreaterThan(0);
    const shell = parseDockerfile(
      text.replace('ENTRYPOINT ["tini", "--", "node", "/app/bin/run.js"]', 'ENTRYPOINT tini -- node /app/bin/run.js'),
    );
    expect(() => commandOf(shell, 'worker')).toThrow(/not a JSON array/);
    const broken = parseDockerfile(text.replace('CMD ["worker", "--queue"', 'CMD ["worker" "--queue"'));
    expect(() => commandOf(broken, 'worker')).toThrow(/not a JSON array/);
  });
});

describe('.dockerignore', () => {
  const rules = readFileSync(DOCKERIGNORE_PATH, 'utf8').split('\n');

  it('drops node_modules, dist, .git and .turbo at any depth; keeps the lockfile, patches/ and the sources', () => {
    for (const path of [
      'node_modules',
      'apps/jobq/node_modules/x/index.js',
      'packages/worker/dist/index.js',
      'dist',
      '.git/HEAD',
      '.turbo/cache',
      'apps/jobq/.turbo/x',
      '.env',
    ]) {
      expect([path, ignored(rules, path)]).toEqual([path, true]);
    }
    for (const path of [
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'patches/azurite@3.35.0.patch',
      'apps/jobq/package.json',
      'apps/jobq/src/base.ts',
      'turbo.json',
      'package.json',
      'tsconfig.base.json',
    ]) {
      expect([path, ignored(rules, path)]).toEqual([path, false]);
    }
  });

  it('the matcher follows the negation and depth rules', () => {
    expect(ignored(['*.md', '!README.md'], 'README.md')).toBe(false);
    expect(ignored(['*.md', '!README.md'], 'CHANGES.md')).toBe(true);
    expect(ignored(['*.md'], 'docs/a.md')).toBe(false);
    expect(ignored(['**/*.md'], 'docs/a.md')).toBe(true);
  });
});
