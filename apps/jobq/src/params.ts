import { readFileSync, statSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { parseParamsFile, type ParamOverrides, type ParamValue } from '@jobq/dag-core';
import { fileDiagnostic, toDiagnostics, type FileDiagnostics } from './diagnostics';
import { UsageError } from './errors';
import { truncate } from './format';

/** Params files larger than this are refused before parsing. */
export const MAX_PARAMS_FILE_BYTES = 1024 * 1024;

/** `--param` and `--params-file`: overrides of the defaults of a workflow's `params` (docs/matrix-and-params.md). */
export const paramFlags = {
  param: Flags.string({
    description:
      "Set a parameter of the workflow: KEY=VALUE, read as the parameter's type (repeatable; the last one of a KEY wins, and wins over --params-file)",
    multiple: true,
  }),
  'params-file': Flags.string({ description: 'A YAML or JSON file of parameter values (KEY: VALUE), typed as written' }),
};

/** The overrides the flags give, or the diagnostics of a params file that does not read. */
export function paramOverrides(flags: {
  param?: string[] | undefined;
  'params-file'?: string | undefined;
}): { ok: true; overrides: ParamOverrides } | { ok: false; report: FileDiagnostics } {
  const overrides: ParamOverrides = {};
  const file = flags['params-file'];
  if (file !== undefined) {
    let text: string;
    try {
      const size = statSync(file).size;
      if (size > MAX_PARAMS_FILE_BYTES) {
        return {
          ok: false,
          report: {
            path: file,
            diagnostics: [
              fileDiagnostic('too-large', `the file is ${size} bytes; params files are limited to ${MAX_PARAMS_FILE_BYTES} bytes`),
            ],
          },
        };
      }
      text = readFileSync(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (code ?? String(error));
      return { ok: false, report: { path: file, diagnostics: [fileDiagnostic('unreadable', reason)] } };
    }
    const parsed = parseParamsFile(text, { filename: file });
    if (!parsed.ok) return { ok: false, report: { path: file, diagnostics: toDiagnostics(parsed.issues, 'error'), source: text } };
    overrides.values = parsed.value;
    overrides.valuesSource = file;
  }
  if (flags.param !== undefined && flags.param.length > 0) {
    const text: Record<string, string> = {};
    for (const item of flags.param) {
      const eq = item.indexOf('=');
      if (eq <= 0) throw new UsageError(`--param ${JSON.stringify(item)}: expected KEY=VALUE`);
      Object.defineProperty(text, item.slice(0, eq), { value: item.slice(eq + 1), enumerable: true, writable: true, configurable: true });
    }
    overrides.text = text;
  }
  return { ok: true, overrides };
}

/** Longest value shown in a `Params` line (status, explain); --json has them whole. */
const PARAM_SHOWN = 60;

/** `lr=0.1, data="s3://…"`: the parameter values a workflow was submitted with. */
export function paramsLine(params: Readonly<Record<string, ParamValue>>): string {
  return Object.entries(params)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? JSON.stringify(truncate(value, PARAM_SHOWN)) : String(value)}`)
    .join(', ');
}
