import { resolve } from 'node:path';
import { makeStashMarker, type StashMarker, type StashMarkerJson } from '@jobq/dag-core';
import type { OperationOptions, OutputStore } from '@jobq/ports';
import type { TaskStorage } from './channel-client';
import { outputStore } from './context';

/**
 * A file an upstream task stashed (docs/design.md#outputs): what a `__jobq_stash__` marker in its output
 * becomes when read through `getUpstreamOutput()`, `getUpstreamOutputs()` or `getFile()`.
 *
 * Every read checks the bytes against the marker's size and md5; a mismatch is a `JobqError` with
 * code `corrupt`, a missing blob `not-found`. `JSON.stringify` turns a handle back into its marker,
 * so an output that passes an upstream file on (`setOutput({ model: upstream.model })`) stays valid.
 */
export class StashedFile {
  /** `workflow-files/{workflow_id}/{task}/{filename}` in the outputs target. */
  readonly blobName: string;
  /** The base64 Content-MD5 of the file. */
  readonly md5: string;
  /** The size of the file in bytes. */
  readonly size: number;
  readonly #outputs: OutputStore | undefined;

  /**
   * @param marker the decoded marker (see `parseStashMarker` of `@jobq/dag-core`).
   * @param outputs the store to read from; default: the task helpers' store (`configureTaskHelpers`).
   */
  constructor(marker: StashMarker, outputs?: OutputStore) {
    this.blobName = marker.blobName;
    this.md5 = marker.md5;
    this.size = marker.size;
    this.#outputs = outputs;
  }

  /** The file name the file was stashed under (the last part of {@link blobName}). */
  get fileName(): string {
    return this.blobName.slice(this.blobName.lastIndexOf('/') + 1);
  }

  /** The decoded marker. */
  get marker(): StashMarker {
    return { blobName: this.blobName, md5: this.md5, size: this.size };
  }

  /**
   * Downloads the file to `path` (relative paths resolve against the working directory). The bytes
   * go to a temporary file next to `path` and are renamed into place only once their size and md5
   * match: `path` is never left half-written.
   */
  async downloadTo(path: string, options?: OperationOptions): Promise<void> {
    const outputs = await this.#store();
    await outputs.downloadFileTo(this.marker, resolve(path), options);
  }

  /** The bytes of the file, size and md5 checked. Prefer {@link downloadTo} for big files. */
  async readBytes(options?: OperationOptions): Promise<Uint8Array> {
    const outputs = await this.#store();
    return outputs.getFile(this.marker, options);
  }

  /** The marker JSON (`{"__jobq_stash__":{…}}`): what `JSON.stringify` writes for a handle. */
  toJSON(): StashMarkerJson {
    return makeStashMarker(this.marker);
  }

  #store(): Promise<TaskStorage> {
    return this.#outputs ? Promise.resolve(this.#outputs) : outputStore();
  }
}
