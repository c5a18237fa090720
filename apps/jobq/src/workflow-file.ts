import { readFileSync, statSync } from 'node:fs';
import { parseWorkflow, sequentializeFanIn, type Issue, type ParamOverrides, type WorkflowDefinition } from '@jobq/dag-core';
import { diagnosticHeader, fileDiagnostic, sortDiagnostics, toDiagnostics, type Diagnostic } from './diagnostics';

/** Workflow files larger than this are refused before parsing (a definition is a few hundred KB at most). */
export const MAX_WORKFLOW_FILE_BYTES = 4 * 1024 * 1024;

interface LoadedFile {
  path: string;
  /** Errors and warnings, sorted by line and column (docs/workflow-language.md#diagnostics). */
  diagnostics: Diagnostic[];
  /** The file's text, when it was read (for the source lines of the diagnostics). */
  source?: string;
  /** The diagnostics as plain `file:line:column: severity: code: message` lines. */
  lines: string[];
}

/** A workflow file, read and validated (and transformed with `--max-fan-in` when given). */
export type LoadedWorkflow = (LoadedFile & { ok: true; definition: WorkflowDefinition; warnings: Issue[] }) | (LoadedFile & { ok: false });

function failed(path: string, diagnostics: Diagnostic[], source?: string): LoadedWorkflow {
  const sorted = sortDiagnostics(diagnostics);
  return {
    ok: false,
    path,
    diagnostics: sorted,
    lines: sorted.map((d) => diagnosticHeader(path, d)),
    ...(source === undefined ? {} : { source }),
  };
}

/**
 * Reads, parses and validates one workflow file with no network, its parameters resolved with
 * `params` and its matrix tasks expanded: the result carries every error and warning found.
 */
export function loadWorkflowFile(path: string, maxFanIn?: number, params?: ParamOverrides): LoadedWorkflow {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_WORKFLOW_FILE_BYTES) {
      return failed(path, [
        fileDiagnostic('too-large', `the file is ${size} bytes; workflow files are limited to ${MAX_WORKFLOW_FILE_BYTES} bytes`),
      ]);
    }
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (code ?? String(error));
    return failed(path, [fileDiagnostic('unreadable', reason)]);
  }
  const parsed = parseWorkflow(text, { filename: path, ...(params === undefined ? {} : { params }) });
  if (!parsed.ok) return failed(path, [...toDiagnostics(parsed.issues, 'error'), ...toDiagnostics(parsed.warnings ?? [], 'warning')], text);
  const warnings = toDiagnostics(parsed.warnings, 'warning');
  let definition = parsed.value;
  if (maxFanIn !== undefined) {
    const transformed = sequentializeFanIn(definition, maxFanIn);
    if (!transformed.ok) return failed(path, [...toDiagnostics(transformed.issues, 'error'), ...warnings], text);
    definition = transformed.value;
  }
  const sorted = sortDiagnostics(warnings);
  return {
    ok: true,
    path,
    definition,
    warnings: parsed.warnings,
    diagnostics: sorted,
    source: text,
    lines: sorted.map((d) => diagnosticHeader(path, d)),
  };
}
