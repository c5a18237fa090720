import { describe, expect, it } from '@jest/globals';
import { DEFINITION_ISSUE_CODES } from './issue-codes';
import {
  MAX_TASK_KEY_LENGTH,
  MAX_WORKFLOW_NAME_LENGTH,
  MAX_WORKFLOW_QUEUES,
  TABLE_KEY_MAX_CHARS,
  TABLE_STRING_MAX_CHARS,
  WORST_CASE_ATTEMPT_NO,
  WORST_CASE_WORKFLOW_ID,
} from './limits';
import { parseWorkflow } from './parse';
import { validateWorkflow } from './validate';
import { sequentializeFanIn } from '../transform/fan-in';
import { SERVICE_BUS_MAX_MESSAGE_BYTES, STORAGE_QUEUE_MAX_MESSAGE_BYTES, encodeTaskMessage, messageByteLength } from '../wire/task-message';
import { withEnvelopeTrace } from '../wire/envelope';
import type { Issue } from '../result';

function issuesOf(value: unknown): Issue[] {
  const result = validateWorkflow(value);
  if (result.ok) throw new Error('expected issues, got a valid definition');
  return result.issues;
}

const task = (name: string, extra: Record<string, unknown> = {}) => ({ name, kwargs: { cmd: 'true' }, ...extra });

describe('the limits of the storage a definition meets', () => {
  it('are the stated numbers', () => {
    expect(MAX_WORKFLOW_NAME_LENGTH).toBe(1000);
    expect(MAX_WORKFLOW_QUEUES).toBe(64);
    expect(TABLE_STRING_MAX_CHARS).toBe(32_768);
    expect(TABLE_KEY_MAX_CHARS).toBe(512);
    expect(MAX_TASK_KEY_LENGTH).toBe(480);
    expect(DEFINITION_ISSUE_CODES).toEqual(expect.arrayContaining(['bad-kwarg', 'secret-ref-syntax', 'storage-limit']));
  });

  describe('the workflow name (a property of the index row)', () => {
    it('refuses a 40 000-character name, which validated before and then failed submit with PropertyValueTooLarge', () => {
      const issues = issuesOf({ name: 'n'.repeat(40_000), tasks: [task('a')] });
      expect(issues).toEqual([
        { code: 'bad-name', path: 'name', message: 'a workflow name has at most 1000 characters (this one has 40000)' },
      ]);
      const fromYaml = parseWorkflow(`name: ${'n'.repeat(40_000)}\ntasks: [{name: a, kwargs: {cmd: "true"}}]\n`, { filename: 'w.yaml' });
      expect(!fromYaml.ok && fromYaml.issues.map((i) => [i.code, i.line, i.column])).toEqual([['bad-name', 1, 7]]);
    });

    it('accepts a name of exactly the maximum', () => {
      expect(validateWorkflow({ name: 'n'.repeat(MAX_WORKFLOW_NAME_LENGTH), tasks: [task('a')] }).ok).toBe(true);
    });
  });

  describe('the queue list (a property of the index row)', () => {
    const queues = (n: number) => Array.from({ length: n }, (_, i) => task(`t${i}`, { queue: `queue-${String(i).padStart(3, '0')}` }));

    it(`refuses more than ${MAX_WORKFLOW_QUEUES} distinct queues, at the task that brings one too many`, () => {
      const issues = issuesOf({ name: 'w', tasks: [...queues(65), task('again', { queue: 'queue-000' })] });
      expect(issues).toEqual([
        {
          code: 'storage-limit',
          path: 'tasks[64].queue',
          message: 'the workflow uses 65 distinct queues; at most 64 fit its index row',
        },
      ]);
    });

    it('counts the default queue of a task without its own', () => {
      const issues = issuesOf({ name: 'w', tasks: [...queues(64), task('plain')] });
      expect(issues.map((i) => [i.code, i.path])).toEqual([['storage-limit', 'tasks[64]']]);
    });

    it(`accepts ${MAX_WORKFLOW_QUEUES} queues, and ${MAX_WORKFLOW_QUEUES} of the longest queue specs fit one table property`, () => {
      expect(validateWorkflow({ name: 'w', tasks: queues(64) }).ok).toBe(true);
      const longest = Array.from(
        { length: MAX_WORKFLOW_QUEUES },
        (_, i) => `sb://${'n'.repeat(98)}${String(i).padStart(2, '0')}/${'q'.repeat(260)}`,
      );
      expect(validateWorkflow({ name: 'w', tasks: longest.map((queue, i) => task(`t${i}`, { queue })) }).ok).toBe(true);
      // The index row stores the sorted JSON array of the distinct queue specs.
      expect(JSON.stringify([...longest].sort()).length).toBeLessThanOrEqual(TABLE_STRING_MAX_CHARS);
    });
  });

  describe('the task message (kwargs travel in it)', () => {
    it('refuses a task whose message cannot fit the Storage Queue limit, naming the limit', () => {
      const issues = issuesOf({ name: 'w', tasks: [task('a', { kwargs: { cmd: 'x'.repeat(70_000) } })] });
      expect(issues).toEqual([
        {
          code: 'storage-limit',
          path: 'tasks[0].kwargs',
          message: expect.stringMatching(
            /^the task message of "a" would be 7\d{4} bytes; queue "default" takes at most 65536 \(kwargs are too large\)$/,
          ),
        },
      ]);
    });

    it('applies the Service Bus limit to sb:// queues, from the task or the default queue', () => {
      const big = { cmd: 'x'.repeat(70_000) };
      expect(validateWorkflow({ name: 'w', tasks: [task('a', { kwargs: big, queue: 'sb://ns/q' })] }).ok).toBe(true);
      expect(validateWorkflow({ name: 'w', default_queue: 'sb://ns/q', tasks: [task('a', { kwargs: big })] }).ok).toBe(true);
      const issues = issuesOf({ name: 'w', tasks: [task('a', { kwargs: { cmd: 'x'.repeat(300_000) }, queue: 'sb://ns/q' })] });
      expect(issues.map((i) => [i.code, i.path])).toEqual([['storage-limit', 'tasks[0].kwargs']]);
      expect(issues[0]?.message).toContain('at most 258048');
    });

    it('says so in one short line, however long the task name and queue spec', () => {
      const name = `${'n'.repeat(100)}/${'m'.repeat(150)}`;
      const queue = `sb://${'s'.repeat(100)}/${'q'.repeat(260)}`;
      const issues = issuesOf({ name: 'w', tasks: [task(name, { kwargs: { cmd: 'x'.repeat(300_000) }, queue })] });
      expect(issues.map((i) => i.code)).toEqual(['storage-limit']);
      expect(issues[0]!.message.length).toBeLessThan(250);
    });

    it('counts the encoded size: quotes are escaped twice on the way into the envelope', () => {
      // 20 000 characters of kwargs, 80 000 bytes of message.
      const issues = issuesOf({ name: 'w', tasks: [task('a', { kwargs: { cmd: '"'.repeat(20_000) } })] });
      expect(issues.map((i) => i.code)).toEqual(['storage-limit']);
    });

    /** The longest cmd of x's that validates for `tasks`' last task. */
    function longestCmd(tasks: (cmd: string) => unknown[], limit: number): number {
      let lo = 0;
      let hi = limit;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (validateWorkflow({ name: 'w', tasks: tasks('x'.repeat(mid)) }).ok) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }

    it('is checked with the longest workflow id, a huge attempt number and the traceparent key, and leaves little unused', () => {
      const n = longestCmd((cmd) => [task('root', { kwargs: { cmd } })], STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      const worst = (cmd: string) =>
        messageByteLength(
          withEnvelopeTrace(
            encodeTaskMessage({
              workflowId: WORST_CASE_WORKFLOW_ID,
              taskName: 'root',
              attemptNo: WORST_CASE_ATTEMPT_NO,
              timeoutS: Number.MAX_SAFE_INTEGER,
              kwargs: { cmd },
            }),
            { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
          ),
        );
      expect(worst('x'.repeat(n))).toBeLessThanOrEqual(STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      expect(worst('x'.repeat(n + 1))).toBeGreaterThan(STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      expect(n).toBeGreaterThan(STORAGE_QUEUE_MAX_MESSAGE_BYTES - 600);
      // A real message (short id, first attempt) is smaller still.
      expect(
        messageByteLength(encodeTaskMessage({ workflowId: 'wf', taskName: 'root', attemptNo: 1, kwargs: { cmd: 'x'.repeat(n) } })),
      ).toBeLessThan(STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      expect(longestCmd((cmd) => [task('root', { kwargs: { cmd }, queue: 'sb://ns/q' })], SERVICE_BUS_MAX_MESSAGE_BYTES)).toBeGreaterThan(
        SERVICE_BUS_MAX_MESSAGE_BYTES - 600,
      );
    });

    it('leaves room, for a task with parents, for the reference to the overflow blob of its upstream refs', () => {
      const root = longestCmd((cmd) => [task('p', { kwargs: { cmd } })], STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      const child = longestCmd((cmd) => [task('p'), task('c', { kwargs: { cmd }, depends_on: ['p'] })], STORAGE_QUEUE_MAX_MESSAGE_BYTES);
      expect(child).toBeLessThan(root);
      expect(root - child).toBeLessThan(500);
    });
  });

  describe('task names (Table RowKeys once "%" and "/" are encoded)', () => {
    it(`refuses a name whose key would pass ${MAX_TASK_KEY_LENGTH} characters, though it has at most 256`, () => {
      const percent = issuesOf({ name: 'w', tasks: [task('%'.repeat(200))] });
      expect(percent).toEqual([
        {
          code: 'bad-name',
          path: 'tasks[0].name',
          message: expect.stringContaining(
            'the table key of a task name ("%" and "/" count 3 characters) has at most 480 characters (this one has 600)',
          ),
        },
      ]);
      const slashes = `${'a/'.repeat(120)}a`; // 241 characters, 120 of them "/"
      expect(issuesOf({ name: 'w', tasks: [task(slashes)] }).map((i) => i.code)).toEqual(['bad-name']);
    });

    it('accepts names up to that key length, and their merge nodes still fit a key', () => {
      const name = `${'a/'.repeat(112)}${'b'.repeat(32)}`; // 256 characters, key of 480
      expect(name).toHaveLength(256);
      const result = validateWorkflow({
        name: 'w',
        tasks: [task('p1'), task('p2'), task('p3'), task(name, { depends_on: ['p1', 'p2', 'p3'] })],
      });
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      const wide = sequentializeFanIn(result.value, 2);
      expect(wide.ok).toBe(true);
    });
  });
});
