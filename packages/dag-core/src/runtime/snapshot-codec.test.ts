import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { sequentializeFanIn } from '../transform/fan-in';
import { changedTasks, taskState, tasksIn } from './access';
import { decodeDefinition, encodeDefinition, canonicalJson } from './definition-codec';
import {
  applyDeltaRecord,
  assembleParts,
  decodeLogRecords,
  decodeSnapshot,
  encodeDeltaRecord,
  encodeRollRecord,
  encodeSnapshot,
  type LogRecord,
  type RuntimeParts,
} from './snapshot-codec';
import { RuntimeDecodeError } from './state-codec';
import { Harness, at, definition } from './test-helpers/build';
import type { WorkflowRuntime } from './types';
import { reduce } from './reduce';

const HASH = 'a'.repeat(64);
const META = { workflowId: 'wf1', definitionHash: HASH, generation: 3 };

function sample(): Harness {
  const base = definition(
    [
      { name: 'a', num_retries: 1 },
      { name: 'b' },
      { name: 'c' },
      { name: 'prep/x', depends_on: ['a', 'b', 'c'], condition: 'inputs.a.ok' },
    ],
    {
      max_parallelism: 5,
      default_task_timeout_s: 30,
    },
  );
  const h = new Harness(base);
  h.activate();
  h.fail('a');
  h.succeed('b', '{"v":[1,2]}');
  return h;
}

/** Replays `log` (text) onto the snapshot `snapshot` (text) of a runtime of `def`. */
function replay(snapshot: string, log: string, runtime: WorkflowRuntime, generation = 3): WorkflowRuntime {
  const parts = decodeSnapshot(snapshot, runtime.definition, { ...META, generation });
  for (const record of decodeLogRecords(log, runtime.definition)) {
    if (record.kind === 'delta') applyDeltaRecord(parts, record);
  }
  return assembleParts(parts);
}

function decodeError(run: () => unknown): RuntimeDecodeError {
  try {
    run();
  } catch (error) {
    if (error instanceof RuntimeDecodeError) return error;
    throw error;
  }
  throw new Error('expected a RuntimeDecodeError');
}

describe('canonicalJson / encodeDefinition / decodeDefinition', () => {
  it('sorts keys at every level and leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: null }], c: undefined })).toBe('{"a":[{"x":null,"y":2}],"b":1}');
    expect(canonicalJson('x')).toBe('"x"');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('round-trips a definition, merge nodes and gates included, and encodes equal definitions equally', () => {
    const t = sequentializeFanIn(
      definition([{ name: 'l0' }, { name: 'l1' }, { name: 'l2' }, { name: 'j', depends_on: ['l0', 'l1', 'l2'] }]),
      2,
    );
    if (!t.ok) throw new Error('transform failed');
    const text = encodeDefinition(t.value);
    expect(decodeDefinition(text)).toEqual(t.value);
    expect(encodeDefinition(structuredClone(t.value))).toBe(text);
    const def = sample().runtime.definition;
    expect(decodeDefinition(encodeDefinition(def))).toEqual(def);
  });

  it('refuses text that is not a valid definition without quoting it', () => {
    expect(decodeError(() => decodeDefinition('{"secret-looking": ')).message).toBe('definition: not JSON');
    const invalid = decodeError(() => decodeDefinition(JSON.stringify({ name: 'x', tasks: [] })));
    expect(invalid.message).toMatch(/^definition: invalid: tasks/);
  });
});

describe('snapshots', () => {
  it('round-trip a runtime with outputs, errors, attempts, timestamps and a cancel', () => {
    const h = sample();
    h.send({ type: 'cancel', requestedAt: '2026-01-01T00:10:00.000Z' });
    const text = encodeSnapshot(h.runtime, META);
    expect(assembleParts(decodeSnapshot(text, h.runtime.definition, META))).toEqual(h.runtime);
    const json = JSON.parse(text) as Record<string, unknown>;
    expect(json).toMatchObject({ version: 2, workflow_id: 'wf1', definition_hash: HASH, generation: 3 });
    expect(json).not.toHaveProperty('definition');
    expect((json.workflow as Record<string, unknown>).cancel_applied_at).toBe('2026-01-01T00:10:00.000Z');
    expect((json.tasks as unknown[])[1]).toEqual({
      status: 'completed',
      attempt_no: 1,
      output_ref: '{"v":[1,2]}',
      dispatched_at: at(1),
      completed_at: at(3),
    });
  });

  it('keeps started_at and dispatched_at as they are (a completion may report a start whose dispatch was never recorded)', () => {
    const h = new Harness(definition([{ name: 'a' }]));
    h.send({ type: 'completion', taskName: 'a', attemptNo: 1, success: true, outputRef: null, error: null, startedAt: at(5) });
    expect(taskState(h.runtime, 'a')).toMatchObject({ dispatchedAt: null, startedAt: at(5) });
    expect(assembleParts(decodeSnapshot(encodeSnapshot(h.runtime, META), h.runtime.definition, META))).toEqual(h.runtime);
  });

  it('round-trips a corrupt runtime and one with merge nodes', () => {
    const h = sample();
    h.send({ type: 'corrupt', reason: 'set aside' });
    expect(assembleParts(decodeSnapshot(encodeSnapshot(h.runtime, META), h.runtime.definition, META))).toEqual(h.runtime);
    const t = sequentializeFanIn(
      definition([{ name: 'l0' }, { name: 'l1' }, { name: 'l2' }, { name: 'j', depends_on: ['l0', 'l1', 'l2'] }]),
      2,
    );
    if (!t.ok) throw new Error('transform failed');
    const m = new Harness(t.value);
    m.activate();
    m.succeed('l0');
    expect(assembleParts(decodeSnapshot(encodeSnapshot(m.runtime, META), m.runtime.definition, META))).toEqual(m.runtime);
  });

  it('refuses a snapshot that is not the one expected, or is malformed', () => {
    const h = sample();
    const def = h.runtime.definition;
    const text = encodeSnapshot(h.runtime, META);
    const json = JSON.parse(text) as Record<string, unknown> & { tasks: unknown[]; workflow: Record<string, unknown> };
    const variant = (change: (j: typeof json) => void): string => {
      const copy = structuredClone(json);
      change(copy);
      return JSON.stringify(copy);
    };
    const cases: Array<[string, RegExp]> = [
      ['{"broken', /^runtime snapshot: not JSON$/],
      ['[]', /not a JSON object/],
      [variant((j) => (j.version = 3)), /format version 3 where 2 was expected/],
      [variant((j) => (j.workflow_id = 'other')), /it holds workflow "other"/],
      [variant((j) => (j.definition_hash = 'b'.repeat(64))), /written for definition b+, not a+/],
      [variant((j) => (j.generation = 2)), /it is generation 2, not 3/],
      [variant((j) => j.tasks.pop()), /3 task records for the 4 tasks/],
      [variant((j) => (j.tasks[0] = { status: 'exploded' })), /tasks\[0\]\."status" must be a task status/],
      [variant((j) => (j.tasks[0] = { status: 'pending', colour: 'red' })), /tasks\[0\] has an unknown field "colour"/],
      [variant((j) => delete j.workflow.updated_at), /"workflow"\."updated_at" must be a timestamp/],
      [variant((j) => (j.workflow.mood = 1)), /"workflow" has an unknown field "mood"/],
    ];
    for (const [bad, pattern] of cases) expect(decodeError(() => decodeSnapshot(bad, def, META)).message).toMatch(pattern);
  });
});

describe('log records', () => {
  it('replay the changed task records and workflow fields of each save onto the snapshot', () => {
    const h = sample();
    const snapshot = encodeSnapshot(h.runtime, META);
    const start = h.runtime;
    let log = '';
    let previous = h.runtime;
    let seq = 0;
    const save = () => {
      log += encodeDeltaRecord(++seq, previous, h.runtime, changedTasks(previous, h.runtime));
      previous = h.runtime;
    };
    h.succeed('a');
    save();
    h.succeed('c', '{"ok":true}');
    save();
    expect(replay(snapshot, log, start)).toEqual(h.runtime);
    h.succeed('prep/x');
    save();
    expect(h.runtime.status).toBe('completed');
    expect(replay(snapshot, log, start)).toEqual(h.runtime);
    // A save that changed nothing is a record with its number only.
    save();
    expect(log.split('\n').at(-2)).toBe('{"seq":4}');
    expect(replay(snapshot, log, start)).toEqual(h.runtime);
  });

  it('write only the changed fields and tasks, one line per save', () => {
    const h = sample();
    const before = h.runtime;
    h.succeed('a');
    const line = encodeDeltaRecord(7, before, h.runtime, changedTasks(before, h.runtime));
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    const json = JSON.parse(line) as { seq: number; workflow: Record<string, unknown>; tasks: Record<string, unknown> };
    expect(json.seq).toBe(7);
    expect(Object.keys(json.workflow)).toEqual(['updated_at']);
    expect(Object.keys(json.tasks).sort()).toEqual(
      ['a', 'c', 'prep/x'].filter((n) => taskState(before, n) !== taskState(h.runtime, n)).sort(),
    );
  });

  it('decode a roll record, which must be the last', () => {
    const h = sample();
    const def = h.runtime.definition;
    const to = { generation: 4, snapshot: 'state/wf1/4-ab.snapshot.json', snapshotBytes: 1234, log: 'state/wf1/4-ab.log' };
    const delta = encodeDeltaRecord(1, h.runtime, h.runtime, []);
    const records = decodeLogRecords(delta + encodeRollRecord(2, to), def);
    const expected: LogRecord[] = [
      { kind: 'delta', seq: 1, fields: {}, tasks: [] },
      { kind: 'rolled', seq: 2, ...to },
    ];
    expect(records).toEqual(expected);
    expect(
      decodeError(() => decodeLogRecords(encodeRollRecord(1, to) + encodeDeltaRecord(2, h.runtime, h.runtime, []), def)).message,
    ).toMatch(/record 1 closes the log, but 1 record\(s\) follow it/);
  });

  it('refuse a log that is cut, out of order, or names tasks the definition does not have', () => {
    const h = sample();
    const def = h.runtime.definition;
    const one = encodeDeltaRecord(1, h.runtime, h.runtime, ['a']);
    const two = encodeDeltaRecord(2, h.runtime, h.runtime, ['b']);
    expect(decodeLogRecords('', def)).toEqual([]);
    const cases: Array<[string, RegExp]> = [
      [one + two.slice(0, -5), /its last record is cut short/],
      [two, /record 1 is numbered 2: a record is missing or repeated/],
      [one + one, /record 2 is numbered 1/],
      [`${one}not json\n`, /record 2 is not JSON/],
      [`${one}[1]\n`, /record 2 is not a JSON object/],
      [one + JSON.stringify({ seq: 2, tasks: { nope: { status: 'ready' } } }) + '\n', /record 2 names a task the definition does not have/],
      [one + JSON.stringify({ seq: 2, tasks: { a: { status: 'ready', x: 1 } } }) + '\n', /record 2: tasks\["a"\] has an unknown field "x"/],
      [one + JSON.stringify({ seq: 2, workflow: { status: 'dozing' } }) + '\n', /record 2: "workflow"\."status" must be a workflow status/],
      [one + JSON.stringify({ seq: 2, extra: 1 }) + '\n', /record 2 has an unknown field "extra"/],
      [one + JSON.stringify({ seq: 2, rolled_to: { generation: 1 } }) + '\n', /record 2: rolled_to\."snapshot" must be a string/],
    ];
    for (const [bad, pattern] of cases) {
      const error = decodeError(() => decodeLogRecords(bad, def));
      expect(error.message).toMatch(/^runtime log: /);
      expect(error.message).toMatch(pattern);
    }
  });

  it('give back every runtime reached, from any snapshot and the records after it (random runs)', () => {
    const def = definition(
      [
        { name: 'r1', num_retries: 1 },
        { name: 'r2' },
        { name: 'm', depends_on: ['r1', 'r2'], dep_policy: 'any' },
        { name: 'n', depends_on: ['r1'], num_retries: 2, timeout_s: 5 },
        { name: 'z', depends_on: ['m', 'n'], dep_policy: 'all_settled' },
      ],
      { max_parallelism: 2 },
    );
    const step = fc.oneof(
      fc.record({ kind: fc.constant('complete' as const), pick: fc.nat(), success: fc.boolean() }),
      fc.record({ kind: fc.constantFrom('cancel' as const, 'retry' as const, 'sweep' as const, 'activate' as const) }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(step, fc.boolean()), { maxLength: 40 }), (steps) => {
        const h = new Harness(def);
        let snapshot = encodeSnapshot(h.runtime, META);
        let start = h.runtime;
        let log = '';
        let seq = 0;
        let previous = h.runtime;
        for (const [s, roll] of steps) {
          if (s.kind === 'complete') {
            const running = [...tasksIn(h.runtime)].filter(([, t]) => t.status === 'running').map(([n]) => n);
            const name = running[s.pick % Math.max(1, running.length)];
            if (name === undefined) continue;
            if (s.success) h.succeed(name, `{"n":${s.pick}}`);
            else h.fail(name, `exit ${s.pick}`);
          } else if (s.kind === 'sweep') {
            h.advance(3600);
            h.send({ type: 'timeout-sweep', messageTtlInMs: 1000, graceInMs: 0 });
          } else {
            h.send({ type: s.kind });
          }
          if (roll) {
            snapshot = encodeSnapshot(h.runtime, META);
            start = h.runtime;
            log = '';
            seq = 0;
          } else {
            log += encodeDeltaRecord(++seq, previous, h.runtime, changedTasks(previous, h.runtime));
          }
          previous = h.runtime;
          expect(replay(snapshot, log, start)).toEqual(h.runtime);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('apply a record in place and leave the other tasks alone', () => {
    const h = sample();
    const parts: RuntimeParts = decodeSnapshot(encodeSnapshot(h.runtime, META), h.runtime.definition, META);
    const before = [...parts.states];
    const next = reduce(h.runtime, {
      type: 'completion',
      now: at(50),
      taskName: 'c',
      attemptNo: 1,
      success: true,
      outputRef: null,
      error: null,
    }).runtime;
    const [record] = decodeLogRecords(encodeDeltaRecord(1, h.runtime, next, changedTasks(h.runtime, next)), h.runtime.definition);
    if (record?.kind !== 'delta') throw new Error('expected a delta');
    applyDeltaRecord(parts, record);
    expect(parts.states[0]).toBe(before[0]);
    expect(parts.states[2]).toEqual(taskState(next, 'c'));
    expect(parts.fields.updatedAt).toBe(at(50));
  });
});
