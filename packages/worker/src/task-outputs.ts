import { readFile } from 'node:fs/promises';
import type { OutputStore, PutOutputOptions, PutOutputResult } from '@jobq/ports';

/** What {@link storeTaskOutput} found. */
export type StoredOutput =
  | { ok: true; result: PutOutputResult }
  /** The attempt fails with `error` (invalid JSON, an upload that failed above the inline limit…). */
  | { ok: false; error: string; aborted: boolean };

/**
 * Reads the output file a task attempt's script wrote (`$JOBQ_OUTPUT_FILE`) and stores it (SPEC
 * §5.4): an empty or missing file is no output; otherwise {@link OutputStore.putOutput} (inline,
 * the attempt's blob, or inline fallback, whose warning is logged; a blob another delivery of the
 * attempt stored first is adopted, and said so in the log). Never throws: a failure is the
 * attempt's error.
 */
export async function storeTaskOutput(
  outputs: OutputStore,
  workflowId: string,
  taskName: string,
  attemptNo: number,
  outputFile: string,
  log: (line: string) => void,
  options?: PutOutputOptions,
): Promise<StoredOutput> {
  let text: string;
  try {
    text = await readFile(outputFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
    return { ok: false, error: `could not read the output file: ${error instanceof Error ? error.message : String(error)}`, aborted: false };
  }
  if (text.trim() === '') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
  try {
    const result = await outputs.putOutput(workflowId, taskName, attemptNo, text, options);
    if (result.warning) log(`warning: ${result.warning}`);
    if (result.adopted) log(`attempt ${attemptNo} of task "${taskName}" already has a stored output (an earlier delivery wrote it): that output is reported, this one dropped`);
    return { ok: true, result };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const aborted = options?.abortSignal?.aborted === true;
    return { ok: false, error: `could not store the output: ${message}`, aborted };
  }
}
