import { resolveSecretRefs, SECRET_ENV_PREFIX } from '@jobq/dag-core/wire';
import { JobqError } from '@jobq/ports';

/** Values shorter than this are not masked: masking `a` or `on` would garble every log line. */
export const MIN_MASKED_SECRET_LENGTH = 4;

/** The text that replaces a secret value in log lines and error texts. */
export const SECRET_MASK = '***';

/**
 * Resolves the secret references (`${{ secrets.NAME }}`, the syntax of `@jobq/dag-core`) of a
 * task's environment values (`kwargs.env`, already written out as strings) from `workerEnv`'s
 * `JOBQ_SECRET_<NAME>` variables. Returns the resolved values and the secret values used (to mask
 * them); a reference to a secret the worker does not have, or a malformed one, is an
 * `invalid-argument` error naming what to fix (the attempt fails with it).
 */
export function resolveTaskSecrets(
  values: Readonly<Record<string, string>>,
  workerEnv: NodeJS.ProcessEnv,
): { values: Record<string, string>; secrets: string[] } {
  const out: Record<string, string> = {};
  const secrets: string[] = [];
  const problems: string[] = [];
  for (const [name, text] of Object.entries(values)) {
    const used: string[] = [];
    const resolved = resolveSecretRefs(text, (secret) => {
      const value = workerEnv[`${SECRET_ENV_PREFIX}${secret}`];
      if (value !== undefined) used.push(value);
      return value;
    });
    if (resolved.ok) {
      out[name] = resolved.value;
      secrets.push(...used);
      continue;
    }
    for (const secret of resolved.missing) {
      problems.push(
        `kwargs.env.${name} uses the secret "${secret}", but this worker has no ${SECRET_ENV_PREFIX}${secret}: set ${SECRET_ENV_PREFIX}${secret} in the worker's environment`,
      );
    }
    for (const problem of resolved.problems) problems.push(`kwargs.env.${name}: ${problem.message}`);
  }
  if (problems.length > 0) throw new JobqError('invalid-argument', problems.join('; '));
  return { values: out, secrets };
}

/**
 * Replaces known secret values in text by `***`: in task log lines and in every error text the
 * worker sends. Each value is masked as it is, line by line (output arrives in lines), and as it
 * reads inside a JSON string; values shorter than {@link MIN_MASKED_SECRET_LENGTH} are not masked.
 */
export class SecretMasker {
  private patterns: string[] = [];

  /** Adds secret values to mask from now on. */
  add(values: Iterable<string>): void {
    const next = new Set(this.patterns);
    for (const value of values) {
      for (const form of [value, ...value.split(/\r?\n/), JSON.stringify(value).slice(1, -1)]) {
        if (form.length >= MIN_MASKED_SECRET_LENGTH) next.add(form);
      }
    }
    // Longest first, so a secret that contains another is masked whole.
    this.patterns = [...next].sort((a, b) => b.length - a.length);
  }

  /** `text` with every known secret value replaced by `***`. */
  mask(text: string): string {
    let masked = text;
    for (const pattern of this.patterns) if (masked.includes(pattern)) masked = masked.split(pattern).join(SECRET_MASK);
    return masked;
  }
}
