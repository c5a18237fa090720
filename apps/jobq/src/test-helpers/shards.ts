import { createRequire } from 'node:module';
import { join } from 'node:path';
import { shardOf } from '@jobq/dag-core';
import type { LocalStorage } from '@jobq/local';
import { SHARD_MANIFEST_BLOB } from '@jobq/ports';
import { storeNames } from '@jobq/store-azure';

/** The first id `{base}-{i}` whose shard of `n` is `shard`. */
export function idOnShard(base: string, shard: number, n: number): string {
  for (let i = 0; ; i++) {
    const id = `${base}-${i}`;
    if (shardOf(id, n) === shard) return id;
  }
}

/** The few parts of `@azure/storage-blob` that write a blob (the CLI does not depend on the SDK itself). */
interface BlobSdk {
  BlobServiceClient: {
    fromConnectionString(text: string): {
      getContainerClient(name: string): {
        getBlockBlobClient(name: string): { upload(body: string, length: number): Promise<unknown> };
      };
    };
  };
}

/** Writes the shard manifest's text as is, behind the stores' backs (a manifest of a version this jobq does not read). */
export async function writeManifestText(azurite: LocalStorage, prefix: string, text: string): Promise<void> {
  // The SDK as a dependency of @jobq/store-azure.
  const sdk = createRequire(join(__dirname, '..', '..', '..', '..', 'packages', 'store-azure', 'package.json'))(
    '@azure/storage-blob',
  ) as BlobSdk;
  await sdk.BlobServiceClient.fromConnectionString(azurite.connectionString)
    .getContainerClient(storeNames(prefix).workflowsContainer)
    .getBlockBlobClient(SHARD_MANIFEST_BLOB)
    .upload(text, Buffer.byteLength(text));
}
