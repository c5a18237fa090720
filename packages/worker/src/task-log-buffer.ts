/** Bytes of a task's output kept from its start (docs/observability.md#task-logs). */
export const TASK_LOG_HEAD_BYTES = 64 * 1024;
/** Default of `JOBQ_TASK_LOG_TAIL_BYTES`: the last bytes of a task's output kept. */
export const DEFAULT_TASK_LOG_TAIL_BYTES = 1024 * 1024;

/**
 * What one attempt printed, in bounded memory: the first {@link TASK_LOG_HEAD_BYTES} bytes and a
 * ring of the last `tailBytes`; {@link text} joins them with a `[jobq: N bytes omitted]` line when
 * bytes fell out in between. Memory grows with the output up to `headBytes + tailBytes`, never more.
 */
export class TaskLogBuffer {
  private head: Buffer | null = null;
  private headLength = 0;
  private ring: Buffer | null = null;
  /** Next write position in the ring, and how much of it holds bytes. */
  private ringPos = 0;
  private ringLength = 0;
  private totalBytes = 0;

  constructor(
    readonly tailBytes: number = DEFAULT_TASK_LOG_TAIL_BYTES,
    readonly headBytes: number = TASK_LOG_HEAD_BYTES,
  ) {}

  /** Bytes printed in all. */
  get total(): number {
    return this.totalBytes;
  }

  /** Bytes this buffer holds allocated (head and ring). */
  get allocatedBytes(): number {
    return (this.head?.byteLength ?? 0) + (this.ring?.byteLength ?? 0);
  }

  append(chunk: Buffer): void {
    this.totalBytes += chunk.byteLength;
    let rest = chunk;
    if (this.headLength < this.headBytes) {
      this.head ??= Buffer.allocUnsafe(this.headBytes);
      const n = Math.min(rest.byteLength, this.headBytes - this.headLength);
      rest.copy(this.head, this.headLength, 0, n);
      this.headLength += n;
      rest = rest.subarray(n);
    }
    if (rest.byteLength === 0 || this.tailBytes === 0) return;
    this.ring ??= Buffer.allocUnsafe(this.tailBytes);
    if (rest.byteLength >= this.tailBytes) {
      rest.copy(this.ring, 0, rest.byteLength - this.tailBytes);
      this.ringPos = 0;
      this.ringLength = this.tailBytes;
      return;
    }
    const first = Math.min(rest.byteLength, this.tailBytes - this.ringPos);
    rest.copy(this.ring, this.ringPos, 0, first);
    rest.copy(this.ring, 0, first);
    this.ringPos = (this.ringPos + rest.byteLength) % this.tailBytes;
    this.ringLength = Math.min(this.tailBytes, this.ringLength + rest.byteLength);
  }

  /** Appends one line and its newline. */
  appendLine(line: string): void {
    this.append(Buffer.from(`${line}\n`, 'utf8'));
  }

  /** The log as stored: head, then (when bytes were dropped) the omitted line, then the tail. */
  text(): Buffer {
    const parts: Buffer[] = [];
    if (this.head) parts.push(this.head.subarray(0, this.headLength));
    const omitted = this.totalBytes - this.headLength - this.ringLength;
    if (omitted > 0)
      parts.push(
        Buffer.from(
          `${this.headLength > 0 && this.head?.[this.headLength - 1] !== 0x0a ? '\n' : ''}[jobq: ${omitted} bytes omitted]\n`,
          'utf8',
        ),
      );
    if (this.ring && this.ringLength > 0) {
      if (this.ringLength < this.tailBytes) parts.push(this.ring.subarray(0, this.ringLength));
      else parts.push(this.ring.subarray(this.ringPos), this.ring.subarray(0, this.ringPos));
    }
    return Buffer.concat(parts);
  }
}
