import { SECRET_ENV_PREFIX } from '@jobq/dag-core/wire';
import { JobqError } from '@jobq/ports';
import { resolveTaskSecrets } from './secrets';

/** Storage credentials and Azure identity settings, by exact name. */
const CREDENTIAL_NAMES = new Set([
  'JOBQ_STORAGE_CONNECTION_STRING',
  'AZURE_STORAGE_CONNECTION_STRING',
  'AZURE_STORAGE_KEY',
  'AZURE_STORAGE_SAS_TOKEN',
  'IDENTITY_ENDPOINT',
  'IDENTITY_HEADER',
  'IDENTITY_SERVER_THUMBPRINT',
  'IMDS_ENDPOINT',
]);

/** A `JOBQ_*` name that says it holds a credential. */
const CREDENTIAL_NAME_PART = /CONNECTION_STRING|KEY|SAS|TOKEN|SECRET|PASSWORD|CREDENTIAL/;

/** A value that is (or holds) a storage connection string, account key or SAS. */
const CREDENTIAL_VALUE = /AccountKey\s*=|SharedAccessSignature\s*=|SharedAccessKey\s*=|(?:^|[?&])sig=/i;

/**
 * True for a worker variable a task must not inherit: storage connection strings, keys and SAS
 * tokens, every `AZURE_*` variable (the Azure SDK's identity and storage settings), the managed
 * identity endpoints (`IDENTITY_*`, `MSI_*`, `IMDS_ENDPOINT`), every `JOBQ_SECRET_*`, and any
 * `JOBQ_*` variable whose name or value says it holds a connection string or key.
 */
export function isCredentialVariable(name: string, value: string | undefined): boolean {
  if (CREDENTIAL_NAMES.has(name)) return true;
  if (name.startsWith('AZURE_') || name.startsWith('MSI_') || name.startsWith(SECRET_ENV_PREFIX)) return true;
  if (name.startsWith('JOBQ_')) return CREDENTIAL_NAME_PART.test(name) || (value !== undefined && CREDENTIAL_VALUE.test(value));
  return false;
}

/** A task's environment and the secret values resolved into it (to mask them). */
export interface PreparedTaskEnvironment {
  env: NodeJS.ProcessEnv;
  /** Values of the `${{ secrets.NAME }}` references resolved into `env`. */
  secrets: string[];
}

/**
 * The environment of one task's child: a fresh copy of `base` (the worker's environment) without
 * its credentials ({@link isCredentialVariable}), with `kwargsEnv` (the task's `kwargs.env`) on top.
 * A credential variable reaches the task only when `kwargs.env` names it. Each
 * `${{ secrets.NAME }}` in a `kwargs.env` value is replaced by the worker's `JOBQ_SECRET_NAME`
 * (a missing one is an `invalid-argument` error naming the variable to set). Neither input is
 * changed, so nothing leaks into the worker or into later tasks. `kwargsEnv` may be
 * undefined/null; otherwise it must be an object of strings (numbers and booleans are written
 * out), else a clear `invalid-argument` error.
 */
export function prepareTaskEnvironment(base: NodeJS.ProcessEnv, kwargsEnv: unknown): PreparedTaskEnvironment {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined && !isCredentialVariable(name, value)) env[name] = value;
  if (kwargsEnv === undefined || kwargsEnv === null) return { env, secrets: [] };
  if (typeof kwargsEnv !== 'object' || Array.isArray(kwargsEnv)) {
    throw new JobqError(
      'invalid-argument',
      `kwargs.env must be an object of strings, got ${Array.isArray(kwargsEnv) ? 'an array' : typeof kwargsEnv}`,
    );
  }
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(kwargsEnv as Record<string, unknown>)) {
    // YAML writes `N: 3` as a number: numbers and booleans are written out as the shell would see them.
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new JobqError(
        'invalid-argument',
        `kwargs.env.${name} must be a string, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
      );
    }
    const text = String(value);
    if (name === '' || name.includes('=') || name.includes('\0') || text.includes('\0')) {
      throw new JobqError('invalid-argument', `kwargs.env has an invalid variable name or value: ${JSON.stringify(name)}`);
    }
    values[name] = text;
  }
  const resolved = resolveTaskSecrets(values, base);
  for (const [name, value] of Object.entries(resolved.values)) {
    // A secret may not bring a NUL byte in either: no process environment can hold one.
    if (value.includes('\0'))
      throw new JobqError(
        'invalid-argument',
        `kwargs.env.${name}: a secret it uses holds a NUL byte, which no environment variable can hold`,
      );
    env[name] = value;
  }
  return { env, secrets: resolved.secrets };
}

/** {@link prepareTaskEnvironment}'s environment alone. */
export function taskEnvironment(base: NodeJS.ProcessEnv, kwargsEnv: unknown): NodeJS.ProcessEnv {
  return prepareTaskEnvironment(base, kwargsEnv).env;
}
