import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  findStashMarkers,
  isPlainFileName,
  isStashMarkerLike,
  makeStashMarker,
  parseStashMarker,
  stashBlobName,
  type StashMarker,
} from './stash-marker';
import { OUTPUT_BLOB_PREFIX, canonicalOutputBlobPath } from './output-ref';
import { md5Arb, taskNameArb, workflowIdArb } from './test-helpers/arbitraries';

const MD5 = 'ab/cd+ef/gh+ij/kl+mnoQ==';
const marker: StashMarker = { blobName: 'workflow-files/wf/t/1/model.pt', md5: MD5, size: 1234 };

describe('stashBlobName', () => {
  it('builds the blob name of one attempt', () => {
    expect(stashBlobName('wf', 'train', 1, 'model.pt')).toEqual({ ok: true, value: 'workflow-files/wf/train/1/model.pt' });
    expect(stashBlobName('wf', 'a/b', 2, '.hidden')).toEqual({ ok: true, value: 'workflow-files/wf/a/b/2/.hidden' });
    expect(stashBlobName('wf', 't', 13, '...')).toEqual({ ok: true, value: 'workflow-files/wf/t/13/...' });
  });

  it('gives every attempt its own name', () => {
    const first = stashBlobName('wf', 'train', 1, 'model.pt');
    const second = stashBlobName('wf', 'train', 2, 'model.pt');
    expect(first.ok && second.ok && first.value !== second.value).toBe(true);
  });

  it('keeps stashed files out of reach of output paths and of other workflows', () => {
    // Before files were keyed by attempt, outputs `{wf}/{task}.json` and files shared one namespace:
    // workflow "workflow-files", task "w/t/f" wrote where workflow "w", task "t" stashed "f.json".
    const stash = stashBlobName('w', 't', 1, 'f.json');
    expect(stash).toEqual({ ok: true, value: 'workflow-files/w/t/1/f.json' });
    expect(canonicalOutputBlobPath('workflow-files', 'w/t/1/f', 1)).toBe('outputs/workflow-files/w/t/1/f/1.json');
    expect(canonicalOutputBlobPath('workflow-files', 'w/t/1', 1).startsWith(OUTPUT_BLOB_PREFIX)).toBe(true);
    fc.assert(
      fc.property(
        workflowIdArb,
        taskNameArb,
        fc.integer({ min: 1, max: 1e6 }),
        workflowIdArb,
        taskNameArb,
        fc.integer({ min: 1, max: 1e6 }),
        fc.string({ minLength: 1, maxLength: 12 }),
        (wf, task, attemptNo, otherWf, otherTask, otherAttempt, file) => {
          const name = stashBlobName(wf, task, attemptNo, file);
          fc.pre(name.ok);
          if (!name.ok) return;
          // No output blob of any workflow is a stashed file.
          expect(canonicalOutputBlobPath(otherWf, otherTask, otherAttempt)).not.toBe(name.value);
          // Another (workflow, task, attempt) never gets the same name for any file.
          const other = stashBlobName(otherWf, otherTask, otherAttempt, file);
          if (other.ok && (otherWf !== wf || otherTask !== task || otherAttempt !== attemptNo)) expect(other.value).not.toBe(name.value);
        },
      ),
    );
  });

  it('returns an error for bad filenames, workflow ids, task names and attempt numbers', () => {
    for (const bad of ['', '.', '..', 'a/b', '/abs', 'dir\\file', 'line\nbreak', 'nul\u0000']) {
      const r = stashBlobName('wf', 't', 1, bad);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error).toContain('stash: filename must be a plain file name');
        expect(r.error).not.toMatch(/[\n\r]/);
      }
    }
    expect(stashBlobName('w/f', 't', 1, 'x')).toEqual({ ok: false, error: 'stash: invalid workflow id the string "w/f"' });
    expect(stashBlobName('wf', '', 1, 'x')).toEqual({ ok: false, error: 'stash: task name must be a non-empty string, got the string ""' });
    for (const attemptNo of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
      expect(stashBlobName('wf', 't', attemptNo, 'x')).toMatchObject({
        ok: false,
        error: expect.stringContaining('stash: attempt number must be an integer ≥ 1'),
      });
    }
    expect(isPlainFileName('ok.txt')).toBe(true);
    expect(isPlainFileName(3)).toBe(false);
  });
});

describe('makeStashMarker / parseStashMarker', () => {
  it('writes the exact marker JSON', () => {
    expect(JSON.stringify(makeStashMarker(marker))).toBe(
      `{"__jobq_stash__":{"v":1,"state":"ready","blob_name":"workflow-files/wf/t/1/model.pt","md5":"${MD5}","size":1234}}`,
    );
  });

  it('still reads markers written before files were keyed by attempt', () => {
    const legacy = { __jobq_stash__: { v: 1, state: 'ready', blob_name: 'workflow-files/wf/t/model.pt', md5: MD5, size: 1234 } };
    expect(parseStashMarker(legacy)).toEqual({ blobName: 'workflow-files/wf/t/model.pt', md5: MD5, size: 1234 });
  });

  it('rejects invalid markers', () => {
    expect(() => makeStashMarker({ ...marker, blobName: 'other/x' })).toThrow('workflow-files/');
    expect(() => makeStashMarker({ ...marker, md5: 'abc' })).toThrow('md5');
    expect(() => makeStashMarker({ ...marker, size: -1 })).toThrow('size');
    expect(() => makeStashMarker({ ...marker, size: 1.5 })).toThrow('size');
  });

  it('round-trips through JSON (property)', () => {
    fc.assert(
      fc.property(
        workflowIdArb,
        taskNameArb,
        fc.integer({ min: 1 }),
        fc.string({ minLength: 1, maxLength: 20 }),
        md5Arb,
        fc.nat(),
        (wf, task, attemptNo, file, md5, size) => {
          const name = stashBlobName(wf, task, attemptNo, file);
          fc.pre(name.ok);
          if (!name.ok) return;
          const m = { blobName: name.value, md5, size };
          const json: unknown = JSON.parse(JSON.stringify(makeStashMarker(m)));
          expect(parseStashMarker(json)).toEqual(m);
          expect(isStashMarkerLike(json)).toBe(true);
        },
      ),
    );
  });

  it('returns null for non-markers and malformed markers, which isStashMarkerLike still spots', () => {
    const good = makeStashMarker(marker).__jobq_stash__;
    const malformed: unknown[] = [
      { __jobq_stash__: null },
      { __jobq_stash__: { ...good, v: 2 } },
      { __jobq_stash__: { ...good, state: 'pending' } },
      { __jobq_stash__: { ...good, blob_name: 'elsewhere/x' } },
      { __jobq_stash__: { ...good, blob_name: 'workflow-files/' } },
      { __jobq_stash__: { ...good, md5: 'x' } },
      { __jobq_stash__: { ...good, size: '12' } },
      { __jobq_stash__: { ...good, extra: 1 } },
      { __jobq_stash__: { v: 1, state: 'ready', blob_name: 'workflow-files/a', md5: MD5 } },
      { __jobq_stash__: good, sibling: 1 },
    ];
    for (const value of malformed) {
      expect(parseStashMarker(value)).toBeNull();
      expect(isStashMarkerLike(value)).toBe(true);
    }
    for (const value of [null, 3, 'x', [], [makeStashMarker(marker)], { a: 1 }, { stash: good }]) {
      expect(parseStashMarker(value)).toBeNull();
      expect(isStashMarkerLike(value)).toBe(false);
    }
  });
});

describe('findStashMarkers', () => {
  it('finds a top-level marker with key null', () => {
    expect(findStashMarkers(makeStashMarker(marker))).toEqual([{ key: null, marker }]);
  });

  it('finds markers among the direct values of a top-level object', () => {
    const other: StashMarker = { blobName: 'workflow-files/wf/t/b.bin', md5: MD5, size: 0 };
    const output = {
      model: makeStashMarker(marker),
      loss: 0.5,
      nested: { deep: makeStashMarker(marker) },
      list: [makeStashMarker(marker)],
      broken: { __jobq_stash__: { v: 9 } },
      blob: makeStashMarker(other),
    };
    expect(findStashMarkers(output)).toEqual([
      { key: 'model', marker },
      { key: 'blob', marker: other },
    ]);
  });

  it('finds nothing in plain data', () => {
    expect(findStashMarkers(null)).toEqual([]);
    expect(findStashMarkers([makeStashMarker(marker)])).toEqual([]);
    expect(findStashMarkers({ a: 1 })).toEqual([]);
    expect(findStashMarkers('text')).toEqual([]);
  });
});
