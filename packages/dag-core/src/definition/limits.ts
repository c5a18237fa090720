import { MAX_WORKFLOW_ID_LENGTH } from '../wire/ids';

/**
 * Every size limit a workflow definition is validated against, in one place. Most come from the
 * storage a definition meets when it is submitted and run: a definition that validates can be
 * stored and its tasks can be sent. Lengths of strings are counted in UTF-16 code units (what
 * JavaScript's `length` and Azure Tables count).
 */

/** How deep a definition may nest (objects and arrays, the top level included). */
export const MAX_DEFINITION_DEPTH = 64;

/**
 * Bound on YAML alias expansion: the number of times an anchor is used multiplied by its size,
 * per anchor. Generous for shared kwargs blocks, and stops a "billion laughs" document long before
 * it can exhaust memory.
 */
export const MAX_YAML_ALIAS_EXPANSION = 200_000;

/** An Azure Table string property holds at most 64 KiB of UTF-16: 32 768 code units. */
export const TABLE_STRING_MAX_CHARS = 32_768;

/** An Azure Table row (entity) holds at most 1 MiB. */
export const TABLE_ROW_MAX_BYTES = 1_048_576;

/**
 * An Azure Table PartitionKey or RowKey holds at most 1 KiB. Keys are UTF-16 strings like every
 * other property, so 1 KiB is taken as 512 code units (Azurite accepts 1 024 characters; real
 * Azure is documented only as "1 KiB").
 */
export const TABLE_KEY_MAX_CHARS = 512;

/**
 * Longest workflow name. The name is a property of the workflow's index row, so it must stay
 * under {@link TABLE_STRING_MAX_CHARS}; 1 000 leaves the row room for everything else and is
 * plenty for a name meant to be read.
 */
export const MAX_WORKFLOW_NAME_LENGTH = 1_000;

/**
 * Most distinct queue specs one workflow may use (its tasks' queues, the default queue included
 * when a task has no queue of its own). The index row stores them as one JSON array in a string
 * property: the longest spec (`sb://` + 100-character namespace + `/` + 260-character queue) is
 * 366 characters, 369 with its quotes and comma, so 64 of them take at most 23 618 characters,
 * within {@link TABLE_STRING_MAX_CHARS}. With the name (≤ 2 000 bytes), the error text (≤ 4 000
 * bytes) and a few numbers and dates, the row stays far below {@link TABLE_ROW_MAX_BYTES}.
 */
export const MAX_WORKFLOW_QUEUES = 64;

/** Longest task name. */
export const MAX_TASK_NAME_LENGTH = 256;

/**
 * Room left in a task key for the merge nodes the fan-in transform adds: `__merge_{name}_{batch}`
 * is at most 8 + 1 + 16 characters longer than the name it closes, none of them encoded.
 */
export const MERGE_NAME_ROOM = 32;

/**
 * Longest table key of a user task name. A task name is the RowKey of its task row once every
 * `%` is written `%25` and every `/` `%2F` (store-azure's `encodeTaskRowKey`): 256 characters can
 * become 768, more than a key holds, so the encoded length is limited too. Merge nodes may use
 * the {@link MERGE_NAME_ROOM} left up to {@link TABLE_KEY_MAX_CHARS}. A name of 256 characters
 * with at most 112 `%` or `/` always fits.
 */
export const MAX_TASK_KEY_LENGTH = TABLE_KEY_MAX_CHARS - MERGE_NAME_ROOM;

/**
 * Longest workflow id (the id rule of `wire/ids`): the task message of a definition is sized with
 * an id this long, since the id is chosen at submit.
 */
export { MAX_WORKFLOW_ID_LENGTH };

/** The workflow id a task message is sized with: the longest the id rule admits. */
export const WORST_CASE_WORKFLOW_ID = 'w'.repeat(MAX_WORKFLOW_ID_LENGTH);

/**
 * The attempt (and repair) number a task message is sized with: the largest safe integer, so
 * retries, re-runs and repairs can never make a message of a valid definition too large.
 */
export const WORST_CASE_ATTEMPT_NO = Number.MAX_SAFE_INTEGER;

/** The outputs container an overflow reference is sized with: the longest container name (63). */
export const WORST_CASE_CONTAINER = 'c'.repeat(63);

/**
 * Longest delay before a retry, in seconds: 7 days, the longest a Storage Queue keeps a message
 * invisible after it is sent (its initial visibility timeout). Retries are delivered by the queue's
 * own delayed delivery, so no retry may wait longer; `validate` checks this fixed bound.
 */
export const MAX_RETRY_DELAY_S = 604_800;

/**
 * Most tasks one matrix makes (its combinations after `exclude` and `include`), as in GitHub
 * Actions. A matrix is a handful of settings to try, not a way to write a large fan-out: a
 * generated workflow file does that with names of its choosing.
 */
export const MAX_MATRIX_TASKS = 256;

/**
 * Most combinations the axes of one matrix may multiply out to before `exclude` is applied:
 * they are enumerated to apply it, so a product this large is refused outright.
 */
export const MAX_MATRIX_AXIS_PRODUCT = 65_536;
