import { JobqError } from '@jobq/ports';

/** The worker's environment variable holding secret `NAME`: `JOBQ_SECRET_NAME`. */
export const SECRET_VARIABLE_PREFIX = 'JOBQ_SECRET_';

/** Values shorter than this are not masked: masking `a` or `on` would garble every log line. */
export const MIN_MASKED_SECRET_LENGTH = 4;

/** The text that replaces a secret value in log lines and error texts. */
export const SECRET_MASK = '***';

/** `${{ secrets.NAME }}`, NAME = `[A-Za-z_][A-Za-z0-9_]*`, spaces allowed inside the braces. */
const SECRET_REF = /\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** What {@link resolveSecretReferences} made of one value. */
export interface ResolvedSecrets {
  /** The value with every reference replaced by the secret's value. */
  value: string;
  /** The values of the secrets it used (to mask them). */
  used: string[];
  /** The names of referenced secrets the worker does not have. */
  missing: string[];
}

/**
 * Replaces each `${{ secrets.NAME }}` in `text` (a whole `kwargs.env` value, or part of one) with
 * `lookup(NAME)`. The one place that knows the reference syntax on the worker, so it can be
 * swapped for the shared helper.
 */
export function resolveSecretReferences(text: string, lookup: (name: string) => string | undefined): ResolvedSecrets {
  const used: string[] = [];
  const missing: string[] = [];
  const value = text.replace(SECRET_REF, (reference, name: string) => {
    const secret = lookup(name);
    if (secret === undefined) {
      if (!missing.includes(name)) missing.push(name);
      return reference;
    }
    used.push(secret);
    return secret;
  });
  return { value, used, missing };
}

/**
 * Resolves the secret references of a task's environment values (`kwargs.env`, already written out
 * as strings) from `workerEnv`'s `JOBQ_SECRET_<NAME>` variables. Returns the resolved values and the
 * secrets used; a reference to a secret the worker does not have is an `invalid-argument` error
 * naming the variable to set (the attempt fails with it).
 */
export function resolveTaskSecrets(values: Readonly<Record<string, string>>, workerEnv: NodeJS.ProcessEnv): { values: Record<string, string>; secrets: string[] } {
  const out: Record<string, string> = {};
  const secrets: string[] = [];
  const problems: string[] = [];
  for (const [name, text] of Object.entries(values)) {
    const resolved = resolveSecretReferences(text, (secret) => workerEnv[`${SECRET_VARIABLE_PREFIX}${secret}`]);
    out[name] = resolved.value;
    secrets.push(...resolved.used);
    for (const secret of resolved.missing) {
      problems.push(`kwargs.env.${name} uses the secret "${secret}", but this worker has no ${SECRET_VARIABLE_PREFIX}${secret}: set ${SECRET_VARIABLE_PREFIX}${secret} in the worker's environment`);
    }
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
