// What the delta-log runtime relies on from Append Block: the service (and the embedded emulator
// the other tests run against) refuses an append whose position or ETag condition does not hold,
// and reports the block's offset and the block count. If the emulator ever stops enforcing these,
// every failure-injection test of the store would pass for the wrong reason.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { startAzurite, type LocalStorage } from '@jobq/local';

let azurite: LocalStorage;
let container: ContainerClient;

beforeAll(async () => {
  azurite = await startAzurite();
  container = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(`append${process.pid}`);
  await container.create();
});

afterAll(async () => {
  await container.deleteIfExists();
  await azurite.stop();
});

async function statusOf(promise: Promise<unknown>): Promise<{ statusCode?: number | undefined; code?: string | undefined } | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    const e = error as { statusCode?: number; code?: string; details?: { errorCode?: string } };
    return { statusCode: e.statusCode, code: e.details?.errorCode ?? e.code };
  }
}

describe('Append Block conditions (the emulator behaves as the service documents)', () => {
  it('appends at the right position and ETag, reporting the offset and the block count', async () => {
    const blob = container.getAppendBlobClient('ok.log');
    const created = await blob.create({ conditions: { ifNoneMatch: '*' } });
    const first = await blob.appendBlock('hello\n', 6, { conditions: { appendPosition: 0, ifMatch: created.etag! } });
    expect(first.blobAppendOffset).toBe('0');
    expect(first.blobCommittedBlockCount).toBe(1);
    const second = await blob.appendBlock('world\n', 6, { conditions: { appendPosition: 6, ifMatch: first.etag! } });
    expect(second.blobAppendOffset).toBe('6');
    expect(second.blobCommittedBlockCount).toBe(2);
    expect(second.etag).not.toBe(first.etag);
    const read = await blob.download();
    expect(read.contentLength).toBe(12);
    expect(read.blobCommittedBlockCount).toBe(2);
    expect(read.etag).toBe(second.etag);
    expect((await blob.downloadToBuffer()).toString()).toBe('hello\nworld\n');
  });

  it('refuses a wrong append position with 412 AppendPositionConditionNotMet, writing nothing', async () => {
    const blob = container.getAppendBlobClient('position.log');
    await blob.create();
    const first = await blob.appendBlock('abc\n', 4);
    for (const position of [0, 3, 5]) {
      expect(await statusOf(blob.appendBlock('xyz\n', 4, { conditions: { appendPosition: position } }))).toEqual({
        statusCode: 412,
        code: 'AppendPositionConditionNotMet',
      });
    }
    // The position alone, or with the current ETag, passes.
    expect(await statusOf(blob.appendBlock('def\n', 4, { conditions: { appendPosition: 4, ifMatch: first.etag! } }))).toBe('ok');
    expect((await blob.downloadToBuffer()).toString()).toBe('abc\ndef\n');
  });

  it('refuses a stale ETag with 412 ConditionNotMet even at the right position, writing nothing', async () => {
    const blob = container.getAppendBlobClient('etag.log');
    const created = await blob.create();
    const first = await blob.appendBlock('abc\n', 4, { conditions: { ifMatch: created.etag! } });
    expect(await statusOf(blob.appendBlock('xyz\n', 4, { conditions: { appendPosition: 4, ifMatch: created.etag! } }))).toEqual({
      statusCode: 412,
      code: 'ConditionNotMet',
    });
    expect(await statusOf(blob.appendBlock('xyz\n', 4, { conditions: { ifMatch: created.etag! } }))).toEqual({
      statusCode: 412,
      code: 'ConditionNotMet',
    });
    expect((await blob.getProperties()).etag).toBe(first.etag);
    expect((await blob.downloadToBuffer()).toString()).toBe('abc\n');
  });

  it('refuses a create over an existing blob with If-None-Match * (409), and an append to a missing blob (404)', async () => {
    const blob = container.getAppendBlobClient('exists.log');
    await blob.create({ conditions: { ifNoneMatch: '*' } });
    expect(await statusOf(blob.create({ conditions: { ifNoneMatch: '*' } }))).toEqual({ statusCode: 409, code: 'BlobAlreadyExists' });
    expect(
      await statusOf(container.getAppendBlobClient('missing.log').appendBlock('x\n', 2, { conditions: { appendPosition: 0 } })),
    ).toMatchObject({ statusCode: 404 });
  });

  it('reads a range of an append blob (the store checks whether its own lost append landed)', async () => {
    const blob = container.getAppendBlobClient('range.log');
    await blob.create();
    await blob.appendBlock('0123456789\n', 11);
    const part = await blob.downloadToBuffer(3, 4);
    expect(part.toString()).toBe('3456');
  });
});
