import { LineCounter, parseDocument } from 'yaml';
import type { Issue, Result } from '../result';
import { yamlLocator } from './locate';
import type { ParamOverrides } from './params';
import type { RawIssue } from './raw-issue';
import type { WorkflowDefinition } from './types';
import { MAX_DEFINITION_DEPTH, MAX_YAML_ALIAS_EXPANSION } from './limits';
import { validateWith } from './validate';
import { errorMessage } from '../error-text';

/** Options of {@link parseWorkflow}. */
export interface ParseWorkflowOptions {
  /** Decides the format: `.yaml`/`.yml` is YAML, anything else JSON. Without it, text starting with `{` is JSON. */
  filename?: string;
  /** Overrides of the defaults of the workflow's `params` (`--param`, `--params-file`). */
  params?: ParamOverrides;
}

function isYaml(source: string, filename: string | undefined): boolean {
  if (filename !== undefined) return /\.ya?ml$/i.test(filename);
  return !source.trimStart().startsWith('{');
}

/**
 * Parses a workflow file's text (YAML or JSON) and validates it, its parameters resolved (with
 * `options.params` overriding their defaults) and its matrix tasks expanded. Issues carry the
 * 1-based line and column of the offending node in the file. Never throws.
 */
export function parseWorkflow(source: string, options: ParseWorkflowOptions = {}): Result<WorkflowDefinition> {
  try {
    const text = source.startsWith('\uFEFF') ? source.slice(1) : source;
    const params = options.params === undefined ? {} : { params: options.params };
    return isYaml(text, options.filename) ? parseYaml(text, params) : parseJson(text, params);
  } catch (error) {
    if (error instanceof RangeError) {
      return {
        ok: false,
        issues: [
          {
            code: 'syntax',
            path: '',
            message: `the document nests too deeply to parse (at most ${MAX_DEFINITION_DEPTH} levels are allowed)`,
          },
        ],
      };
    }
    return { ok: false, issues: [{ code: 'internal', path: '', message: `could not parse the workflow: ${firstLine(String(error))}` }] };
  }
}

function parseYaml(text: string, extra: { params?: ParamOverrides }): Result<WorkflowDefinition> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((e): Issue => {
        const pos = lineCounter.linePos(e.pos[0]);
        return { code: 'syntax', path: '', message: `YAML: ${firstLine(e.message)}`, line: pos.line, column: pos.col };
      }),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_EXPANSION });
  } catch (error) {
    const message =
      error instanceof ReferenceError && /alias/i.test(error.message)
        ? `YAML aliases expand past the limit of ${MAX_YAML_ALIAS_EXPANSION} nodes (a recursive or exploding anchor?)`
        : error instanceof RangeError
          ? `YAML: the document nests too deeply to parse (at most ${MAX_DEFINITION_DEPTH} levels are allowed)`
          : `YAML: ${firstLine(String(error))}`;
    return { ok: false, issues: [{ code: error instanceof ReferenceError ? 'alias-limit' : 'syntax', path: '', message }] };
  }
  return validateWith(value, { ...extra, locate: yamlLocator(doc, text, lineCounter) });
}

function parseJson(text: string, extra: { params?: ParamOverrides }): Result<WorkflowDefinition> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = errorMessage(error);
    const issue: Issue = {
      code: 'syntax',
      path: '',
      message:
        error instanceof RangeError
          ? `JSON: the document nests too deeply to parse (at most ${MAX_DEFINITION_DEPTH} levels are allowed)`
          : `JSON: ${firstLine(message)}`,
    };
    const at = /at position (\d+)/.exec(message);
    if (at) Object.assign(issue, positionOf(text, Number(at[1])));
    return { ok: false, issues: [issue] };
  }
  // JSON is YAML too: the YAML parser's node ranges give positions, computed only when needed.
  let locate: ((issue: RawIssue) => { line: number; column: number } | undefined) | undefined;
  return validateWith(value, {
    ...extra,
    locate: (issue) => {
      if (!locate) {
        const lineCounter = new LineCounter();
        const doc = parseDocument(text, { lineCounter, uniqueKeys: false });
        locate = yamlLocator(doc, text, lineCounter);
      }
      return locate(issue);
    },
  });
}

function positionOf(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** Longest message text taken from the YAML or JSON parser (they may quote a whole offending token). */
const MAX_PARSER_MESSAGE = 200;

function firstLine(message: string): string {
  // eslint-disable-next-line no-control-regex
  const line = (message.split('\n')[0] ?? message).replace(/[\u0000-\u001f\u007f]/g, '?');
  return line.length > MAX_PARSER_MESSAGE ? `${line.slice(0, MAX_PARSER_MESSAGE)}…` : line;
}

/**
 * Parses a params file (`--params-file`): a YAML or JSON object of parameter values, read as
 * {@link ParseWorkflowOptions.filename} decides. Issues carry their line and column; whether each
 * value fits its parameter is checked with the workflow. Never throws.
 */
export function parseParamsFile(source: string, options: { filename?: string } = {}): Result<Record<string, unknown>> {
  try {
    const text = source.startsWith('\uFEFF') ? source.slice(1) : source;
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
    const problems = doc.errors.map((e): Issue => {
      const pos = lineCounter.linePos(e.pos[0]);
      return {
        code: 'syntax',
        path: '',
        message: `${isYaml(text, options.filename) ? 'YAML' : 'JSON'}: ${firstLine(e.message)}`,
        line: pos.line,
        column: pos.col,
      };
    });
    if (problems.length > 0) return { ok: false, issues: problems };
    const value: unknown = doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_EXPANSION });
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return {
        ok: false,
        issues: [
          {
            code: 'not-an-object',
            path: '',
            message: 'a params file must be an object of parameter values (KEY: VALUE)',
            line: 1,
            column: 1,
          },
        ],
      };
    }
    return { ok: true, value: value as Record<string, unknown>, warnings: [] };
  } catch (error) {
    return { ok: false, issues: [{ code: 'syntax', path: '', message: `could not parse the params file: ${firstLine(String(error))}` }] };
  }
}
