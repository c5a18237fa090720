/**
 * The reason stored with a task a condition skipped (its `error`), and how tools tell the kinds
 * apart. The wording is part of docs/conditions.md.
 */
import type { ConditionEvaluation } from './evaluate';
import { shorten } from './render';

/** The words of a missing field in an explanation: `has no field "acc"` or `has no field [0]`. */
const MISSING_FIELD = / has no field ["[]/;

/** Longest skip reason, in characters; a longer one ends in `…`. */
export const MAX_SKIP_REASON_LENGTH = 500;

/**
 * What a skip reason says happened:
 * - `condition-false`: the condition was false or unknown (`condition false: …`);
 * - `missing-field`: the same, decided by a field missing from a parent's output (a typo in the
 *   condition, or an output that lacks it): `… has no field "acc"; it has: accuracy, loss`;
 * - `error`: the condition could not be evaluated (`condition error: …`) or a parent's output
 *   could not be read.
 */
export type SkipKind = 'condition-false' | 'missing-field' | 'error';

/**
 * The reason for skipping a task after `evaluation`, or null when the task runs:
 * `condition false: inputs["train-cpu"].accuracy = 0.85, not > 0.9; …` (false or unknown) or
 * `condition error: cannot compare str and int with > (column 12)`. One line, at most
 * {@link MAX_SKIP_REASON_LENGTH} characters.
 */
export function conditionSkipReason(evaluation: ConditionEvaluation): string | null {
  if (!evaluation.ok) return boundSkipReason(`condition error: ${evaluation.error}`);
  if (evaluation.value) return null;
  return boundSkipReason(evaluation.explanation === '' ? 'condition false' : `condition false: ${evaluation.explanation}`);
}

/** A reason made one line (line breaks become spaces) of at most {@link MAX_SKIP_REASON_LENGTH} characters. */
export function boundSkipReason(reason: string): string {
  return shorten(reason.replace(/\s*[\r\n]+\s*/g, ' '), MAX_SKIP_REASON_LENGTH);
}

/**
 * The kind of a skipped task's reason (its `error`). Reasons written before explanations existed
 * (`condition false` alone) are `condition-false`; a missing reason too.
 */
export function skipReasonKind(reason: string | null): SkipKind {
  if (reason === null) return 'condition-false';
  if (reason === 'condition false' || reason.startsWith('condition false: ')) {
    // Every value and key in a reason is printed quoted with its quotes escaped, so ` has no
    // field "` (or `[` for an index) followed by a quote comes from the explanation itself.
    return MISSING_FIELD.test(reason) ? 'missing-field' : 'condition-false';
  }
  return 'error';
}
