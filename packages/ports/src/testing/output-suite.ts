import { afterEach, describe, expect, it } from './jest-globals';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeStashMarker, parseStashMarker, type CompactUpstreamRefs, type StashMarker } from '@jobq/dag-core/wire';
import { isJobqError } from '../errors';
import type { OutputStore } from '../output-store';
import type { TaskLogMetadata } from '../task-log';

/** A fresh output store for one test, optional fault-injection hooks, and how to dispose of it. */
export interface OutputStoreFixture {
  store: OutputStore;
  /**
   * Replaces the content of a stored blob behind the store's back (same size, different bytes),
   * keeping its stored md5: `target` is a blob output ref or a stash marker. Tests that need it
   * are skipped when absent.
   */
  corrupt?: (target: string | StashMarker) => Promise<void>;
  /** Makes every upload fail (as an unreachable service would) until {@link restoreUploads}. */
  breakUploads?: () => void;
  restoreUploads?: () => void;
  dispose(): Promise<void>;
}

/** Options of {@link describeOutputStoreContract}. */
export interface OutputStoreContractOptions {
  /** Per-test timeout. */
  timeoutInMs?: number;
}

function md5(bytes: Uint8Array | string): string {
  return createHash('md5').update(bytes).digest('base64');
}

/** A JSON string literal of exactly `bytes` UTF-8 bytes (`bytes` ≥ 2), made of `char`s plus ASCII padding. */
function jsonOfBytes(bytes: number, char = 'a'): string {
  const charBytes = Buffer.byteLength(char, 'utf8');
  const body = bytes - 2;
  const count = Math.floor(body / charBytes);
  return `"${char.repeat(count)}${'x'.repeat(body - count * charBytes)}"`;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isJobqError(error) ? error.code : `not a JobqError: ${String(error)}`;
  }
  return 'no error';
}

async function errorOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isJobqError(error)) return { code: error.code, message: error.message };
    return { code: `not a JobqError: ${String(error)}`, message: '' };
  }
  return { code: 'no error', message: '' };
}

/**
 * The contract of {@link OutputStore} (docs/design.md#task-message, docs/design.md#outputs), as jest tests. Every adapter runs it
 * with a factory that opens a store on fresh (or shared but unique-per-test) storage; workflow ids
 * are random per test. Fault-injection tests run only when the fixture offers the hook.
 */
export function describeOutputStoreContract(
  label: string,
  open: () => Promise<OutputStoreFixture>,
  options: OutputStoreContractOptions = {},
): void {
  describe(`OutputStore contract: ${label}`, () => {
    let fixture: OutputStoreFixture | undefined;
    const fresh = async (): Promise<OutputStoreFixture> => {
      fixture = await open();
      return fixture;
    };
    afterEach(async () => {
      fixture?.restoreUploads?.();
      await fixture?.dispose();
      fixture = undefined;
    });
    const timeout = options.timeoutInMs ?? 30_000;
    const wf = (): string => `wf-${randomUUID()}`;

    /** Registers a test that needs fixture hooks; it passes trivially (with a note) when the fixture lacks them. */
    const withHooks = (
      name: string,
      needs: ReadonlyArray<'corrupt' | 'breakUploads'>,
      body: (f: OutputStoreFixture) => Promise<void>,
    ): void => {
      it(
        name,
        async () => {
          const f = await fresh();
          if (needs.some((hook) => f[hook] === undefined)) return;
          await body(f);
        },
        timeout,
      );
    };

    describe('outputs', () => {
      it(
        'keeps a small output inline: the ref is the text itself and reads back as its value',
        async () => {
          const { store } = await fresh();
          const text = '{"answer":42,"name":"ü ✓ 😀","list":[1,null,true]}';
          const result = await store.putOutput(wf(), 'small', 1, text);
          expect(result).toEqual({ ref: text, placement: 'inline', bytes: Buffer.byteLength(text, 'utf8') });
          expect(await store.getOutput(result.ref)).toEqual({ answer: 42, name: 'ü ✓ 😀', list: [1, null, true] });
          // Scalars are outputs too.
          for (const scalar of ['0', 'null', 'false', '"x"', ' [1] \n']) {
            const r = await store.putOutput(wf(), 'scalar', 1, scalar);
            expect(r.ref).toBe(scalar);
            expect(await store.getOutput(r.ref)).toEqual(JSON.parse(scalar));
          }
        },
        timeout,
      );

      it(
        'uploads a 33 KiB output to the blob of its attempt; the ref carries the md5 and reads back',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const value = { rows: Array.from({ length: 1_100 }, (_, i) => ({ i, text: 'row-data-0123456789' })) };
          const text = JSON.stringify(value);
          expect(Buffer.byteLength(text)).toBeGreaterThan(33 * 1024);
          const result = await store.putOutput(id, 'big', 2, text);
          expect(result.placement).toBe('blob');
          expect(result.warning).toBeUndefined();
          expect(result.adopted).toBeUndefined();
          expect(result.bytes).toBe(Buffer.byteLength(text));
          expect(result.ref).toBe(`blob:${store.outputsContainer}/outputs/${id}/big/2.json:${md5(text)}`);
          expect(await store.getOutput(result.ref)).toEqual(value);
          // The compact form (no md5) reads back too, verified against the stored Content-MD5.
          expect(await store.getOutput(`blob:${store.outputsContainer}/outputs/${id}/big/2.json`)).toEqual(value);
        },
        timeout,
      );

      it(
        'puts exactly 32 768 UTF-8 bytes inline and 32 769 in a blob, counting multi-byte characters as UTF-8',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const cases: Array<[string, string, 'inline' | 'blob']> = [
            ['ascii-at', jsonOfBytes(32_768), 'inline'],
            ['ascii-over', jsonOfBytes(32_769), 'blob'],
            ['two-byte-at', jsonOfBytes(32_768, 'é'), 'inline'],
            ['two-byte-over', jsonOfBytes(32_769, 'é'), 'blob'],
            ['four-byte-over', jsonOfBytes(32_770, '😀'), 'blob'],
            // 11 000 characters, 33 002 bytes: over the limit only when counted as UTF-8.
            ['three-byte', `"${'€'.repeat(11_000)}"`, 'blob'],
          ];
          for (const [task, text, placement] of cases) {
            const result = await store.putOutput(id, task, 1, text);
            expect([task, result.placement, result.bytes]).toEqual([task, placement, Buffer.byteLength(text, 'utf8')]);
            expect(await store.getOutput(result.ref)).toBe(JSON.parse(text));
          }
        },
        timeout,
      );

      it(
        'lets fitsInline decide instead of the 32 KiB rule',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const seen: string[] = [];
          const big = jsonOfBytes(40_000);
          const inline = await store.putOutput(id, 'fits', 1, big, { fitsInline: (json) => (seen.push(json), true) });
          expect(inline).toEqual({ ref: big, placement: 'inline', bytes: 40_000 });
          expect(seen).toEqual([big]);
          const small = '{"tiny":true}';
          const blob = await store.putOutput(id, 'does-not-fit', 1, small, { fitsInline: () => false });
          expect(blob).toEqual({
            ref: `blob:${store.outputsContainer}/outputs/${id}/does-not-fit/1.json:${md5(small)}`,
            placement: 'blob',
            bytes: small.length,
          });
          expect(await store.getOutput(blob.ref)).toEqual({ tiny: true });
          // No output needs no decision.
          expect(await store.putOutput(id, 'empty', 1, ' ', { fitsInline: () => false })).toEqual({
            ref: null,
            placement: 'none',
            bytes: 0,
          });
        },
        timeout,
      );

      it(
        'refuses an output that is not JSON with invalid-argument carrying the parser error',
        async () => {
          const { store } = await fresh();
          for (const text of ['{"a":', "{'a':1}", 'NaN', 'undefined', '{"a":1} trailing']) {
            const { code, message } = await errorOf(store.putOutput(wf(), 'bad', 1, text));
            expect([text, code]).toEqual([text, 'invalid-argument']);
            expect(message).toMatch(/not valid JSON: \S/);
          }
          // Also when big (it is checked before any upload).
          expect(await codeOf(store.putOutput(wf(), 'bad', 1, `[${'1,'.repeat(40_000)}`))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'treats an empty (or whitespace-only) output as no output: a null ref, which reads back as null',
        async () => {
          const { store } = await fresh();
          for (const text of ['', ' ', '\n', ' \t\r\n']) {
            expect(await store.putOutput(wf(), 'empty', 1, text)).toEqual({ ref: null, placement: 'none', bytes: 0 });
          }
          expect(await store.getOutput(null)).toBeNull();
        },
        timeout,
      );

      it(
        "gives a later attempt its own blob and leaves the earlier attempt's blob and ref as they were",
        async () => {
          const { store } = await fresh();
          const id = wf();
          const first = await store.putOutput(id, 'again', 1, jsonOfBytes(40_000));
          const second = await store.putOutput(id, 'again', 2, jsonOfBytes(40_000, 'b'));
          expect(first.ref).toBe(`blob:${store.outputsContainer}/outputs/${id}/again/1.json:${md5(jsonOfBytes(40_000))}`);
          expect(second.ref).toBe(`blob:${store.outputsContainer}/outputs/${id}/again/2.json:${md5(jsonOfBytes(40_000, 'b'))}`);
          expect(await store.getOutput(second.ref)).toBe(JSON.parse(jsonOfBytes(40_000, 'b')));
          expect(await store.getOutput(first.ref)).toBe(JSON.parse(jsonOfBytes(40_000)));
          expect(await store.getOutput(`blob:${store.outputsContainer}/outputs/${id}/again/1.json`)).toBe(JSON.parse(jsonOfBytes(40_000)));
        },
        timeout,
      );

      it(
        "keeps the first blob of an attempt: a second delivery of the same attempt gets the first one's ref, and a child reads the first bytes",
        async () => {
          const { store } = await fresh();
          const id = wf();
          const firstText = jsonOfBytes(40_000);
          const first = await store.putOutput(id, 'twice', 1, firstText);
          // The same attempt delivered again (the message came back after its lock was lost) wrote something else.
          for (const laterText of [jsonOfBytes(50_000, 'b'), jsonOfBytes(40_000, 'c')]) {
            const later = await store.putOutput(id, 'twice', 1, laterText);
            expect(later).toEqual({ ref: first.ref, placement: 'blob', bytes: 40_000, adopted: true });
          }
          expect(await store.getOutput(first.ref)).toBe(JSON.parse(firstText));
          // The compact form a child gets (no md5) reads the same bytes.
          expect(await store.getOutput(`blob:${store.outputsContainer}/outputs/${id}/twice/1.json`)).toBe(JSON.parse(firstText));
          // A delivery whose output is small enough to travel inline is not affected.
          expect(await store.putOutput(id, 'twice', 1, '{"small":1}')).toMatchObject({ ref: '{"small":1}', placement: 'inline' });
        },
        timeout,
      );

      it(
        'gives two concurrent deliveries of one attempt the same ref, naming one of their outputs',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const texts = [jsonOfBytes(40_000), jsonOfBytes(60_000, 'b')];
          const results = await Promise.all(texts.map((text) => store.putOutput(id, 'race', 1, text)));
          expect(results[0]!.ref).toBe(results[1]!.ref);
          expect(results.filter((r) => r.adopted === true)).toHaveLength(1);
          const value = await store.getOutput(results[0]!.ref);
          expect(texts.map((t) => JSON.parse(t) as unknown)).toContain(value);
          expect(results[0]!.ref).toBe(`blob:${store.outputsContainer}/outputs/${id}/race/1.json:${md5(JSON.stringify(value))}`);
        },
        timeout,
      );

      it(
        'stores outputs of task names with "/" under nested paths, apart from every stashed file',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const text = jsonOfBytes(40_000);
          const result = await store.putOutput(id, 'stage/one', 3, text);
          expect(result.ref).toBe(`blob:${store.outputsContainer}/outputs/${id}/stage/one/3.json:${md5(text)}`);
          expect(await store.getOutput(result.ref)).toBe(JSON.parse(text));
        },
        timeout,
      );

      it(
        'refuses workflow ids, task names and attempt numbers that cannot make a safe blob path',
        async () => {
          const { store } = await fresh();
          const text = jsonOfBytes(40_000);
          for (const [id, task, attemptNo] of [
            ['a/b', 't', 1],
            ['..', 't', 1],
            ['', 't', 1],
            [wf(), '', 1],
            [wf(), '../escape', 1],
            [wf(), 'a/./b', 1],
            [wf(), 't', 0],
            [wf(), 't', 1.5],
            [wf(), 't', -1],
          ] as const) {
            expect([id, task, attemptNo, await codeOf(store.putOutput(id, task, attemptNo, text))]).toEqual([
              id,
              task,
              attemptNo,
              'invalid-argument',
            ]);
          }
        },
        timeout,
      );

      it(
        'refuses refs it cannot or may not follow with invalid-argument, and a missing blob with not-found',
        async () => {
          const { store } = await fresh();
          for (const ref of [
            'blob:',
            'blob:x',
            'blob:Upper-Case/a.json',
            's3://bucket/key',
            'hello world',
            'blob:jobq-foreign-container-x9/a.json',
          ]) {
            expect([ref, await codeOf(store.getOutput(ref))]).toEqual([ref, 'invalid-argument']);
          }
          expect(await codeOf(store.getOutput(`blob:${store.outputsContainer}/../other/x.json`))).toBe('invalid-argument');
          expect(await codeOf(store.getOutput(`blob:${store.outputsContainer}/outputs/${wf()}/missing/1.json`))).toBe('not-found');
          expect(await codeOf(store.getOutput(`blob:${store.outputsContainer}/outputs/${wf()}/missing/1.json:${md5('x')}`))).toBe(
            'not-found',
          );
        },
        timeout,
      );

      withHooks(
        'reports corrupt when a blob output no longer matches its md5 (ref form and compact form)',
        ['corrupt'],
        async ({ store, corrupt }) => {
          const id = wf();
          const result = await store.putOutput(id, 'damaged', 1, jsonOfBytes(40_000));
          await corrupt!(result.ref!);
          const { code, message } = await errorOf(store.getOutput(result.ref));
          expect(code).toBe('corrupt');
          expect(message).toContain(`outputs/${id}/damaged/1.json`);
          expect(await codeOf(store.getOutput(`blob:${store.outputsContainer}/outputs/${id}/damaged/1.json`))).toBe('corrupt');
        },
      );

      withHooks(
        'falls back to inline with a warning when a 100 KiB output cannot be uploaded',
        ['breakUploads'],
        async ({ store, breakUploads }) => {
          breakUploads!();
          const text = jsonOfBytes(100 * 1024);
          const result = await store.putOutput(wf(), 'fallback', 1, text);
          expect(result.placement).toBe('inline-fallback');
          expect(result.ref).toBe(text);
          expect(result.warning).toMatch(/102400 bytes.*could not be uploaded.*inline/);
          expect(await store.getOutput(result.ref)).toBe(JSON.parse(text));
        },
      );

      withHooks('never falls back to inline when fitsInline refused the output', ['breakUploads'], async ({ store, breakUploads }) => {
        breakUploads!();
        const { code, message } = await errorOf(store.putOutput(wf(), 'no-room', 1, jsonOfBytes(1_000), { fitsInline: () => false }));
        expect(code).not.toBe('no error');
        expect(code).not.toMatch(/^not a JobqError/);
        expect(message).toMatch(/1000 bytes: it could not be uploaded .* does not fit in the completion message/);
      });

      withHooks(
        'fails clearly (size and the 500 KiB limit) when a 600 KiB output cannot be uploaded',
        ['breakUploads'],
        async ({ store, breakUploads }) => {
          breakUploads!();
          const text = jsonOfBytes(600 * 1024);
          const { code, message } = await errorOf(store.putOutput(wf(), 'too-big', 1, text));
          expect(code).not.toBe('no error');
          expect(code).not.toMatch(/^not a JobqError/);
          expect(message).toMatch(/614400 bytes/);
          expect(message).toMatch(/could not be uploaded/);
          expect(message).toMatch(/500 KiB/);
        },
      );

      it(
        'falls back at exactly 512 000 bytes but not one byte more',
        async () => {
          const f = await fresh();
          if (!f.breakUploads) return;
          f.breakUploads();
          expect((await f.store.putOutput(wf(), 'edge', 1, jsonOfBytes(512_000))).placement).toBe('inline-fallback');
          expect(await codeOf(f.store.putOutput(wf(), 'edge', 1, jsonOfBytes(512_001)))).not.toBe('no error');
        },
        timeout,
      );
    });

    describe('purge', () => {
      it(
        "deletes a workflow's output blobs and stashed files, and only that workflow's (a, never a.b)",
        async () => {
          const { store } = await fresh();
          const base = wf();
          const ids = [base, `${base}.b`, `${base}-x`, `${base}b`];
          const kept = new Map<string, { ref: string; marker: StashMarker }>();
          for (const id of ids) {
            const put = await store.putOutput(id, 'make', 1, jsonOfBytes(40_000));
            expect(put.placement).toBe('blob');
            const marker = await store.putFile(id, 'make', 1, 'model.bin', Buffer.from(`the model of ${id}`));
            kept.set(id, { ref: put.ref ?? '', marker });
          }
          const second = await store.putOutput(base, 'make', 2, jsonOfBytes(40_000));
          expect(await store.deleteWorkflowOutputs(base)).toBe(3);
          expect(await codeOf(store.getOutput(kept.get(base)!.ref))).toBe('not-found');
          expect(await codeOf(store.getOutput(second.ref))).toBe('not-found');
          expect(await codeOf(store.getFile(kept.get(base)!.marker))).toBe('not-found');
          for (const id of ids.slice(1)) {
            const { ref, marker } = kept.get(id)!;
            expect(await store.getOutput(ref)).toBe(JSON.parse(jsonOfBytes(40_000)));
            expect(Buffer.from(await store.getFile(marker)).toString()).toBe(`the model of ${id}`);
          }
          // Again, and for a workflow that never had outputs: nothing to delete.
          expect(await store.deleteWorkflowOutputs(base)).toBe(0);
          expect(await store.deleteWorkflowOutputs(wf())).toBe(0);
          expect(await codeOf(store.deleteWorkflowOutputs('a/b'))).toBe('invalid-argument');
          expect(await codeOf(store.deleteWorkflowOutputs(''))).toBe('invalid-argument');
        },
        timeout,
      );
    });

    describe('stashed files', () => {
      it(
        'round-trips binary bytes (zero bytes included) with md5, size and the blob name of docs/design.md#outputs',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const data = new Uint8Array(70_000);
          for (let i = 0; i < data.length; i++) data[i] = (i * 31) % 256;
          data.fill(0, 100, 5_000);
          const marker = await store.putFile(id, 'make', 1, 'model.bin', data);
          expect(marker).toEqual({ blobName: `workflow-files/${id}/make/1/model.bin`, md5: md5(data), size: data.length });
          // The marker is the one of the wire format.
          expect(parseStashMarker(makeStashMarker(marker))).toEqual(marker);
          expect(Buffer.from(await store.getFile(marker)).equals(Buffer.from(data))).toBe(true);

          const empty = await store.putFile(id, 'make', 1, 'empty.txt', new Uint8Array(0));
          expect(empty).toEqual({ blobName: `workflow-files/${id}/make/1/empty.txt`, md5: md5(''), size: 0 });
          expect((await store.getFile(empty)).length).toBe(0);
        },
        timeout,
      );

      it(
        'keeps the files of each attempt apart',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const first = await store.putFile(id, 'train', 1, 'model.bin', Buffer.from('first attempt'));
          const second = await store.putFile(id, 'train', 2, 'model.bin', Buffer.from('second attempt'));
          expect([first.blobName, second.blobName]).toEqual([
            `workflow-files/${id}/train/1/model.bin`,
            `workflow-files/${id}/train/2/model.bin`,
          ]);
          expect(Buffer.from(await store.getFile(first)).toString()).toBe('first attempt');
          expect(Buffer.from(await store.getFile(second)).toString()).toBe('second attempt');
        },
        timeout,
      );

      it(
        "lets no workflow id or task name write over another workflow's stashed files",
        async () => {
          const { store } = await fresh();
          // Workflow "w", task "t" stashes "f.json"; a workflow named "workflow-files" with a task
          // "w/t/1/f" (any attempt) then stores an output. They must not meet.
          const victim = `w${randomUUID().slice(0, 8)}`;
          const marker = await store.putFile(victim, 't', 1, 'f.json', Buffer.from('{"mine":true}'));
          for (const task of [`${victim}/t/1/f`, `${victim}/t/f`]) {
            const output = await store.putOutput('workflow-files', task, 1, jsonOfBytes(40_000), { fitsInline: () => false });
            expect(output.ref).toBe(`blob:${store.outputsContainer}/outputs/workflow-files/${task}/1.json:${md5(jsonOfBytes(40_000))}`);
            const file = await store.putFile('workflow-files', task, 1, 'x', Buffer.from('other'));
            expect(file.blobName).toBe(`workflow-files/workflow-files/${task}/1/x`);
          }
          expect(Buffer.from(await store.getFile(marker)).toString()).toBe('{"mine":true}');
        },
        timeout,
      );

      it(
        'stashes from a path and downloads to a path, with nothing left beside the destination',
        async () => {
          const { store } = await fresh();
          const dir = await mkdtemp(join(tmpdir(), 'jobq-stash-'));
          try {
            const id = wf();
            const source = join(dir, 'source.dat');
            const content = Buffer.alloc(300_000);
            for (let i = 0; i < content.length; i++) content[i] = (i * 7 + 3) % 256;
            await writeFile(source, content);
            const marker = await store.putFileFromPath(id, 'task/with/slashes', 4, 'data.dat', source);
            expect(marker).toEqual({
              blobName: `workflow-files/${id}/task/with/slashes/4/data.dat`,
              md5: md5(content),
              size: content.length,
            });
            const dest = join(dir, 'dest.dat');
            await store.downloadFileTo(marker, dest);
            expect((await readFile(dest)).equals(content)).toBe(true);
            // Over an existing file too.
            await writeFile(dest, 'old');
            await store.downloadFileTo(marker, dest);
            expect((await readFile(dest)).equals(content)).toBe(true);
            expect((await readdir(dir)).sort()).toEqual(['dest.dat', 'source.dat']);
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        },
        timeout,
      );

      it(
        'refuses file names that are not plain names',
        async () => {
          const { store } = await fresh();
          for (const filename of ['a/b', '..', '.', '', 'a\\b', 'nl\nx']) {
            expect([filename, await codeOf(store.putFile(wf(), 't', 1, filename, new Uint8Array([1])))]).toEqual([
              filename,
              'invalid-argument',
            ]);
          }
          expect(await codeOf(store.putFile(wf(), 't', 0, 'f.bin', new Uint8Array([1])))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'reports not-found for a marker whose blob does not exist, and refuses a malformed marker',
        async () => {
          const { store } = await fresh();
          const marker = { blobName: `workflow-files/${wf()}/t/1/none.bin`, md5: md5('x'), size: 1 };
          expect(await codeOf(store.getFile(marker))).toBe('not-found');
          expect(await codeOf(store.getFile({ blobName: 'elsewhere/x', md5: md5('x'), size: 1 }))).toBe('invalid-argument');
          expect(await codeOf(store.getFile({ blobName: 'workflow-files/../x', md5: md5('x'), size: 1 }))).toBe('invalid-argument');
        },
        timeout,
      );

      it(
        'reports corrupt when the marker does not match the stored file (size or md5)',
        async () => {
          const { store } = await fresh();
          const marker = await store.putFile(wf(), 't', 1, 'f.bin', new Uint8Array([1, 2, 3]));
          expect(await codeOf(store.getFile({ ...marker, size: 4 }))).toBe('corrupt');
          expect(await codeOf(store.getFile({ ...marker, md5: md5('other') }))).toBe('corrupt');
        },
        timeout,
      );

      withHooks('never leaves a partial file when a download fails verification', ['corrupt'], async ({ store, corrupt }) => {
        const dir = await mkdtemp(join(tmpdir(), 'jobq-stash-'));
        try {
          const data = new Uint8Array(200_000).fill(7);
          const marker = await store.putFile(wf(), 't', 1, 'f.bin', data);
          await corrupt!(marker);
          expect(await codeOf(store.getFile(marker))).toBe('corrupt');
          const dest = join(dir, 'out.bin');
          expect(await codeOf(store.downloadFileTo(marker, dest))).toBe('corrupt');
          expect(await readdir(dir)).toEqual([]);
          // An existing destination is left as it was.
          await writeFile(dest, 'keep me');
          expect(await codeOf(store.downloadFileTo(marker, dest))).toBe('corrupt');
          expect(await readFile(dest, 'utf8')).toBe('keep me');
          expect(await readdir(dir)).toEqual(['out.bin']);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    });

    describe('upstream overflow', () => {
      it(
        'round-trips compact refs through the overflow blob of docs/design.md#task-message',
        async () => {
          const { store } = await fresh();
          const id = wf();
          const compact: CompactUpstreamRefs = {
            s: { '1': Array.from({ length: 3_000 }, (_, i) => `parent-${i}`), '2': ['retried'] },
            i: { small: '{"a":1}', elsewhere: 'blob:other-container/x.json' },
            n: ['skipped'],
          };
          const location = await store.putUpstreamOverflow(id, 'fan/in', 2, compact);
          expect(location).toMatch(new RegExp(`^[a-z0-9-]{3,63}/upstream/${id}/fan/in/2\\.json$`));
          expect(await store.getUpstreamOverflow(location)).toEqual(compact);
          // Empty sections are dropped.
          const loc2 = await store.putUpstreamOverflow(id, 'lonely', 1, { s: {}, n: ['p'] });
          expect(await store.getUpstreamOverflow(loc2)).toEqual({ n: ['p'] });
          // An overflow blob in the form older coordinators wrote (a list of parents at the legacy path) reads back as it is.
          const loc3 = await store.putUpstreamOverflow(id, 'old', 1, { s: ['a', 'b'] });
          expect(await store.getUpstreamOverflow(loc3)).toEqual({ s: ['a', 'b'] });
        },
        timeout,
      );

      it(
        'refuses bad arguments and locations, and reports a missing overflow blob as not-found',
        async () => {
          const { store } = await fresh();
          const id = wf();
          expect(await codeOf(store.putUpstreamOverflow(id, 't', 0, { n: ['p'] }))).toBe('invalid-argument');
          expect(await codeOf(store.putUpstreamOverflow('a/b', 't', 1, { n: ['p'] }))).toBe('invalid-argument');
          const location = await store.putUpstreamOverflow(id, 't', 1, { n: ['p'] });
          const container = location.slice(0, location.indexOf('/'));
          expect(await codeOf(store.getUpstreamOverflow('no-slash'))).toBe('invalid-argument');
          expect(await codeOf(store.getUpstreamOverflow('jobq-foreign-container-x9/upstream/a/t/1.json'))).toBe('invalid-argument');
          expect(await codeOf(store.getUpstreamOverflow(`${container}/upstream/../../x`))).toBe('invalid-argument');
          expect(await codeOf(store.getUpstreamOverflow(`${container}/upstream/${id}/t/2.json`))).toBe('not-found');
        },
        timeout,
      );
    });

    describe('task logs', () => {
      const meta = (outcome: 'live' | 'succeeded' | 'failed', bytes: number): TaskLogMetadata => ({
        outcome,
        exitCode: outcome === 'failed' ? 3 : outcome === 'live' ? null : 0,
        started: '2026-01-02T03:04:05.000Z',
        ended: outcome === 'live' ? null : '2026-01-02T03:04:06.000Z',
        bytes,
        worker: 'host-1-ab',
      });
      const text = (value: string): Uint8Array => new Uint8Array(Buffer.from(value, 'utf8'));

      it(
        'stores an attempt log with its metadata, rewrites it, and reads ranges and If-None-Match',
        async () => {
          const { store } = await fresh();
          const id = wf();
          expect(await store.getTaskLog(id, 'prep', 1)).toBeNull();
          await store.putTaskLog(id, 'prep', 1, text('line 1\n'), meta('live', 7));
          const live = await store.getTaskLog(id, 'prep', 1);
          expect(live).toMatchObject({ notModified: false, size: 7, metadata: meta('live', 7) });
          if (live === null || live.notModified) throw new Error('expected a log');
          expect(Buffer.from(live.bytes).toString()).toBe('line 1\n');
          expect(await store.getTaskLog(id, 'prep', 1, { ifNoneMatch: live.etag })).toEqual({ notModified: true, etag: live.etag });
          await store.putTaskLog(id, 'prep', 1, text('line 1\nline 2 ü\n'), meta('failed', 17));
          const done = await store.getTaskLog(id, 'prep', 1, { ifNoneMatch: live.etag, offset: 7 });
          if (done === null || done.notModified) throw new Error('expected a changed log');
          expect(done.etag).not.toBe(live.etag);
          expect(Buffer.from(done.bytes).toString()).toBe('line 2 ü\n');
          expect(done).toMatchObject({ size: 17, metadata: meta('failed', 17) });
          const range = await store.getTaskLog(id, 'prep', 1, { offset: 5, count: 3 });
          expect(range !== null && !range.notModified && Buffer.from(range.bytes).toString()).toBe('1\nl');
          const past = await store.getTaskLog(id, 'prep', 1, { offset: 17 });
          expect(past !== null && !past.notModified && [past.bytes.byteLength, past.size]).toEqual([0, 17]);
        },
        timeout,
      );

      it(
        'lists the logs of a workflow, and of one task only its own: task "a" never lists "a/b"',
        async () => {
          const { store } = await fresh();
          const id = wf();
          await store.putTaskLog(id, 'a', 1, text('x'), meta('failed', 1));
          await store.putTaskLog(id, 'a', 2, text('xy'), meta('succeeded', 2));
          await store.putTaskLog(id, 'a/b', 1, text('abc'), meta('succeeded', 3));
          await store.putTaskLog(id, 'ab', 1, text('abcd'), meta('succeeded', 4));
          await store.putTaskLog(`${id}x`, 'a', 1, text('other'), meta('succeeded', 5));
          const all = await store.listTaskLogs(id);
          expect(all.map((e) => [e.taskName, e.attemptNo, e.size])).toEqual([
            ['a', 1, 1],
            ['a', 2, 2],
            ['a/b', 1, 3],
            ['ab', 1, 4],
          ]);
          expect(all[0]?.metadata).toEqual(meta('failed', 1));
          expect((await store.listTaskLogs(id, 'a')).map((e) => e.attemptNo)).toEqual([1, 2]);
          expect((await store.listTaskLogs(id, 'a/b')).map((e) => [e.taskName, e.attemptNo])).toEqual([['a/b', 1]]);
          expect(await store.listTaskLogs(id, 'none')).toEqual([]);
          expect(await store.listTaskLogs(wf())).toEqual([]);
          const b = await store.getTaskLog(id, 'a/b', 1);
          expect(b !== null && !b.notModified && Buffer.from(b.bytes).toString()).toBe('abc');
          // Purging the workflow removes its logs.
          expect(await store.deleteWorkflowOutputs(id)).toBe(4);
          expect(await store.listTaskLogs(id)).toEqual([]);
        },
        timeout,
      );

      it(
        'refuses bad arguments',
        async () => {
          const { store } = await fresh();
          expect(await codeOf(store.putTaskLog('a/b', 't', 1, text('x'), meta('failed', 1)))).toBe('invalid-argument');
          expect(await codeOf(store.putTaskLog(wf(), 't', 0, text('x'), meta('failed', 1)))).toBe('invalid-argument');
          expect(await codeOf(store.putTaskLog(wf(), '../t', 1, text('x'), meta('failed', 1)))).toBe('invalid-argument');
          expect(await codeOf(store.getTaskLog(wf(), '', 1))).toBe('invalid-argument');
        },
        timeout,
      );
    });
  });
}
