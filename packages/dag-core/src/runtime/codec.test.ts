import { describe, expect, it } from '@jest/globals';
import { sequentializeFanIn } from '../transform/fan-in';
import { decodeRuntime, encodeRuntime } from './codec';
import { Harness, decodedRuntime, definition } from './test-helpers/build';

function sample() {
  const base = definition(
    [
      { name: 'a', num_retries: 1 },
      { name: 'b' },
      { name: 'c' },
      { name: 'prep/x', depends_on: ['a', 'b', 'c'], condition: 'inputs.a.ok' },
    ],
    { max_parallelism: 5, default_task_timeout_s: 30 },
  );
  const h = new Harness(base);
  h.activate();
  h.fail('a');
  h.succeed('b', '{"v":[1,2]}');
  h.send({ type: 'cancel', requestedAt: '2026-01-01T00:10:00.000Z' });
  return h.runtime;
}

describe('encodeRuntime / decodeRuntime', () => {
  it('round-trips a runtime with outputs, errors, attempts, timestamps and a cancel', () => {
    const rt = sample();
    expect(decodedRuntime(encodeRuntime(rt))).toEqual(rt);
  });

  it('round-trips merge nodes and gates', () => {
    const t = sequentializeFanIn(
      definition([{ name: 'l0' }, { name: 'l1' }, { name: 'l2' }, { name: 'j', depends_on: ['l0', 'l1', 'l2'] }]),
      2,
    );
    if (!t.ok) throw new Error('transform failed');
    const h = new Harness(t.value);
    h.activate();
    h.succeed('l0');
    expect(decodedRuntime(encodeRuntime(h.runtime))).toEqual(h.runtime);
  });

  it('writes versioned snake_case JSON and leaves initial task fields out', () => {
    const json = JSON.parse(encodeRuntime(sample())) as Record<string, unknown>;
    expect(json.version).toBe(1);
    expect(json).toMatchObject({ workflow_id: 'wf1', cancel_requested: true, cancel_applied_at: '2026-01-01T00:10:00.000Z' });
    expect((json.tasks as Record<string, unknown>)['prep/x']).toEqual({
      status: 'cancelled',
      error: 'workflow cancelled',
      completed_at: expect.any(String),
    });
    expect((json.definition as { tasks: unknown[] }).tasks[0]).toMatchObject({ name: 'a', num_retries: 1, depends_on: [] });
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    ['not an object', '[1]', /not a JSON object/],
    ['an unknown version', JSON.stringify({ version: 2 }), /unknown format version 2/],
    ['no version', JSON.stringify({ workflow_id: 'x' }), /unknown format version undefined/],
  ])('returns %s as a clear one-line error, never throwing', (_what, text, pattern) => {
    const result = decodeRuntime(text);
    expect(result).toEqual({ ok: false, error: expect.stringMatching(/^runtime blob: /) });
    expect(result).toEqual({ ok: false, error: expect.stringMatching(pattern) });
  });

  it('rejects a blob whose tasks do not match its definition, or whose fields are malformed', () => {
    const json = JSON.parse(encodeRuntime(sample())) as {
      tasks: Record<string, unknown>;
      status: unknown;
      definition: { tasks: unknown[] };
    };
    const missing = structuredClone(json);
    delete missing.tasks.b;
    expect(() => decodedRuntime(JSON.stringify(missing))).toThrow('task "b" of the definition has no state');
    const extra = structuredClone(json);
    extra.tasks.zz = { status: 'pending' };
    expect(() => decodedRuntime(JSON.stringify(extra))).toThrow('belong to no task');
    const badStatus = structuredClone(json);
    badStatus.tasks.a = { status: 'exploded' };
    expect(() => decodedRuntime(JSON.stringify(badStatus))).toThrow('tasks["a"]."status" must be a task status');
    const badWorkflow = structuredClone(json);
    badWorkflow.status = 'sleeping';
    expect(() => decodedRuntime(JSON.stringify(badWorkflow))).toThrow('"status" must be a workflow status');
    const badDefinition = structuredClone(json);
    badDefinition.definition.tasks = [];
    expect(() => decodedRuntime(JSON.stringify(badDefinition))).toThrow(/invalid definition: tasks/);
  });
});
