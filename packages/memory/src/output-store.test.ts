import { describe, expect, it } from '@jest/globals';
import { isJobqError } from '@jobq/ports';
import { describeOutputStoreContract } from '@jobq/ports/testing';
import { MemoryOutputStore } from './output-store';

describeOutputStoreContract('in memory', () => {
  const store = new MemoryOutputStore();
  return Promise.resolve({
    store,
    corrupt: (target) => store.corrupt(target),
    breakUploads: () => store.breakUploads(),
    restoreUploads: () => store.restoreUploads(),
    dispose: () => Promise.resolve(),
  });
});

describe('MemoryOutputStore specifics', () => {
  it('names its own containers in refs and overflow locations, and follows no other', async () => {
    const store = new MemoryOutputStore({ outputsContainer: 'p-outputs', workflowsContainer: 'p-workflows' });
    const big = JSON.stringify({ pad: 'x'.repeat(40_000) });
    const put = await store.putOutput('wf', 'a', 1, big);
    expect(put.ref).toMatch(/^blob:p-outputs\/outputs\/wf\/a\/1\.json:/);
    expect(await store.putUpstreamOverflow('wf', 'b', 1, { n: ['a'] })).toBe('p-workflows/upstream/wf/b/1.json');
    expect(store.blobCount).toBe(2);
    let caught: unknown;
    try {
      await store.getOutput('blob:q-outputs/outputs/wf/a/1.json');
    } catch (error) {
      caught = error;
    }
    expect(isJobqError(caught, 'invalid-argument')).toBe(true);
    expect(() => new MemoryOutputStore({ outputsContainer: 'Bad_Name' })).toThrow(/not a container name/);
  });

  it("deletes a workflow's outputs, stashed files and task logs, never another's, and its overflow blobs only through deleteStateBlobs", async () => {
    const store = new MemoryOutputStore();
    const big = JSON.stringify({ pad: 'x'.repeat(40_000) });
    for (const id of ['a', 'a.b', 'ab']) {
      await store.putOutput(id, 't', 1, big);
      await store.putFile(id, 't', 1, 'f.bin', new Uint8Array([1]));
      store.writeBlob(store.outputsContainer, `workflow-logs/${id}/t/1.log`, Buffer.from('log'));
      await store.putUpstreamOverflow(id, 't', 1, { n: ['s'] });
    }
    store.writeBlob(store.outputsContainer, 'workflow-logs/a', Buffer.from('not a folder of a'));
    expect(store.blobCount).toBe(13);
    expect(await store.deleteWorkflowOutputs('a')).toBe(3);
    expect(await store.deleteWorkflowOutputs('a')).toBe(0);
    expect(store.blobCount).toBe(10);
    expect(store.deleteStateBlobs('a')).toBe(1);
    expect(store.deleteStateBlobs('a')).toBe(0);
    expect(await store.getUpstreamOverflow(`${store.workflowsContainer}/upstream/a.b/t/1.json`)).toEqual({ n: ['s'] });
    expect(
      Buffer.from(await store.getFile({ blobName: 'workflow-files/ab/t/1/f.bin', md5: 'VaVACK0bpYmqIQ0mKcHfQQ==', size: 1 })).length,
    ).toBe(1);
    expect(store.blobCount).toBe(9);
    expect(() => store.deleteStateBlobs('../a')).toThrow(/not a workflow id/);
    expect(() => store.writeBlob('elsewhere', 'x/y', new Uint8Array())).toThrow(/not one of this store's containers/);
  });

  it('keeps a copy of stashed bytes: the caller may reuse its buffer', async () => {
    const store = new MemoryOutputStore();
    const data = new Uint8Array([1, 2, 3]);
    const marker = await store.putFile('wf', 't', 1, 'f.bin', data);
    data[0] = 9;
    expect([...(await store.getFile(marker))]).toEqual([1, 2, 3]);
  });
});
