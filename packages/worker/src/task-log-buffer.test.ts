import { describe, expect, it } from '@jest/globals';
import { TaskLogBuffer } from './task-log-buffer';

describe('TaskLogBuffer', () => {
  it('keeps everything while it fits', () => {
    const buffer = new TaskLogBuffer(16, 8);
    buffer.appendLine('abc');
    buffer.appendLine('defgh');
    expect(buffer.text().toString()).toBe('abc\ndefgh\n');
    expect(buffer.total).toBe(10);
  });

  it('keeps the head and the last bytes, joined by the omitted line, across ring wrap-arounds', () => {
    const buffer = new TaskLogBuffer(6, 4);
    for (const chunk of ['0123', '4567', '89ab', 'cd', 'efghij', 'k']) buffer.append(Buffer.from(chunk));
    expect(buffer.text().toString()).toBe('0123\n[jobq: 11 bytes omitted]\nfghijk');
    buffer.append(Buffer.from('0123456789')); // a chunk longer than the ring
    expect(buffer.text().toString()).toBe('0123\n[jobq: 21 bytes omitted]\n456789');
  });

  it('holds at most head + tail bytes for 50 MiB of output', () => {
    const tail = 1024 * 1024;
    const buffer = new TaskLogBuffer(tail);
    const line = `${'x'.repeat(1023)}`;
    buffer.appendLine('first line');
    for (let i = 0; i < 50 * 1024; i++) buffer.appendLine(i === 50 * 1024 - 1 ? 'last line' : line);
    expect(buffer.allocatedBytes).toBe(64 * 1024 + tail);
    const text = buffer.text().toString();
    expect(text.startsWith('first line\nxxx')).toBe(true);
    expect(text.endsWith('xxx\nlast line\n')).toBe(true);
    expect(text).toMatch(/\n\[jobq: \d+ bytes omitted\]\n/);
    expect(Buffer.byteLength(text)).toBeLessThan(64 * 1024 + tail + 64);
  });
});
