import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  type Completion,
  completionMessageId,
  decodeCompletionBody,
  decodeCoordinatorMessage,
  encodeCompletion,
  encodeCompletionBody,
  encodeWakeup,
} from './completion';
import { decodeEnvelope, encodeEnvelope } from './envelope';
import { taskNameArb, workflowIdArb } from './test-helpers/arbitraries';

const done: Completion = {
  workflowId: 'wf-1',
  taskName: 'train',
  success: true,
  attemptNo: 2,
  outputRef: '{"loss":0.1}',
  error: null,
};

function envelopeWith(kwargs: Record<string, unknown>): string {
  return encodeEnvelope({ id: 'x', kwargs, numRetries: 0 });
}

function withBody(body: unknown): string {
  return envelopeWith({ __completion_body: JSON.stringify(body) });
}

const goodBody = { workflow_id: 'wf', task_name: 't', success: true, attempt_no: 1, output_ref: null, error: null };

describe('encodeCompletion', () => {
  it('writes the exact body and envelope', () => {
    expect(encodeCompletionBody(done)).toBe(
      '{"workflow_id":"wf-1","task_name":"train","success":true,"attempt_no":2,"output_ref":"{\\"loss\\":0.1}","error":null}',
    );
    const env = decodeEnvelope(encodeCompletion(done));
    expect(env).toEqual({
      ok: true,
      value: {
        version: 1,
        id: 'wf-1/train/2/done',
        kwargs: { __completion_body: encodeCompletionBody(done) },
        numRetries: 0,
        replyRequested: false,
      },
    });
  });

  it('uses "current" in the id when the attempt is null', () => {
    expect(completionMessageId({ ...done, attemptNo: null })).toBe('wf-1/train/current/done');
    expect(completionMessageId({ ...done, taskName: 'a/b' })).toBe('wf-1/a/b/2/done');
  });

  it('rejects invalid completions', () => {
    expect(() => encodeCompletion({ ...done, workflowId: '' })).toThrow('invalid workflow id');
    expect(() => encodeCompletion({ ...done, taskName: '' })).toThrow('task name');
    expect(() => encodeCompletion({ ...done, attemptNo: 0 })).toThrow('attempt number');
    expect(() => encodeCompletion({ ...done, success: 'yes' as unknown as boolean })).toThrow('success');
    expect(() => encodeCompletion({ ...done, outputRef: 1 as unknown as string })).toThrow('outputRef');
    expect(() => encodeCompletion({ ...done, error: {} as unknown as string })).toThrow('error');
  });

  it('round-trips through decodeCoordinatorMessage (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          workflowId: workflowIdArb,
          taskName: taskNameArb,
          success: fc.boolean(),
          attemptNo: fc.option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: null }),
          outputRef: fc.option(fc.string(), { nil: null }),
          error: fc.option(fc.string(), { nil: null }),
          startedAt: fc.option(fc.constantFrom('2026-01-01T00:00:00.000Z', 'x'), { nil: null }),
          cancelled: fc.boolean(),
        }),
        (c) => {
          expect(decodeCoordinatorMessage(encodeCompletion(c))).toEqual({ kind: 'completion', completion: c });
        },
      ),
    );
  });
});

describe('encodeWakeup', () => {
  it('writes the wake-up envelope with an optional suffix', () => {
    expect(encodeWakeup('wf-1')).toBe(
      '{"version":1,"reply_requested":false,"kwargs":"{\\"__workflow_wakeup\\":\\"wf-1\\"}","num_retries":0,"id":"wakeup/wf-1"}',
    );
    const env = decodeEnvelope(encodeWakeup('wf-1', 'n42'));
    expect(env.ok && env.value.id).toBe('wakeup/wf-1/n42');
    const noSuffix = decodeEnvelope(encodeWakeup('wf-1', ''));
    expect(noSuffix.ok && noSuffix.value.id).toBe('wakeup/wf-1');
    expect(() => encodeWakeup('')).toThrow('invalid workflow id');
  });

  it('round-trips (property)', () => {
    fc.assert(
      fc.property(workflowIdArb, fc.option(fc.string(), { nil: undefined }), (workflowId, suffix) => {
        expect(decodeCoordinatorMessage(encodeWakeup(workflowId, suffix))).toEqual({ kind: 'wakeup', workflowId });
      }),
    );
  });
});

describe('decodeCompletionBody', () => {
  it('reads absent attempt_no, output_ref and error as null and ignores extra keys', () => {
    expect(decodeCompletionBody('{"workflow_id":"wf","task_name":"t","success":false,"duration_ms":5}')).toEqual({
      ok: true,
      value: {
        workflowId: 'wf',
        taskName: 't',
        success: false,
        attemptNo: null,
        outputRef: null,
        error: null,
        startedAt: null,
        cancelled: false,
      },
    });
  });

  it('reads started_at and cancelled, and writes them only when set', () => {
    const base = { workflowId: 'wf', taskName: 't', success: false, attemptNo: 2, outputRef: null, error: 'stopped' };
    expect(encodeCompletionBody(base)).not.toMatch(/started_at|cancelled/);
    const text = encodeCompletionBody({ ...base, startedAt: '2026-01-01T00:00:00.000Z', cancelled: true });
    expect(JSON.parse(text)).toMatchObject({ started_at: '2026-01-01T00:00:00.000Z', cancelled: true });
    expect(decodeCompletionBody(text)).toEqual({ ok: true, value: { ...base, startedAt: '2026-01-01T00:00:00.000Z', cancelled: true } });
    expect(decodeCompletionBody(JSON.stringify({ workflow_id: 'wf', task_name: 't', success: false, cancelled: 'yes' }))).toMatchObject({
      ok: false,
    });
  });
});

describe('decodeCoordinatorMessage', () => {
  const poison: Array<[string, string, string]> = [
    ['bad JSON', '{"version":1', 'envelope: not valid JSON'],
    ['not an object', '[]', 'envelope: must be a JSON object'],
    ['wrong envelope version', '{"version":3,"reply_requested":false,"kwargs":"{}","num_retries":0,"id":"x"}', '"version" must be 0 or 1'],
    ['kwargs not JSON', '{"version":1,"reply_requested":false,"kwargs":"nope","num_retries":0,"id":"x"}', '"kwargs" is not valid JSON'],
    ['no kwargs', envelopeWith({}), 'kwargs must hold exactly one of "__completion_body" or "__workflow_wakeup", got none'],
    ['unknown kwarg', envelopeWith({ cmd: 'echo' }), 'unknown kwarg "cmd"'],
    ['two kwargs', envelopeWith({ __completion_body: '{}', __workflow_wakeup: 'wf' }), 'got "__completion_body", "__workflow_wakeup"'],
    ['body not a string', envelopeWith({ __completion_body: goodBody }), '"__completion_body" must be a string of JSON, got an object'],
    ['body not JSON', envelopeWith({ __completion_body: '{x' }), 'completion body: not valid JSON'],
    ['body an array', withBody([]), 'completion body: must be a JSON object, got an array'],
    ['empty workflow id', withBody({ ...goodBody, workflow_id: '' }), '"workflow_id" must be a non-empty workflow id'],
    ['workflow id with slash', withBody({ ...goodBody, workflow_id: 'a/b' }), '"workflow_id" must be a non-empty workflow id'],
    ['missing task name', withBody({ ...goodBody, task_name: undefined }), '"task_name" must be a non-empty string, got nothing'],
    ['success as string', withBody({ ...goodBody, success: 'true' }), '"success" must be a boolean, got the string "true"'],
    [
      'attempt as string',
      withBody({ ...goodBody, attempt_no: '2' }),
      'completion body: "attempt_no" must be an integer ≥ 1 or null, got the string "2"',
    ],
    ['attempt zero', withBody({ ...goodBody, attempt_no: 0 }), '"attempt_no" must be an integer ≥ 1 or null'],
    ['attempt fractional', withBody({ ...goodBody, attempt_no: 1.5 }), '"attempt_no" must be an integer ≥ 1 or null'],
    ['output_ref as object', withBody({ ...goodBody, output_ref: { a: 1 } }), '"output_ref" must be a string or null, got an object'],
    ['error as number', withBody({ ...goodBody, error: 500 }), '"error" must be a string or null, got the number 500'],
    ['wakeup empty id', envelopeWith({ __workflow_wakeup: '' }), 'wakeup: "__workflow_wakeup" must be a non-empty workflow id'],
    ['wakeup non-string', envelopeWith({ __workflow_wakeup: 7 }), 'got the number 7'],
    ['wakeup naming an engine blob', envelopeWith({ __workflow_wakeup: '_coordinator.stats' }), 'must be a non-empty workflow id'],
    [
      'completion naming an engine blob',
      withBody({ ...goodBody, workflow_id: '_coordinator.stats' }),
      '"workflow_id" must be a non-empty workflow id',
    ],
  ];

  it.each(poison)('classifies %s as poison', (_label, text, fragment) => {
    const r = decodeCoordinatorMessage(text);
    expect(r.kind).toBe('poison');
    if (r.kind === 'poison') {
      expect(r.reason).toContain(fragment);
      expect(r.reason).not.toMatch(/[\n\r]/);
    }
  });

  it('accepts a well-formed completion with nulls and a version-0 envelope', () => {
    expect(decodeCoordinatorMessage(withBody(goodBody))).toEqual({
      kind: 'completion',
      completion: {
        workflowId: 'wf',
        taskName: 't',
        success: true,
        attemptNo: 1,
        outputRef: null,
        error: null,
        startedAt: null,
        cancelled: false,
      },
    });
    const v0 = JSON.stringify({ version: 0, kwargs: JSON.stringify({ __workflow_wakeup: 'wf' }), num_retries: 0, id: 'w' });
    expect(decodeCoordinatorMessage(v0)).toEqual({ kind: 'wakeup', workflowId: 'wf' });
  });

  it('never throws on arbitrary input (property)', () => {
    const bodyish = fc
      .record(
        {
          workflow_id: fc.oneof(workflowIdArb, fc.jsonValue()),
          task_name: fc.oneof(taskNameArb, fc.jsonValue()),
          success: fc.oneof(fc.boolean(), fc.jsonValue()),
          attempt_no: fc.oneof(fc.integer(), fc.constant(null), fc.jsonValue()),
          output_ref: fc.oneof(fc.string(), fc.jsonValue()),
          error: fc.oneof(fc.string(), fc.jsonValue()),
        },
        { requiredKeys: [] },
      )
      .map((b) => withBody(b));
    const kwargsish = fc
      .dictionary(fc.constantFrom('__completion_body', '__workflow_wakeup', 'x'), fc.oneof(fc.string(), fc.jsonValue()))
      .map((k) => envelopeWith(k));
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), bodyish, kwargsish), (text) => {
        const r = decodeCoordinatorMessage(text);
        expect(['completion', 'wakeup', 'poison']).toContain(r.kind);
        if (r.kind === 'poison') expect(r.reason).not.toMatch(/[\n\r]/);
      }),
      { numRuns: 1000 },
    );
  });
});
