import type { TaskStatus } from '@jobq/dag-core';
import { countsLine } from './format';

/** Counts of tasks by status, in lifecycle order, zeros left out: `running 1 · completed 2`. */
export function formatCounts(counts: Partial<Record<TaskStatus, number>>): string {
  return countsLine(counts, ' · ');
}

/**
 * Live progress on a stream (stderr): one line per change, or a single line redrawn in place when
 * the stream is a terminal. Log lines written through {@link log} clear the status line first.
 */
export class ProgressReporter {
  private current = '';
  private shown = false;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly redraw: boolean = process.stderr.isTTY,
  ) {}

  /** Shows a status line; nothing happens when it did not change. */
  update(line: string): void {
    if (line === this.current) return;
    this.current = line;
    if (this.redraw) {
      this.stream.write(`\r\x1b[K${line}`);
      this.shown = true;
    } else {
      this.stream.write(`${line}\n`);
    }
  }

  /** Writes a log line without garbling the status line. */
  log(line: string): void {
    if (this.redraw && this.shown) {
      this.stream.write(`\r\x1b[K${line}\n${this.current}`);
    } else {
      this.stream.write(`${line}\n`);
    }
  }

  /** Ends the status line (a newline after a redrawn line). */
  done(): void {
    if (this.redraw && this.shown) this.stream.write('\n');
    this.shown = false;
  }
}
