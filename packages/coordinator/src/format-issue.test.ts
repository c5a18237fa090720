import { describe, expect, it } from '@jest/globals';
import { formatIssue } from './workflow-client';

describe('formatIssue', () => {
  it('is file:line:col: code: message, with the hint after the message when there is one', () => {
    expect(
      formatIssue('w.yaml', {
        code: 'unknown-field',
        path: 'tasks[0].depend_on',
        message: 'unknown field "depend_on"',
        line: 4,
        column: 5,
      }),
    ).toBe('w.yaml:4:5: unknown-field: unknown field "depend_on"');
    expect(
      formatIssue('w.yaml', {
        code: 'unknown-field',
        path: 'tasks[0].depend_on',
        message: 'unknown field "depend_on"',
        line: 4,
        column: 5,
        hint: 'did you mean "depends_on"?',
      }),
    ).toBe('w.yaml:4:5: unknown-field: unknown field "depend_on" (did you mean "depends_on"?)');
    expect(formatIssue('w.yaml', { code: 'bad-fan-in', path: 'tasks[2]', message: 'too wide' })).toBe(
      'w.yaml: tasks[2]: bad-fan-in: too wide',
    );
  });
});
