import { request, type ClientRequest } from 'node:http';

/** One answer, read whole. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The bytes as they came (a gzipped answer). */
  raw: Buffer;
}

/** A raw request to the dashboard (any method, any Host header), read whole. */
export function get(url: string, options: { method?: string; host?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers: { ...(options.host !== undefined ? { Host: options.host } : {}), ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The answer's JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read what they check
export function json<T = any>(answer: Answer): T {
  return JSON.parse(answer.body) as T;
}

/** One server-sent event. */
export interface SseEvent {
  event: string;
  id: string | null;
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read what they check
}

/** An open event stream: events as they arrive. */
export class SseClient {
  readonly events: SseEvent[] = [];
  status = 0;
  private buffer = '';
  private waiters: Array<() => void> = [];
  private req!: ClientRequest;
  readonly opened: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}) {
    const target = new URL(url);
    this.opened = new Promise((resolve, reject) => {
      this.req = request(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          headers: { Accept: 'text/event-stream', ...headers },
        },
        (res) => {
          this.status = res.statusCode ?? 0;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => this.feed(chunk));
          res.on('error', () => undefined);
          resolve();
        },
      );
      this.req.on('error', reject);
      this.req.end();
    });
  }

  private feed(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      let id: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) this.events.push({ event, id, data: JSON.parse(data.join('\n')) });
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Waits (for data on the socket, never for time) until `count` events have arrived. */
  async waitFor(count: number): Promise<SseEvent> {
    while (this.events.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.events[count - 1]!;
  }

  close(): void {
    this.req.destroy();
  }
}

/** Lets I/O callbacks run until `condition` holds (a bounded number of turns; no timers). */
export async function until(condition: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns && !condition(); i++) await new Promise<void>((resolve) => setImmediate(resolve));
  if (!condition()) throw new Error('condition not reached');
}
