import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser, type Dockerfile, type Flag, type From, type Instruction } from 'dockerfile-ast';

// The image definition (deploy/docker/Dockerfile), read as the tests and the image checks see it.

export const ROOT = join(__dirname, '..', '..', '..');
export const DOCKERFILE_PATH = join(ROOT, 'deploy', 'docker', 'Dockerfile');
export const DOCKERIGNORE_PATH = join(ROOT, '.dockerignore');

export function dockerfileText(): string {
  return readFileSync(DOCKERFILE_PATH, 'utf8');
}

export function parseDockerfile(text = dockerfileText()): Dockerfile {
  return DockerfileParser.parse(text);
}

/** The instructions of stage `name` (from its FROM to the next). */
export function stage(dockerfile: Dockerfile, name: string): Instruction[] {
  const out: Instruction[] = [];
  let current: string | null = null;
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') current = (instruction as From).getBuildStage();
    if (current === name) out.push(instruction);
  }
  return out;
}

/** An exec-form instruction's array (JSON), or an error saying where it is not one. */
export function execForm(instruction: Instruction): string[] {
  const text = instruction.getArgumentsContent() ?? '';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${instruction.getKeyword()} on line ${instruction.getRange().start.line + 1} is not a JSON array: ${text}`);
  }
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw new Error(`${instruction.getKeyword()} is not an array of strings: ${text}`);
  return value;
}

/** The instructions of a target stage and of the stages it builds on (FROM <stage>), nearest last. */
export function effective(dockerfile: Dockerfile, target: string, keyword: string): Instruction[] {
  const froms = dockerfile.getFROMs();
  const chain: string[] = [];
  for (let name: string | null = target; name !== null;) {
    chain.unshift(name);
    const from = froms.find((f) => f.getBuildStage() === name);
    const image = from?.getImageName() ?? null;
    name = image !== null && froms.some((f) => f.getBuildStage() === image) ? image : null;
  }
  return chain.flatMap((name) => stage(dockerfile, name)).filter((i) => i.getKeyword() === keyword);
}

/** The target's ENTRYPOINT + CMD, as the container runs them. */
export function commandOf(dockerfile: Dockerfile, target: string): string[] {
  const entrypoint = effective(dockerfile, target, 'ENTRYPOINT').at(-1);
  const cmd = effective(dockerfile, target, 'CMD').at(-1);
  if (entrypoint === undefined || cmd === undefined) throw new Error(`target ${target} has no ENTRYPOINT or CMD`);
  return [...execForm(entrypoint), ...execForm(cmd)];
}

/** The build stage's `pnpm … deploy …` command, split into words (its cache mount flag left out). */
export function deployCommand(dockerfile: Dockerfile): string[] {
  const runs = stage(dockerfile, 'build').filter((i) => i.getKeyword() === 'RUN');
  const deploy = runs
    .map((i) => (i.getArgumentsContent() ?? '').replace(/\\\r?\n/g, ' '))
    .find((text) => /\bpnpm\b.*\bdeploy\b/.test(text));
  if (deploy === undefined) throw new Error('the build stage has no `pnpm … deploy` RUN');
  return deploy.trim().split(/\s+/);
}

/**
 * Whether the build context leaves `path` out, by the .dockerignore rules (Docker's: patterns
 * relative to the context root, `*` and `?` within a segment, `**` any number of segments, `!`
 * takes a path back in, the last matching line wins; a directory left out leaves out what is in it).
 */
export function ignored(rules: readonly string[], path: string): boolean {
  const matchers = rules
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = (negate ? line.slice(1) : line).replace(/^\/+/, '').replace(/\/+$/, '');
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i]!;
        if (c === '*' && pattern[i + 1] === '*') {
          re += '.*';
          i++;
          if (pattern[i + 1] === '/') i++;
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { negate, regex: new RegExp(`^${re}(/.*)?$`) };
    });
  let out = false;
  for (const m of matchers) if (m.regex.test(path)) out = !m.negate;
  return out;
}

/** The flags of a RUN, COPY or ADD (`--mount=…`, `--from=…`); none for other instructions. */
export function flagsOf(instruction: Instruction): string[] {
  const withFlags = instruction as Instruction & { getFlags?: () => Flag[] };
  return typeof withFlags.getFlags === 'function' ? withFlags.getFlags().map((f) => `--${f.getName()}=${f.getValue() ?? ''}`) : [];
}

/** The ENV a target's container starts with (its stage and the stages below it), as NAME → value. */
export function envOf(dockerfile: Dockerfile, target: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const instruction of effective(dockerfile, target, 'ENV')) {
    for (const property of (
      instruction as Instruction & { getProperties(): Array<{ getName(): string; getValue(): string | null }> }
    ).getProperties()) {
      out[property.getName()] = property.getValue() ?? '';
    }
  }
  return out;
}
