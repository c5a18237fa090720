/**
 * The requests a parent process may send a child broker (`--ready-line`) on its stdin, one per
 * line, each answered by one JSON line on stdout. See README.md, "In a child process".
 */
import type { ServiceBusEmulator, ServiceBusStats } from './emulator';

/** The answer to one request line. */
export type ControlAnswer = { stats: ServiceBusStats } | { error: string };

export function answerRequest(request: string, emulator: Pick<ServiceBusEmulator, 'stats'>): ControlAnswer {
  if (request === 'stats') return { stats: emulator.stats() };
  return { error: `unknown request ${JSON.stringify(request.slice(0, 40))} on stdin (known: stats)` };
}
