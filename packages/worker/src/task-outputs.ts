import { readFile } from 'node:fs/promises';
import type { OperationOptions, OutputStore, PutOutputResult } from '@jobq/ports';

/** How much of a file that is not JSON the error quotes. */
const QUOTED_CHARACTERS = 40;

/**
 * `text` as a one-line JSON string literal: control, line-separator and invisible format
 * characters are written as `\uXXXX` (JSON.stringify leaves U+2028, U+FEFF and the like as they are).
 */
function quoteOneLine(text: string): string {
  return JSON.stringify(text).replace(/[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Null when `text` is JSON; otherwise one line saying what was found (its start, escaped) and how
 * to write an output. Checked here, before the store, so the task's author reads the worker's
 * explanation rather than the JSON parser's message (which quotes the raw text, newlines included).
 */
export function notJsonProblem(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch {
    const characters = Array.from(text);
    const head = characters.slice(0, QUOTED_CHARACTERS).join('');
    const found = characters.length > QUOTED_CHARACTERS ? `${quoteOneLine(head)}… (${Buffer.byteLength(text, 'utf8')} bytes)` : quoteOneLine(head);
    return `the output file is not JSON: found ${found}; write JSON (a quoted string, a number, an object…), e.g. with jobq task set-output`;
  }
}

/** What {@link storeTaskOutput} found. */
export type StoredOutput =
  | { ok: true; result: PutOutputResult }
  /** The attempt fails with `error` (invalid JSON, an upload that failed above the inline limit…). */
  | { ok: false; error: string; aborted: boolean };

/**
 * Reads the output file a task script wrote (`$JOBQ_OUTPUT_FILE`) and stores it (SPEC §5.4):
 * an empty or missing file is no output; otherwise {@link OutputStore.putOutput} (inline, blob,
 * or inline fallback, whose warning is logged). Never throws: a failure is the attempt's error.
 */
export async function storeTaskOutput(
  outputs: OutputStore,
  workflowId: string,
  taskName: string,
  outputFile: string,
  log: (line: string) => void,
  options?: OperationOptions,
): Promise<StoredOutput> {
  let text: string;
  try {
    text = await readFile(outputFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
    return { ok: false, error: `could not read the output file: ${error instanceof Error ? error.message : String(error)}`, aborted: false };
  }
  if (text.trim() === '') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
  const notJson = notJsonProblem(text);
  if (notJson !== null) return { ok: false, error: notJson, aborted: false };
  try {
    const result = await outputs.putOutput(workflowId, taskName, text, options);
    if (result.warning) log(`warning: ${result.warning}`);
    return { ok: true, result };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const aborted = options?.abortSignal?.aborted === true;
    return { ok: false, error: `could not store the output: ${message}`, aborted };
  }
}
