import { describe, expect, it } from '@jest/globals';
import { createRuntime, parseWorkflow, withTaskStates, type TaskRuntime } from '@jobq/dag-core';
import { FAN_OUT } from './test-helpers/storage';
import { LiveBlock, RateWindow, countsKey, frameLines, parseInterval, progressLine } from './watch-view';

function fanRuntime() {
  const parsed = parseWorkflow(FAN_OUT, { filename: 'fan.yaml' });
  if (!parsed.ok) throw new Error('bad fixture');
  return createRuntime(parsed.value, { workflowId: 'fan-1', now: '2026-01-01T00:00:00.000Z', outputsContainer: null });
}

describe('parseInterval', () => {
  it('reads ms, s, m and bare seconds; null for anything else', () => {
    expect(parseInterval('1s')).toBe(1000);
    expect(parseInterval('500ms')).toBe(500);
    expect(parseInterval('2m')).toBe(120_000);
    expect(parseInterval('1.5')).toBe(1500);
    expect(parseInterval('soon')).toBeNull();
    expect(parseInterval('-1s')).toBeNull();
  });
});

describe('frames', () => {
  it('shows the name, status, bar, counts and, with byLayer, the layers', () => {
    const runtime = fanRuntime();
    const lines = frameLines(runtime, new RateWindow(), { byLayer: true, runningShown: 5, now: Date.parse('2026-01-01T00:00:05.000Z') });
    expect(lines[0]).toBe('fan (fan-1)  pending  5s');
    expect(lines[1]).toBe(`[${'.'.repeat(50)}] 0%  0/4`);
    expect(lines.join('\n')).toMatch(/Layer\s+Total/);
    expect(progressLine(runtime, new RateWindow(), Date.parse('2026-01-01T00:00:05.000Z'))).toMatch(/^pending\s+\[\.+\]\s+0%/);
    expect(countsKey(runtime)).toBe(countsKey(fanRuntime()));
  });

  it('shows a retry waiting for its delay as such, not as running for so long', () => {
    const running = (patch: Partial<TaskRuntime>): TaskRuntime => ({
      status: 'running',
      attemptNo: 1,
      retryBase: 0,
      outputRef: null,
      error: null,
      dispatchedAt: '2026-01-01T00:00:01.000Z',
      startedAt: null,
      completedAt: null,
      awaitingInputs: false,
      retryDueAt: null,
      ...patch,
    });
    const runtime = withTaskStates(fanRuntime(), [
      ['root', { ...running({}), status: 'completed', completedAt: '2026-01-01T00:00:02.000Z' }],
      ['fan-001', running({ dispatchedAt: '2026-01-01T00:00:03.000Z' })],
      ['fan-002', running({ attemptNo: 2, dispatchedAt: '2026-01-01T00:00:03.000Z', retryDueAt: '2026-01-01T00:00:35.000Z' })],
      // Due already: the queue has delivered it, so it runs.
      ['fan-003', running({ attemptNo: 2, dispatchedAt: '2026-01-01T00:00:00.000Z', retryDueAt: '2026-01-01T00:00:02.000Z' })],
    ]);
    const lines = frameLines(runtime, new RateWindow(), { byLayer: false, runningShown: 5, now: Date.parse('2026-01-01T00:00:05.000Z') });
    expect(lines.find((l) => l.startsWith('running:'))).toBe('running: fan-001 (2s), fan-002 (retry in 30s), fan-003 (5s)');
    const placements = new Map([
      ['fan-001', 'running on box-7-abc (box) for 2s'],
      ['fan-003', 'dispatched 45s ago, waiting in queue cpu'],
    ]);
    const placed = frameLines(runtime, new RateWindow(), {
      byLayer: false,
      runningShown: 5,
      now: Date.parse('2026-01-01T00:00:05.000Z'),
      placements,
    });
    const at = placed.findIndex((l) => l.startsWith('running:'));
    expect(placed.slice(at + 1, at + 3)).toEqual([
      '  fan-001: running on box-7-abc (box) for 2s',
      '  fan-003: dispatched 45s ago, waiting in queue cpu',
    ]);
  });

  it('redraws in place on a terminal and appends elsewhere', () => {
    const written: string[] = [];
    const stream = { columns: 80, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
    const tty = new LiveBlock(stream, true);
    tty.show(['a', 'b']);
    tty.show(['c']);
    expect(written).toEqual(['a\nb\n', '\x1b[2F\x1b[Jc\n']);
    written.length = 0;
    const plain = new LiveBlock(stream, false);
    plain.show(['a']);
    plain.show(['b']);
    expect(written).toEqual(['a\n', 'b\n']);
  });
});
