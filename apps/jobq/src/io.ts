import { parseDurationInMs } from '@jobq/worker';
import { UsageError } from './errors';

/** Everything on stdin as text (empty when stdin is a terminal: nothing was piped in). */
export async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** A duration flag (`30`, `500ms`, `10s`, `5m`, `1h`) in ms; a malformed one is a usage error naming the flag. */
export function durationFlag(text: string, flag: string): number {
  try {
    return parseDurationInMs(text, flag);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}
