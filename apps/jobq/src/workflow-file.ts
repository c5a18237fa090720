import { readFileSync, statSync } from 'node:fs';
import { parseWorkflow, sequentializeFanIn, type Issue, type ParamOverrides, type WorkflowDefinition } from '@jobq/dag-core';
import { formatIssue } from '@jobq/coordinator';

/** Workflow files larger than this are refused before parsing (a definition is a few hundred KB at most). */
export const MAX_WORKFLOW_FILE_BYTES = 4 * 1024 * 1024;

/** A workflow file, read and validated (and transformed with `--max-fan-in` when given). */
export type LoadedWorkflow =
  | { ok: true; path: string; definition: WorkflowDefinition; warnings: Issue[]; lines: string[] }
  | { ok: false; path: string; lines: string[] };

/**
 * Reads, parses and validates one workflow file with no network, its parameters resolved with
 * `params` and its matrix tasks expanded: the result carries `file:line:column: code: message`
 * lines for every issue (and for warnings when valid).
 */
export function loadWorkflowFile(path: string, maxFanIn?: number, params?: ParamOverrides): LoadedWorkflow {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_WORKFLOW_FILE_BYTES) {
      return { ok: false, path, lines: [`${path}: too-large: the file is ${size} bytes; workflow files are limited to ${MAX_WORKFLOW_FILE_BYTES} bytes`] };
    }
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (code ?? String(error));
    return { ok: false, path, lines: [`${path}: unreadable: ${reason}`] };
  }
  const parsed = parseWorkflow(text, { filename: path, ...(params === undefined ? {} : { params }) });
  if (!parsed.ok) return { ok: false, path, lines: parsed.issues.map((issue) => formatIssue(path, issue)) };
  let definition = parsed.value;
  if (maxFanIn !== undefined) {
    const transformed = sequentializeFanIn(definition, maxFanIn);
    if (!transformed.ok) return { ok: false, path, lines: transformed.issues.map((issue) => formatIssue(path, issue)) };
    definition = transformed.value;
  }
  return { ok: true, path, definition, warnings: parsed.warnings, lines: parsed.warnings.map((issue) => formatIssue(path, issue)) };
}
