import { describe, expect, it } from '@jest/globals';
import { createRuntime, parseWorkflow, withTaskStates, type TaskRuntime } from '@jobq/dag-core';
import { skipLines, skippedJson, skippedTask, skippedTasks, skipWarnings } from './skips';
import { RateWindow, frameLines } from './watch-view';

const WORKFLOW = [
  'name: skips',
  'tasks:',
  '  - name: a',
  '    kwargs: {cmd: "true"}',
  ...['low', 'typo', 'broken'].flatMap((name) => [
    `  - name: ${name}`,
    '    depends_on: [a]',
    '    condition: inputs.a.accuracy > 0.9',
    '    kwargs: {cmd: "true"}',
  ]),
  '',
].join('\n');

const REASONS = {
  low: 'condition false: inputs.a.accuracy = 0.85, not > 0.9',
  typo: 'condition false: output of "a" has no field "acc"; it has: accuracy, loss',
  broken: 'condition error: cannot compare str and float with > (column 19)',
};

function state(status: TaskRuntime['status'], error: string | null = null): TaskRuntime {
  return {
    status,
    attemptNo: 0,
    retryBase: 0,
    outputRef: null,
    error,
    dispatchedAt: null,
    startedAt: null,
    completedAt: null,
    awaitingInputs: false,
    retryDueAt: null,
  };
}

function runtime() {
  const parsed = parseWorkflow(WORKFLOW, { filename: 'skips.yaml' });
  if (!parsed.ok) throw new Error('bad fixture');
  const created = createRuntime(parsed.value, { workflowId: 'skips-1', now: '2026-01-01T00:00:00.000Z', outputsContainer: null });
  return withTaskStates(created, [
    ['a', { ...state('completed'), attemptNo: 1 }],
    ['low', state('skipped', REASONS.low)],
    ['typo', state('skipped', REASONS.typo)],
    ['broken', state('skipped', REASONS.broken)],
  ]);
}

describe('skipped tasks', () => {
  it('are listed in definition order with their reasons; a missing field or an error is a warning', () => {
    const skipped = skippedTasks(runtime());
    expect(skipped).toEqual([
      { name: 'low', reason: REASONS.low, warning: false },
      { name: 'typo', reason: REASONS.typo, warning: true },
      { name: 'broken', reason: REASONS.broken, warning: true },
    ]);
    expect(skippedJson(skipped)[1]).toEqual({ name: 'typo', skip_reason: REASONS.typo });
    expect(skipWarnings(skipped)).toEqual([
      `warning: task "typo" skipped: ${REASONS.typo}`,
      `warning: task "broken" skipped: ${REASONS.broken}`,
    ]);
    // A runtime written before reasons had words: `condition false` alone, no warning.
    expect(skippedTask('old', 'condition false')).toEqual({ name: 'old', reason: 'condition false', warning: false });
    expect(skippedTask('none', null)).toMatchObject({ reason: 'no reason recorded', warning: false });
  });

  it('are shown up to a limit, then counted', () => {
    const skipped = skippedTasks(runtime());
    expect(skipLines(skipped, { prefix: '  ', limit: 2, more: '--verbose shows all' })).toEqual([
      `  low: ${REASONS.low}`,
      `  typo: ${REASONS.typo}`,
      '  … 1 more skipped (--verbose shows all)',
    ]);
    expect(skipLines(skipped, { prefix: '', limit: 0 })).toHaveLength(3);
    expect(skipWarnings(skipped, 1)).toEqual([
      `warning: task "typo" skipped: ${REASONS.typo}`,
      'warning: … 1 more tasks skipped for a missing field or an error',
    ]);
  });

  it('appear in the watch view with their reasons', () => {
    const lines = frameLines(runtime(), new RateWindow(), {
      byLayer: false,
      runningShown: 5,
      skippedShown: 2,
      now: Date.parse('2026-01-01T00:00:05.000Z'),
    });
    expect(lines).toContain(`skipped: low: ${REASONS.low}`);
    expect(lines).toContain(`skipped: typo: ${REASONS.typo}`);
    expect(lines).toContain('skipped: … 1 more skipped (jobq workflow status lists them)');
  });
});
