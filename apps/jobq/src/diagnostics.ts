import type { Issue } from '@jobq/dag-core';

/**
 * Diagnostics of a workflow or params file, printed the way compilers print them
 * (docs/workflow-language.md#diagnostics): `file:line:col: severity: code: message (hint)`, one
 * per line, sorted by line then column; in a terminal each is followed by its source line and a
 * caret under the column. `validate`, `submit` and `run` print through here.
 */

/** `error`: the file is refused; `warning`: it is valid, but probably not what was meant. */
export type Severity = 'error' | 'warning';

/** One problem of a file, as `workflow validate --json` gives it (absent values are null). */
export interface Diagnostic {
  severity: Severity;
  code: string;
  message: string;
  /** Where in the definition (`tasks[3].depends_on[1]`); `''` for the file as a whole. */
  path: string;
  /** 1-based; null when the problem has no place in the text. */
  line: number | null;
  column: number | null;
  /** What probably fixes it (`did you mean "depends_on"?`). */
  hint: string | null;
}

/** The diagnostics of one file, with its text when it was read (for the source lines). */
export interface FileDiagnostics {
  path: string;
  diagnostics: readonly Diagnostic[];
  source?: string | undefined;
}

/** Issues of `@jobq/dag-core` as diagnostics of one severity. */
export function toDiagnostics(issues: readonly Issue[], severity: Severity): Diagnostic[] {
  return issues.map((issue) => ({
    severity,
    code: issue.code,
    message: issue.message,
    path: issue.path,
    line: issue.line ?? null,
    column: issue.line === undefined ? null : (issue.column ?? null),
    hint: issue.hint ?? null,
  }));
}

/** A problem of the file as a whole (unreadable, too large). */
export function fileDiagnostic(code: string, message: string): Diagnostic {
  return { severity: 'error', code, message, path: '', line: null, column: null, hint: null };
}

/**
 * By line, then column; problems without a place first (they concern the whole file), errors
 * before warnings at the same place, otherwise in the order found.
 */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  const rank = (d: Diagnostic) => [d.line ?? 0, d.column ?? 0, d.severity === 'error' ? 0 : 1] as const;
  return diagnostics
    .map((d, i) => ({ d, i, r: rank(d) }))
    .sort((a, b) => a.r[0] - b.r[0] || a.r[1] - b.r[1] || a.r[2] - b.r[2] || a.i - b.i)
    .map(({ d }) => d);
}

/** `file:line:col: severity: code: message (hint)`; without a place, `file: severity: code: message (at PATH)`. */
export function diagnosticHeader(file: string, d: Diagnostic): string {
  const place = d.line === null ? '' : `:${d.line}${d.column === null ? '' : `:${d.column}`}`;
  const at = d.line === null && d.path !== '' ? ` (at ${d.path})` : '';
  const hint = d.hint === null ? '' : ` (${d.hint})`;
  return `${file}${place}: ${d.severity}: ${d.code}: ${oneLine(d.message)}${at}${hint}`;
}

/** Options of {@link renderDiagnostics}. */
export interface RenderOptions {
  /** Show each source line with a caret under the column (in a terminal; plain lines otherwise). */
  tty: boolean;
}

/** Longest source line shown whole; longer ones are cut to a window around the column. */
const MAX_SHOWN_LINE = 160;

/** The lines to print for the diagnostics of one file, sorted. */
export function renderDiagnostics(report: FileDiagnostics, options: RenderOptions): string[] {
  const sorted = sortDiagnostics(report.diagnostics);
  if (!options.tty || report.source === undefined) return sorted.map((d) => diagnosticHeader(report.path, d));
  const sourceLines = report.source.replace(/^\uFEFF/, '').split(/\r?\n/);
  const width = String(Math.max(0, ...sorted.map((d) => d.line ?? 0))).length;
  const out: string[] = [];
  for (const d of sorted) {
    out.push(diagnosticHeader(report.path, d));
    const text = d.line === null ? undefined : sourceLines[d.line - 1];
    if (d.line === null || text === undefined) continue;
    const { shown, caretAt } = window(text, d.column ?? 1);
    const gutter = ' '.repeat(width);
    out.push(` ${String(d.line).padStart(width)} | ${shown}`);
    // Tabs before the column stay tabs, so the caret lines up however the terminal shows them.
    const pad = shown.slice(0, caretAt).replace(/[^\t]/g, ' ');
    out.push(` ${gutter} | ${pad}^`);
    out.push('');
  }
  return out;
}

/** The part of a source line to show (control characters made visible) and where the caret goes in it. */
function window(text: string, column: number): { shown: string; caretAt: number } {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '?');
  const index = Math.max(0, Math.min(column - 1, clean.length));
  if (clean.length <= MAX_SHOWN_LINE) return { shown: clean, caretAt: index };
  const half = Math.floor(MAX_SHOWN_LINE / 2);
  const start = Math.max(0, Math.min(index - half, clean.length - MAX_SHOWN_LINE));
  const end = start + MAX_SHOWN_LINE;
  const head = start > 0 ? '…' : '';
  const tail = end < clean.length ? '…' : '';
  return { shown: `${head}${clean.slice(start, end)}${tail}`, caretAt: index - start + head.length };
}

function oneLine(text: string): string {
  return text.replace(/\r?\n/g, ' ');
}

/** True when diagnostics on stderr go to a terminal (and so get their source lines). */
export function stderrIsTty(): boolean {
  return process.stderr.isTTY === true;
}

/** Prints the diagnostics of each file on stderr, with source lines when stderr is a terminal. */
export function printDiagnostics(reports: readonly FileDiagnostics[], options: RenderOptions = { tty: stderrIsTty() }): void {
  const lines = reports.flatMap((report) => renderDiagnostics(report, options));
  if (lines.length > 0) process.stderr.write(`${lines.join('\n')}\n`);
}
