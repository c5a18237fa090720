import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { decodeEnvelope } from './envelope';
import {
  decodeWorkflowTask,
  encodeTaskMessage,
  isReservedKwarg,
  messageByteLength,
  parseTaskMessageId,
  SERVICE_BUS_MAX_MESSAGE_BYTES,
  STORAGE_QUEUE_MAX_MESSAGE_BYTES,
  taskMessageId,
  type WorkflowTaskInfo,
} from './task-message';
import { queueSafeText } from './queue-safe';
import { jsonNormalize, kwargsArb, taskNameArb, workflowIdArb } from './test-helpers/arbitraries';
import { compactUpstreamRefs, type CompactUpstreamRefs } from './upstream-refs';

function decodeTask(text: string): WorkflowTaskInfo | null {
  const env = decodeEnvelope(text);
  if (!env.ok) throw new Error(env.error);
  const task = decodeWorkflowTask(env.value.kwargs);
  if (!task.ok) throw new Error(task.error);
  return task.value;
}

function expectError(r: { ok: boolean; error?: string }, fragment: string): void {
  expect(r.ok).toBe(false);
  expect(r.error).toContain(fragment);
  expect(r.error).not.toMatch(/[\n\r]/);
}

describe('constants', () => {
  it('has the queue limits', () => {
    expect(STORAGE_QUEUE_MAX_MESSAGE_BYTES).toBe(65536);
    expect(SERVICE_BUS_MAX_MESSAGE_BYTES).toBe(262144 - 4096);
  });
});

describe('messageByteLength', () => {
  it('counts UTF-8 bytes, with each character XML forbids as its six-byte \\uXXXX escape', () => {
    expect(messageByteLength('')).toBe(0);
    expect(messageByteLength('abc')).toBe(3);
    expect(messageByteLength('é')).toBe(2);
    expect(messageByteLength('€')).toBe(3);
    expect(messageByteLength('😀')).toBe(4);
    expect(messageByteLength('\ud800')).toBe(6); // lone surrogate → \ud800
    expect(messageByteLength('\ud800x')).toBe(7);
    expect(messageByteLength('\udc00\ud83d\ude00')).toBe(10);
    expect(messageByteLength('"\uffff\ufffe"')).toBe(14);
    expect(messageByteLength('\u0000\t\n\r\u001f')).toBe(15);
  });

  it('agrees with TextEncoder on the escaped text (property)', () => {
    const TE = (globalThis as unknown as { TextEncoder: new () => { encode(s: string): Uint8Array } }).TextEncoder;
    const encoder = new TE();
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string()), (s) => {
        expect(messageByteLength(s)).toBe(encoder.encode(queueSafeText(s)).length);
      }),
      { numRuns: 500 },
    );
  });
});

describe('taskMessageId / parseTaskMessageId', () => {
  it('builds {workflow}/{task}/{attempt}', () => {
    expect(taskMessageId('wf-1', 'train', 1)).toBe('wf-1/train/1');
    expect(taskMessageId('wf-1', 'a/b', 3)).toBe('wf-1/a/b/3');
  });

  it('rejects invalid parts', () => {
    expect(() => taskMessageId('w/f', 't', 1)).toThrow('invalid workflow id');
    expect(() => taskMessageId('wf', '', 1)).toThrow('task name');
    expect(() => taskMessageId('wf', 't', 0)).toThrow('attempt number');
    expect(() => taskMessageId('wf', 't', 1.5)).toThrow('attempt number');
  });

  it('parses ids whose task names contain "/" and digits', () => {
    expect(parseTaskMessageId('wf/a/3/1')).toEqual({ ok: true, value: { workflowId: 'wf', taskName: 'a/3', attemptNo: 1 } });
    expect(parseTaskMessageId('wf/x/r1/2')).toEqual({ ok: true, value: { workflowId: 'wf', taskName: 'x/r1', attemptNo: 2 } });
    expect(parseTaskMessageId('wf///1')).toEqual({ ok: true, value: { workflowId: 'wf', taskName: '/', attemptNo: 1 } });
    expect(parseTaskMessageId('wf/%2F%/10')).toEqual({ ok: true, value: { workflowId: 'wf', taskName: '%2F%', attemptNo: 10 } });
  });

  it('reports malformed ids', () => {
    expectError(parseTaskMessageId('nowhere'), 'task message id: no "/"');
    expectError(parseTaskMessageId('w f/t/1'), 'invalid workflow id the string "w f"');
    expectError(parseTaskMessageId('/t/1'), 'invalid workflow id');
    expectError(parseTaskMessageId('wf/t'), 'expected an attempt number ≥ 1 after the task name, got the string "t"');
    expectError(parseTaskMessageId('wf/t/01'), 'expected an attempt number');
    expectError(parseTaskMessageId('wf/t/0'), 'expected an attempt number');
    expectError(parseTaskMessageId('wf/t/1/r0'), 'expected an attempt number');
    expectError(parseTaskMessageId('wf/t/r1'), 'expected an attempt number');
    // The id ends in the attempt number: there is no `/r{n}` suffix.
    expectError(parseTaskMessageId('wf/x/2/r1'), 'expected an attempt number ≥ 1 after the task name, got the string "r1"');
    expectError(parseTaskMessageId('wf/1'), 'empty task name');
    expectError(parseTaskMessageId('wf//1'), 'empty task name');
    expectError(parseTaskMessageId('wf/1/r1'), 'expected an attempt number');
    expectError(parseTaskMessageId('wf/t/99999999999999999999'), 'number too large');
    expectError(parseTaskMessageId(null as unknown as string), 'expected a string, got null');
  });

  it('round-trips (property, names with "/", "%", digits, r-segments)', () => {
    fc.assert(
      fc.property(workflowIdArb, taskNameArb, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (workflowId, taskName, attemptNo) => {
        const id = taskMessageId(workflowId, taskName, attemptNo);
        expect(parseTaskMessageId(id)).toEqual({ ok: true, value: { workflowId, taskName, attemptNo } });
      }),
      { numRuns: 500 },
    );
  });
});

describe('encodeTaskMessage', () => {
  it('writes the envelope with the workflow kwargs after the task kwargs', () => {
    const text = encodeTaskMessage({
      workflowId: 'wf-1',
      taskName: 'train',
      attemptNo: 2,
      kwargs: { lr: 0.1 },
      upstream: { s: ['prep'] },
    });
    expect(text).toBe(
      '{"version":1,"reply_requested":false,"kwargs":"{\\"lr\\":0.1,\\"__workflow_id\\":\\"wf-1\\",\\"__workflow_task\\":\\"train\\",\\"__attempt_no\\":2,\\"__upstream_outputs_compact\\":{\\"s\\":[\\"prep\\"]}}","num_retries":0,"id":"wf-1/train/2"}',
    );
  });

  it('writes the overflow blob form', () => {
    const text = encodeTaskMessage({
      workflowId: 'wf',
      taskName: 'join',
      attemptNo: 1,
      kwargs: {},
      upstreamBlob: 'state/upstream/wf/join/1.json',
    });
    const env = decodeEnvelope(text);
    expect(env.ok && env.value.id).toBe('wf/join/1');
    expect(env.ok && env.value.kwargs).toEqual({
      __workflow_id: 'wf',
      __workflow_task: 'join',
      __attempt_no: 1,
      __upstream_outputs_blob: 'state/upstream/wf/join/1.json',
    });
    expect(decodeTask(text)).toEqual({
      workflowId: 'wf',
      taskName: 'join',
      attemptNo: 1,
      upstream: null,
      upstreamBlob: 'state/upstream/wf/join/1.json',
      timeoutS: null,
      userKwargs: {},
    });
  });

  it('rejects invalid input', () => {
    const base = { workflowId: 'wf', taskName: 't', attemptNo: 1, kwargs: {} };
    expect(() => encodeTaskMessage({ ...base, kwargs: { __workflow_id: 'x' } })).toThrow('reserved name');
    expect(() => encodeTaskMessage({ ...base, kwargs: { __upstream_anything: 1 } })).toThrow('reserved name');
    expect(() => encodeTaskMessage({ ...base, kwargs: { __attempt_no: 1 } })).toThrow('reserved name');
    expect(() => encodeTaskMessage({ ...base, upstream: {}, upstreamBlob: 'state/x' })).toThrow('not both');
    expect(() => encodeTaskMessage({ ...base, upstreamBlob: 'no-slash' })).toThrow('upstreamBlob');
    expect(() => encodeTaskMessage({ ...base, attemptNo: 0 })).toThrow('attempt number');
    expect(() => encodeTaskMessage({ ...base, kwargs: null as unknown as Record<string, unknown> })).toThrow('kwargs');
  });

  it('round-trips through decodeEnvelope + decodeWorkflowTask (property)', () => {
    const compactArb: fc.Arbitrary<CompactUpstreamRefs> = fc
      .uniqueArray(
        fc.tuple(
          taskNameArb,
          fc.option(
            fc.jsonValue({ maxDepth: 1 }).map((v) => JSON.stringify(v) ?? 'null'),
            { nil: null },
          ),
        ),
        {
          selector: ([n]) => n,
          maxLength: 6,
        },
      )
      .map((pairs) =>
        compactUpstreamRefs(
          'wf',
          pairs.map(([name, outputRef]) => ({ name, outputRef })),
          'outputs',
        ),
      );
    const userKwargs = kwargsArb.map((k) => Object.fromEntries(Object.entries(k).filter(([key]) => !isReservedKwarg(key))));
    fc.assert(
      fc.property(
        workflowIdArb,
        taskNameArb,
        fc.integer({ min: 1, max: 1000 }),
        userKwargs,
        fc.oneof(
          fc.constant({}),
          compactArb.map((upstream) => ({ upstream })),
          fc.constantFrom({ upstreamBlob: 'state/upstream/x/1.json' }),
        ),
        fc.option(fc.integer({ min: 1, max: 86_400 }), { nil: null }),
        (workflowId, taskName, attemptNo, kwargs, up, timeoutS) => {
          const text = encodeTaskMessage({ workflowId, taskName, attemptNo, kwargs, timeoutS, ...up });
          const env = decodeEnvelope(text);
          expect(env.ok).toBe(true);
          if (!env.ok) return;
          expect(env.value.numRetries).toBe(0);
          expect(parseTaskMessageId(env.value.id)).toEqual({
            ok: true,
            value: { workflowId, taskName, attemptNo },
          });
          expect(decodeWorkflowTask(env.value.kwargs)).toEqual({
            ok: true,
            value: {
              workflowId,
              taskName,
              attemptNo,
              upstream: 'upstream' in up ? up.upstream : null,
              upstreamBlob: 'upstreamBlob' in up ? up.upstreamBlob : null,
              timeoutS,
              userKwargs: jsonNormalize(kwargs),
            },
          });
        },
      ),
    );
  });
});

describe('decodeWorkflowTask', () => {
  const good = { __workflow_id: 'wf', __workflow_task: 't', __attempt_no: 1 };

  it('returns null for a plain task', () => {
    expect(decodeWorkflowTask({ cmd: 'echo', __attempt_no: 'whatever' })).toEqual({ ok: true, value: null });
    expect(decodeWorkflowTask({})).toEqual({ ok: true, value: null });
  });

  it('separates user kwargs from reserved ones', () => {
    const kwargs = JSON.parse(
      '{"a":1,"__proto__":{"b":2},"__workflow_extra":3,"__upstream_x":4,"__workflow_id":"wf","__workflow_task":"t","__attempt_no":5}',
    ) as Record<string, unknown>;
    const r = decodeWorkflowTask(kwargs);
    expect(r.ok).toBe(true);
    if (r.ok && r.value !== null) {
      expect(r.value.attemptNo).toBe(5);
      expect(Object.keys(r.value.userKwargs)).toEqual(['a', '__proto__']);
      expect(Object.getPrototypeOf(r.value.userKwargs)).toBe(Object.prototype);
    }
  });

  it('reports ill-typed workflow kwargs', () => {
    expectError(
      decodeWorkflowTask({ __workflow_task: 't', __attempt_no: 1 }),
      '"__workflow_id" must be a workflow id (1–128 of [A-Za-z0-9._-], starting with a letter or digit), got nothing',
    );
    expectError(decodeWorkflowTask({ ...good, __workflow_id: 'a/b' }), '"__workflow_id" must be a workflow id');
    expectError(decodeWorkflowTask({ __workflow_id: 'wf', __attempt_no: 1 }), '"__workflow_task" must be a non-empty string, got nothing');
    expectError(decodeWorkflowTask({ ...good, __workflow_task: 3 }), '"__workflow_task" must be a non-empty string, got the number 3');
    expectError(decodeWorkflowTask({ ...good, __attempt_no: undefined }), '"__attempt_no" must be an integer ≥ 1, got nothing');
    expectError(decodeWorkflowTask({ ...good, __attempt_no: '1' }), '"__attempt_no" must be an integer ≥ 1, got the string "1"');
    expectError(decodeWorkflowTask({ ...good, __attempt_no: 0 }), '"__attempt_no" must be an integer ≥ 1');
    expectError(
      decodeWorkflowTask({ ...good, __upstream_outputs_compact: { s: 'x' } }),
      '"__upstream_outputs_compact": upstream refs: "s" must be an object of attempt number',
    );
    expectError(
      decodeWorkflowTask({ ...good, __upstream_outputs_blob: 'nope' }),
      '"__upstream_outputs_blob" must be "{container}/{path}", got the string "nope"',
    );
    expectError(decodeWorkflowTask({ ...good, __upstream_outputs_blob: 5 }), '"__upstream_outputs_blob" must be');
    expectError(
      decodeWorkflowTask({ ...good, __upstream_outputs_blob: 'state/x', __upstream_outputs_compact: {} }),
      'must not both be present',
    );
    expectError(decodeWorkflowTask([] as unknown as Record<string, unknown>), 'task message kwargs: must be an object, got an array');
  });
});

describe('fan-in message size', () => {
  it('keeps a 3 000-parent fan-in with canonical blob outputs under 64 KiB', () => {
    const workflowId = '01JZ8K3V7Q2M4N6P8R0T2W4Y6A';
    const parents = Array.from({ length: 3000 }, (_, k) => {
      const name = `shard-${String(k).padStart(5, '0')}`;
      // Most parents succeeded on their first attempt, some needed a retry or two.
      const attemptNo = k % 10 === 0 ? 2 : k % 97 === 0 ? 3 : 1;
      return { name, outputRef: `blob:jobq-outputs/outputs/${workflowId}/${name}/${attemptNo}.json:ab/cd+ef/gh+ij/kl+mnoQ==` };
    });
    const upstream = compactUpstreamRefs(workflowId, parents, 'jobq-outputs');
    expect(Object.values(upstream.s ?? {}).flat()).toHaveLength(3000);
    expect(Object.keys(upstream.s ?? {})).toEqual(['1', '2', '3']);
    expect(upstream.i).toBeUndefined();
    const text = encodeTaskMessage({
      workflowId,
      taskName: 'reduce-all-shards',
      attemptNo: 1,
      kwargs: { output_dir: 'results/final', threshold: 0.5 },
      upstream,
    });
    const size = messageByteLength(text);
    expect(size).toBeLessThan(STORAGE_QUEUE_MAX_MESSAGE_BYTES);
    expect(decodeTask(text)?.upstream).toEqual(upstream);
  });
});
