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
import { md5Arb, taskNameArb, workflowIdArb } from './test-helpers/arbitraries';

const MD5 = 'ab/cd+ef/gh+ij/kl+mnoQ==';
const marker: StashMarker = { blobName: 'workflow-files/wf/t/model.pt', md5: MD5, size: 1234 };

describe('stashBlobName', () => {
  it('builds the blob name', () => {
    expect(stashBlobName('wf', 'train', 'model.pt')).toEqual({ ok: true, value: 'workflow-files/wf/train/model.pt' });
    expect(stashBlobName('wf', 'a/b', '.hidden')).toEqual({ ok: true, value: 'workflow-files/wf/a/b/.hidden' });
    expect(stashBlobName('wf', 't', '...')).toEqual({ ok: true, value: 'workflow-files/wf/t/...' });
  });

  it('returns an error for bad filenames, workflow ids and task names', () => {
    for (const bad of ['', '.', '..', 'a/b', '/abs', 'dir\\file', 'line\nbreak', 'nul\u0000']) {
      const r = stashBlobName('wf', 't', bad);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error).toContain('stash: filename must be a plain file name');
        expect(r.error).not.toMatch(/[\n\r]/);
      }
    }
    expect(stashBlobName('w/f', 't', 'x')).toEqual({ ok: false, error: 'stash: invalid workflow id the string "w/f"' });
    expect(stashBlobName('wf', '', 'x')).toEqual({ ok: false, error: 'stash: task name must be a non-empty string, got the string ""' });
    expect(isPlainFileName('ok.txt')).toBe(true);
    expect(isPlainFileName(3)).toBe(false);
  });
});

describe('makeStashMarker / parseStashMarker', () => {
  it('writes the exact marker JSON', () => {
    expect(JSON.stringify(makeStashMarker(marker))).toBe(
      `{"__jobq_stash__":{"v":1,"state":"ready","blob_name":"workflow-files/wf/t/model.pt","md5":"${MD5}","size":1234}}`,
    );
  });

  it('rejects invalid markers', () => {
    expect(() => makeStashMarker({ ...marker, blobName: 'other/x' })).toThrow('workflow-files/');
    expect(() => makeStashMarker({ ...marker, md5: 'abc' })).toThrow('md5');
    expect(() => makeStashMarker({ ...marker, size: -1 })).toThrow('size');
    expect(() => makeStashMarker({ ...marker, size: 1.5 })).toThrow('size');
  });

  it('round-trips through JSON (property)', () => {
    fc.assert(
      fc.property(workflowIdArb, taskNameArb, fc.string({ minLength: 1, maxLength: 20 }), md5Arb, fc.nat(), (wf, task, file, md5, size) => {
        const name = stashBlobName(wf, task, file);
        fc.pre(name.ok);
        if (!name.ok) return;
        const m = { blobName: name.value, md5, size };
        const json: unknown = JSON.parse(JSON.stringify(makeStashMarker(m)));
        expect(parseStashMarker(json)).toEqual(m);
        expect(isStashMarkerLike(json)).toBe(true);
      }),
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
