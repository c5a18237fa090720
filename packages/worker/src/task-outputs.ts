import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { errorMessage, type OutputStore, type PutOutputOptions, type PutOutputResult } from '@jobq/ports';

/** How much of a file that is not JSON the error quotes. */
const QUOTED_CHARACTERS = 40;

/**
 * `text` as a one-line JSON string literal: control, line-separator and invisible format
 * characters are written as `\uXXXX` (JSON.stringify leaves U+2028, U+FEFF and the like as they are).
 */
function quoteOneLine(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
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
    const found =
      characters.length > QUOTED_CHARACTERS ? `${quoteOneLine(head)}… (${Buffer.byteLength(text, 'utf8')} bytes)` : quoteOneLine(head);
    return `the output file is not JSON: found ${found}; write JSON (a quoted string, a number, an object…), e.g. with jobq task set-output`;
  }
}

/** What {@link storeTaskOutput} found. */
export type StoredOutput =
  | { ok: true; result: PutOutputResult }
  /** The attempt fails with `error` (invalid JSON, an upload that failed above the inline limit…). */
  | { ok: false; error: string; aborted: boolean };

/** Options of {@link storeTaskOutput}. */
export interface StoreTaskOutputOptions extends PutOutputOptions {
  /**
   * The uid of the task user, when the task ran as another user than the worker: the file is then
   * read only if it is a regular file owned by that user and not a symbolic link, so a task cannot
   * make the worker read (and publish) a file of the worker's own through a link.
   */
  ownerUid?: number;
}

/** The output file as text; with `ownerUid`, only a regular file of that user, never through a link. */
async function readOutputFile(path: string, ownerUid: number | undefined): Promise<string> {
  if (ownerUid === undefined) return readFile(path, 'utf8');
  // O_NONBLOCK: a FIFO put in place of the file must not block the worker on open.
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error('it is not a regular file');
    if (info.uid !== ownerUid) throw new Error(`it belongs to uid ${info.uid}, not to the task user (uid ${ownerUid})`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

function describeReadError(error: unknown): string {
  if ((error as NodeJS.ErrnoException).code === 'ELOOP')
    return 'it is a symbolic link; write the output into the file itself (e.g. jobq task set-output)';
  return errorMessage(error);
}

/**
 * Reads the output file a task attempt's script wrote (`$JOBQ_OUTPUT_FILE`) and stores it
 * (docs/design.md#outputs): an empty or missing file is no output; otherwise {@link OutputStore.putOutput} (inline,
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
  options?: StoreTaskOutputOptions,
): Promise<StoredOutput> {
  const { ownerUid, ...operation } = options ?? {};
  let text: string;
  try {
    text = await readOutputFile(outputFile, ownerUid);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
    return { ok: false, error: `could not read the output file: ${describeReadError(error)}`, aborted: false };
  }
  if (text.trim() === '') return { ok: true, result: { ref: null, placement: 'none', bytes: 0 } };
  const notJson = notJsonProblem(text);
  if (notJson !== null) return { ok: false, error: notJson, aborted: false };
  try {
    const result = await outputs.putOutput(workflowId, taskName, attemptNo, text, operation);
    if (result.warning) log(`warning: ${result.warning}`);
    if (result.adopted)
      log(
        `attempt ${attemptNo} of task "${taskName}" already has a stored output (an earlier delivery wrote it): that output is reported, this one dropped`,
      );
    return { ok: true, result };
  } catch (error) {
    const message = errorMessage(error);
    const aborted = operation.abortSignal?.aborted === true;
    return { ok: false, error: `could not store the output: ${message}`, aborted };
  }
}
